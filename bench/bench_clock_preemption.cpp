// Does reading the thread CPU clock move preemptions into the requests that
// read it? Short "requests" (a fixed integer loop, ~0.5 µs) with as much
// work between them; 1 in 10 reads the CPU clock at its start and end, as a
// sampled request does. Each mode counts the requests that stalled (wall >
// 100 µs: the thread was preempted inside) among the sampled and the others.
// Without reads the two rates are equal; if a read is where a due preemption
// happens, the sampled rate is far higher. Modes: no reads, inferprof's
// thread_cpu_ns() (CLOCK_THREAD_CPUTIME_ID), a perf_event task clock read.
//
//   taskset -c 1 sh -c 'while :; do :; done' &   # a busy process on the same core
//   taskset -c 1 build/bench/bench_clock_preemption [iterations=3000000]; kill %1
//
// (docs/limitations.md has the figures.)
#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "inferprof/timing.hpp"

namespace {

using inferprof::Nanos;

int open_task_clock() {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  return static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
}

enum class Mode { none, clock_gettime, perf };

std::uint64_t spin(std::uint64_t x) {
  for (int k = 0; k < 300; ++k)
    x = x * 6364136223846793005ull + 1;
  return x;
}

void run(Mode mode, long n, int perf_fd) {
  constexpr int kEvery = 10;
  constexpr Nanos kStall = 100'000;
  auto read_cpu = [&]() -> Nanos {
    if (mode == Mode::clock_gettime) return inferprof::thread_cpu_ns();
    std::uint64_t v = 0;
    if (read(perf_fd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) std::abort();
    return static_cast<Nanos>(v);
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
                     : mode == Mode::clock_gettime ? "thread_cpu_ns"
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
  const int fd = open_task_clock();
  if (fd < 0) fmt::print("perf_event_open failed ({}): perf mode skipped\n", std::strerror(errno));
  for (int round = 0; round < 2; ++round) {
    run(Mode::none, n, fd);
    run(Mode::clock_gettime, n, fd);
    if (fd >= 0) run(Mode::perf, n, fd);
  }
  return 0;
}
