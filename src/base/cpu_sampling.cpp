// Which requests read the thread CPU clock (timing.hpp, CpuSampling).
#include <algorithm>
#include <array>
#include <cmath>

#include "inferprof/timing.hpp"

namespace inferprof {

bool CpuSampling::wants(std::uint64_t seq) const noexcept {
  if (every <= 1) return true;
  // splitmix64: a request's position says nothing about whether it is
  // sampled, so a trace that repeats with some period is not aliased.
  std::uint64_t x = seq + 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x % every == 0;
}

double measure_cpu_clock_read_ns() {
  constexpr int kBatch = 32;
  std::array<double, 7> batches{};
  for (double& b : batches) {
    const Nanos t0 = now_ns();
    for (int i = 0; i < kBatch; ++i)
      (void)thread_cpu_ns();
    b = static_cast<double>(now_ns() - t0) / kBatch;
  }
  // The median: a batch that was descheduled midway says nothing about a read.
  std::nth_element(batches.begin(), batches.begin() + batches.size() / 2, batches.end());
  return batches[batches.size() / 2];
}

std::uint32_t cpu_sample_every(double read_ns, int reads, Nanos request_ns) {
  if (request_ns <= 0 || read_ns <= 0 || reads <= 0) return 1;
  const double every = std::ceil(read_ns * reads / (kCpuClockBudget * static_cast<double>(request_ns)));
  return static_cast<std::uint32_t>(std::clamp(every, 1.0, static_cast<double>(kMaxCpuSampleEvery)));
}

}  // namespace inferprof
