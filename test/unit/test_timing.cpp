#include <doctest/doctest.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>

#include "inferprof/error.hpp"
#include "inferprof/timing.hpp"

using namespace inferprof;

TEST_SUITE("timing") {
  TEST_CASE("stage names are pre-interned at their enum values") {
    auto& names = NameTable::global();
    for (std::size_t i = 0; i < kStageCount; ++i)
      CHECK(names.name(static_cast<std::uint32_t>(i)) == kStageNames[i]);
    CHECK(names.name(kRequestNameId) == "request");
    CHECK(names.intern("compute") == name_id(Stage::compute));
    auto id = names.intern("aten::addmm");
    CHECK(names.intern("aten::addmm") == id);
    CHECK(names.name(id) == "aten::addmm");
  }

  TEST_CASE("finish() computes queue and overhead from the recorded stages") {
    RequestRecord r;
    r.arrival = 1000;
    r.start = 1500;
    auto input = r.add(name_id(Stage::input), -1, 1500, 100);
    auto compute = r.add(name_id(Stage::compute), -1, 1600, 700);
    r.add(NameTable::global().intern("aten::linear"), compute, 1610, 600);
    (void)input;
    r.end = 2400;
    r.finish();
    CHECK(r.stage[static_cast<std::size_t>(Stage::queue)] == 500);
    CHECK(r.stage[static_cast<std::size_t>(Stage::input)] == 100);
    // Child spans do not add to their stage twice.
    CHECK(r.stage[static_cast<std::size_t>(Stage::compute)] == 700);
    CHECK(r.total() == 1400);
    CHECK(r.stage[static_cast<std::size_t>(Stage::overhead)] == 1400 - 500 - 100 - 700);
    // The queue wait is a span too (for trace.json), with no parent.
    CHECK(r.spans.back().name == name_id(Stage::queue));
    CHECK(r.spans.back().parent == -1);
  }

  TEST_CASE("closed loop: arrival defaults to start, no queue span") {
    RequestRecord r;
    r.start = 100;
    r.add(name_id(Stage::compute), -1, 100, 50);
    r.end = 200;
    r.finish();
    CHECK(r.arrival == 100);
    CHECK(r.stage[static_cast<std::size_t>(Stage::queue)] == 0);
    CHECK(r.spans.size() == 1);
    CHECK(r.stage[static_cast<std::size_t>(Stage::overhead)] == 50);
  }

  TEST_CASE("ScopedSpan measures real time and reset() keeps nothing") {
    RequestRecord r;
    {
      ScopedSpan s(r, Stage::preprocess);
      ScopedSpan child(r, NameTable::global().intern("scale"), s.index());
    }
    REQUIRE(r.spans.size() == 2);
    CHECK(r.spans[1].parent == 0);
    CHECK(r.spans[0].dur >= r.spans[1].dur);
    CHECK(r.stage[static_cast<std::size_t>(Stage::preprocess)] == r.spans[0].dur);
    r.reset();
    CHECK(r.spans.empty());
    CHECK(r.stage[static_cast<std::size_t>(Stage::preprocess)] == 0);
    CHECK(r.cache_outcome == CacheOutcome::none);
  }

  TEST_CASE("errors carry their exit code and file:line prefix") {
    Error e = bad_input(at_line("requests.jsonl", 5, "malformed JSON"));
    CHECK(e.exit_code() == 2);
    CHECK(std::string(e.what()) == "requests.jsonl:5: malformed JSON");
    CHECK(runtime_failure("x").exit_code() == 3);
  }

  TEST_CASE("the thread CPU clock agrees with CLOCK_THREAD_CPUTIME_ID, per thread, and starts over in a forked child") {
    auto cputime = [] {
      timespec ts{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return static_cast<Nanos>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    };
    auto spin_cpu = [&](Nanos ns) {  // until this thread has run `ns` more, by the reference clock
      const Nanos until = cputime() + ns;
      volatile std::uint64_t x = 0;
      while (cputime() < until)
        x = x + 1;
    };
    const std::string name = thread_cpu_clock_name();
    CHECK((name == "perf task clock" || name == "CLOCK_THREAD_CPUTIME_ID"));
    const Nanos a0 = thread_cpu_ns(), r0 = cputime();
    spin_cpu(20'000'000);
    const Nanos a1 = thread_cpu_ns(), r1 = cputime();
    CHECK(a0 > 0);
    // The same interval by both clocks: within 1 ms (the two reads are not simultaneous).
    CHECK(std::llabs((a1 - a0) - (r1 - r0)) < 1'000'000);
    // Another thread has its own clock: this one's spinning does not show there.
    Nanos other = -1;
    std::thread([&] {
      const Nanos t0 = thread_cpu_ns();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      other = thread_cpu_ns() - t0;
    }).join();
    CHECK(other >= 0);
    CHECK(other < 5'000'000);
    // A forked child reads its own CPU time, not the parent's thread's (which waits meanwhile).
    const pid_t pid = fork();
    if (pid == 0) {
      const Nanos c0 = thread_cpu_ns();
      spin_cpu(20'000'000);
      const Nanos used = thread_cpu_ns() - c0;
      _exit(used >= 19'000'000 && used < 200'000'000 ? 0 : 1);
    }
    REQUIRE(pid > 0);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }

  // Bounds that hold however loaded the machine is: the busy loop spins until
  // its own CPU clock has advanced, and a sleeping thread burns next to none.
  TEST_CASE("spans record thread CPU time: a busy loop uses it, a sleep does not") {
    RequestRecord r;
    r.begin();
    {
      ScopedSpan busy(r, Stage::compute);
      const Nanos until = thread_cpu_ns() + 5'000'000;
      volatile std::uint64_t x = 0;
      while (thread_cpu_ns() < until)
        x = x + 1;
    }
    {
      ScopedSpan idle(r, Stage::input);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    r.finish();
    const Span& busy = r.spans[0];
    const Span& idle = r.spans[1];
    CHECK(busy.cpu >= 5'000'000);
    CHECK(busy.cpu <= busy.dur + 100'000);  // CPU time never exceeds wall (clock granularity aside)
    CHECK(idle.dur >= 30'000'000);
    CHECK(idle.cpu < 5'000'000);
    CHECK(r.stage_cpu[static_cast<std::size_t>(Stage::compute)] == busy.cpu);
    CHECK(r.stage_cpu[static_cast<std::size_t>(Stage::input)] == idle.cpu);
    CHECK(r.cpu_total() >= busy.cpu + idle.cpu);
    CHECK(r.cpu_total() <= r.total() + 100'000);
    CHECK(r.stage_cpu[static_cast<std::size_t>(Stage::queue)] == 0);
    // Spans added after the fact (GPU) and spans inside a stage (ops) carry none.
    CHECK(r.spans[r.add(name_id(Stage::d2h), -1, r.start, 10)].cpu == -1);
    const std::int32_t op = r.open(NameTable::global().intern("aten::mm"), 0);
    r.close(op);
    CHECK(r.spans[static_cast<std::size_t>(op)].cpu == -1);
  }

  // A stand-in for what a loaded VM does at random: time charged to the thread
  // while it runs no code of ours (interrupts, the hypervisor pausing the vCPU).
  // A SIGPROF handler spinning 40 µs is exactly that, and a pending signal is
  // delivered on the way back from a system call -- such as a CPU clock read,
  // just before the wall clock read beside it. Without bracketing each CPU read
  // by wall clock reads that stall moved into the next stage (CPU 83 µs in a
  // 3 µs stage in CI); with it every stage keeps its CPU time within its wall.
  TEST_CASE("time charged to the thread beside a CPU clock read stays in one stage: CPU never exceeds wall") {
    static volatile sig_atomic_t delivered = 0;
    struct sigaction sa {};
    sa.sa_handler = [](int) {
      delivered = delivered + 1;
      timespec t0{}, t{};
      clock_gettime(CLOCK_MONOTONIC, &t0);
      do
        clock_gettime(CLOCK_MONOTONIC, &t);
      while ((t.tv_sec - t0.tv_sec) * 1'000'000'000L + (t.tv_nsec - t0.tv_nsec) < 40'000);
    };
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    struct sigaction old {};
    REQUIRE(sigaction(SIGPROF, &sa, &old) == 0);
    itimerval every{{0, 300}, {0, 300}};
    REQUIRE(setitimer(ITIMER_PROF, &every, nullptr) == 0);

    int over = 0, requests = 0;
    Nanos worst = 0;
    // The timer counts the process's CPU time: on a loaded machine 300 stalls take longer.
    const Nanos until = now_ns() + 20'000'000'000;
    while (now_ns() < until && delivered < 300) {
      RequestRecord r;
      r.begin();
      for (Stage s : {Stage::input, Stage::preprocess, Stage::compute}) {
        ScopedSpan span(r, s);
        volatile int x = 0;
        for (int i = 0; i < 200; ++i)
          x = x + i;
      }
      r.finish();
      ++requests;
      for (std::size_t i = 0; i < kStageCount; ++i) {
        const Nanos excess = r.stage_cpu[i] - r.stage[i];
        worst = std::max(worst, excess);
        // The bracket allows 5 µs, a reused read 1 µs more.
        if (excess > 10'000) ++over;
      }
    }
    itimerval off{};
    setitimer(ITIMER_PROF, &off, nullptr);
    sigaction(SIGPROF, &old, nullptr);
    INFO("requests " << requests << ", stalls " << delivered << ", worst excess " << worst << " ns");
    CHECK(delivered >= 200);  // the stalls happened, so the check below had something to catch
    // Unbracketed, 0.3% of requests went over (1 in 333); bracketed, CI still saw one stage 12-14 µs over
    // in 66,000-130,000 requests (cause not found): at most 1 in 20,000 still catches the old fault.
    CHECK(over <= 1 + requests / 20'000);
  }

  TEST_CASE("a record without begin() measures no CPU time") {
    RequestRecord r;
    r.start = 100;
    r.add(name_id(Stage::compute), -1, 100, 50);
    r.end = 200;
    r.finish();
    CHECK_FALSE(r.cpu_measured());
    CHECK(r.cpu_total() == 0);
    CHECK(r.stage_cpu[static_cast<std::size_t>(Stage::overhead)] == 0);
  }

  TEST_CASE("a request begun without CPU time reads no CPU clock: its stages carry wall time only") {
    RequestRecord r;
    r.begin(false);
    {
      ScopedSpan compute(r, Stage::compute);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    r.finish();
    CHECK_FALSE(r.cpu_measured());
    CHECK(r.spans[0].cpu == -1);
    CHECK(r.stage[static_cast<std::size_t>(Stage::compute)] >= 1'000'000);
    CHECK(r.stage_cpu[static_cast<std::size_t>(Stage::compute)] == 0);
    CHECK(r.cpu_total() == 0);
  }

  TEST_CASE("CPU sampling: 1 in N requests by a hash of the position, the same ones every time") {
    CpuSampling all;
    CHECK(all.wants(0));
    CHECK(all.wants(12345));
    CpuSampling s;
    s.every = 10;
    std::uint64_t sampled = 0, runs = 0, longest = 0;
    for (std::uint64_t seq = 0; seq < 100000; ++seq) {
      const bool w = s.wants(seq);
      CHECK(w == s.wants(seq));  // deterministic: lockstep lanes and reruns agree
      sampled += w;
      runs = w ? 0 : runs + 1;
      longest = std::max(longest, runs);
    }
    CHECK(sampled > 9500);  // 1 in 10 within 5%
    CHECK(sampled < 10500);
    CHECK(longest > 10);  // not a stride: a trace repeating every N requests is not aliased
    // Every 10th request is not the rule: seq 0, 10, 20, ... are not all sampled.
    int strided = 0;
    for (std::uint64_t seq = 0; seq < 1000; seq += 10)
      strided += s.wants(seq);
    CHECK(strided < 30);
  }

  TEST_CASE("CPU sampling's rule: reads cost at most 1% of a request, from what one read costs") {
    // A VM's 500 ns read, 4 reads a request: a 13 µs MLP samples 1 in 16; a 2 ms CNN every request.
    CHECK(cpu_sample_every(500, 4, 13'000) == 16);
    CHECK(cpu_sample_every(500, 4, 2'000'000) == 1);
    // Bare metal's 60 ns read: the MLP 1 in 2.
    CHECK(cpu_sample_every(60, 4, 13'000) == 2);
    CHECK(cpu_sample_every(500, 4, 1) == kMaxCpuSampleEvery);
    CHECK(cpu_sample_every(500, 4, 0) == 1);  // no warm-up to go by: every request
    CHECK(measure_cpu_clock_read_ns() > 0);
  }
}
