// Does reading the thread CPU clock move preemptions into the requests that
// read it? Short "requests" (a fixed integer loop, ~0.5 µs) with as much
// work between them; 1 in 10 reads the CPU clock at its start and end, as a
// sampled request does. Each mode counts the requests that stalled (wall >
// 100 µs: the thread was preempted inside) among the sampled and the others.
// Without reads the two rates are equal; if a read is where a due preemption
// happens, the sampled rate is far higher. Modes: no reads,
// CLOCK_THREAD_CPUTIME_ID, and inferprof's thread_cpu_ns() (a perf_event task
// clock where the kernel allows one; cpu_clock.cpp).
//
//   taskset -c 1 sh -c 'while :; do :; done' &   # a busy process on the same core
//   taskset -c 1 build/bench/bench_clock_preemption [iterations=3000000]; kill %1
//
// (docs/limitations.md has the figures.)
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "inferprof/timing.hpp"

namespace {

using inferprof::Nanos;

enum class Mode { none, clock_gettime, perf };

std::uint64_t spin(std::uint64_t x) {
  for (int k = 0; k < 300; ++k)
    x = x * 6364136223846793005ull + 1;
  return x;
}

void run(Mode mode, long n) {
  constexpr int kEvery = 10;
  constexpr Nanos kStall = 100'000;
  auto read_cpu = [&]() -> Nanos {
    if (mode == Mode::perf) return inferprof::thread_cpu_ns();
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<Nanos>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  };
  volatile std::uint64_t sink = 0;
  long stalled[2] = {0, 0}, count[2] = {0, 0};
  Nanos total = 0;
  for (long i = 0; i < n; ++i) {
    const bool sampled = mode != Mode::none && i % kEvery == 0;
    const Nanos t0 = inferprof::now_ns();
    Nanos c0 = 0;
    if (sampled) c0 = read_cpu();
    std::uint64_t x = spin(static_cast<std::uint64_t>(i));
    if (sampled) sink = sink + static_cast<std::uint64_t>(read_cpu() - c0);
    const Nanos dur = inferprof::now_ns() - t0;
    sink = sink + spin(x);  // the driver's own work between requests
    total += dur;
    const int k = i % kEvery == 0 ? 0 : 1;
    ++count[k];
    if (dur > kStall) ++stalled[k];
  }
  const char* name = mode == Mode::none            ? "no reads"
                     : mode == Mode::clock_gettime ? "CLOCK_THREAD_CPU"
                                                   : "perf task clock";
  fmt::print(
      "{:<16} mean {:6.3f} µs · stalled (>100 µs): every 10th {:>5}/{} ({:.3f}%), the others {:>5}/{} ({:.3f}%)\n",
      name, static_cast<double>(total) / 1e3 / static_cast<double>(n), stalled[0], count[0],
      100.0 * static_cast<double>(stalled[0]) / static_cast<double>(count[0]), stalled[1], count[1],
      100.0 * static_cast<double>(stalled[1]) / static_cast<double>(count[1]));
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 3'000'000;
  const bool perf = std::strcmp(inferprof::thread_cpu_clock_name(), "perf task clock") == 0;
  if (!perf) fmt::print("no perf_event task clock here: perf mode skipped\n");
  for (int round = 0; round < 2; ++round) {
    run(Mode::none, n);
    run(Mode::clock_gettime, n);
    if (perf) run(Mode::perf, n);
  }
  return 0;
}
