// thread_cpu_ns (timing.hpp): the thread's CPU time from a perf_event task
// clock, else from CLOCK_THREAD_CPUTIME_ID.
//
// Why not CLOCK_THREAD_CPUTIME_ID alone: reading it brings the scheduler's
// accounting of the running thread up to date, and on current kernels (EEVDF)
// that is where a preemption already due takes place. Under load the requests
// that read it then absorb the preemptions that would have fallen between
// requests: bench_clock_preemption, 0.5 µs requests beside a busy process,
// stalls in ~0.5% of the reading requests and 0.000% of the others (0.01%
// each without reads). Reading a task clock through perf_event, at the same
// cost, is ~5x less prone to it (`run --caches l1 --cpu-sample 10`, MLP, both
// cores busy: 0.03-0.10% of the sampled requests stalled against 0.40-0.58%).
#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include "inferprof/timing.hpp"

namespace inferprof {

namespace {

Nanos clock_thread_cputime() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<Nanos>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// One per thread: the counter counts the thread that opened it, from then on,
// so its readings are offset by the thread's CPU time at that moment.
struct TaskClock {
  int fd = -2;  // -2: not tried yet; -1: unavailable, CLOCK_THREAD_CPUTIME_ID instead
  Nanos base = 0;
  ~TaskClock() {
    if (fd >= 0) close(fd);
  }
  void open_once() noexcept {
    base = clock_thread_cputime();
    if (const char* c = std::getenv("INFERPROF_CPU_CLOCK"); c != nullptr && std::strcmp(c, "thread") == 0) {
      fd = -1;
      return;
    }
    perf_event_attr a;
    std::memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    fd = static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0) fd = -1;
  }
};
thread_local TaskClock task_clock;

// A forked child's only thread inherits the parent thread's descriptor, which
// counts the parent's thread: it starts over.
void reset_in_child() noexcept {
  if (task_clock.fd >= 0) close(task_clock.fd);
  task_clock.fd = -2;
}

}  // namespace

Nanos thread_cpu_ns() noexcept {
  static std::once_flag at_fork;
  if (task_clock.fd == -2) {
    std::call_once(at_fork, [] { pthread_atfork(nullptr, nullptr, reset_in_child); });
    task_clock.open_once();
  }
  if (task_clock.fd >= 0) {
    std::uint64_t ns = 0;
    if (read(task_clock.fd, &ns, sizeof ns) == static_cast<ssize_t>(sizeof ns))
      return task_clock.base + static_cast<Nanos>(ns) + 1;  // + 1: never 0, which means "not measured"
  }
  return clock_thread_cputime();
}

const char* thread_cpu_clock_name() noexcept {
  (void)thread_cpu_ns();
  return task_clock.fd >= 0 ? "perf task clock" : "CLOCK_THREAD_CPUTIME_ID";
}

}  // namespace inferprof
