// probe_machine_speed (timing.hpp): a fixed piece of work timed in thread CPU
// time, so that `diff` can tell a machine that slowed down from code that did.
//
// Why: on shared VMs a core's speed changes for seconds at a time (a neighbour
// on the host, frequency): three runs of identical code used 90% more thread
// CPU time than the three before them, a REGRESSION no interval over requests
// or runs could rule out. Thread CPU time includes such slowness (the guest
// charges the thread while the host holds the vCPU), so the same clock times
// a fixed workload at the start and end of every run. The fastest of several
// tries: a busy machine (other processes taking turns on the core, evicting
// the walk's cache lines) slows some tries, a slower machine slows them all.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "inferprof/timing.hpp"

namespace inferprof {

namespace {

// 1 Mi 32-bit slots (4 MiB): past a core's private caches, so the chase
// below measures the shared cache and memory a neighbour competes for.
constexpr std::uint32_t kSlots = 1u << 20;
constexpr int kChaseSteps = 20'000;
constexpr int kChainSteps = 200'000;

// One cycle through every slot in a fixed pseudo-random order (Sattolo's
// algorithm, xorshift64 with a fixed seed): each read depends on the one
// before, so the hardware cannot run ahead.
std::vector<std::uint32_t> make_chase_cycle() {
  std::vector<std::uint32_t> next(kSlots);
  for (std::uint32_t i = 0; i < kSlots; ++i)
    next[i] = i;
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (std::uint32_t i = kSlots - 1; i > 0; --i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::swap(next[i], next[static_cast<std::uint32_t>(x % i)]);
  }
  return next;
}

volatile double chain_sink = 0;
volatile std::uint32_t chase_sink = 0;

// A dependent multiply-add chain: the core's arithmetic speed, no memory.
Nanos time_chain() {
  const Nanos t0 = thread_cpu_ns();
  double a = 1.0000001, b = 0.9999999;
  for (int i = 0; i < kChainSteps; ++i)
    a = a * b + 1e-9;
  chain_sink = a;
  return thread_cpu_ns() - t0;
}

Nanos time_chase(const std::vector<std::uint32_t>& next) {
  const Nanos t0 = thread_cpu_ns();
  std::uint32_t at = 0;
  for (int i = 0; i < kChaseSteps; ++i)
    at = next[at];
  chase_sink = at;
  return thread_cpu_ns() - t0;
}

double fastest_us(const std::vector<Nanos>& v) {
  return static_cast<double>(*std::min_element(v.begin(), v.end())) / 1e3;
}

}  // namespace

SpeedProbe probe_machine_speed(int repetitions) {
  static const std::vector<std::uint32_t> next = make_chase_cycle();  // built once, on the first probe
  repetitions = std::max(1, repetitions);
  std::vector<Nanos> chain, chase;
  (void)time_chase(next);  // bring the walk's pages and TLB entries in: the first pass measures page faults
  for (int i = 0; i < repetitions; ++i) {
    chain.push_back(time_chain());
    chase.push_back(time_chase(next));
  }
  return SpeedProbe{fastest_us(chain), fastest_us(chase)};
}

}  // namespace inferprof
