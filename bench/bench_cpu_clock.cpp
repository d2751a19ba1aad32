// What thread CPU time costs: one read of each clock, and the span recording of
// an MLP-shaped request (input, preprocess with one step, compute; the request
// root) as `run` records it, against the same request recorded with wall clocks
// only (how spans were recorded before CPU time). Read the CPU column: it is
// the benchmark thread's own time, so other processes on the cores do not
// inflate it the way they inflate wall time.
//
//   build/bench/bench_cpu_clock [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include "inferprof/timing.hpp"

namespace {

using namespace inferprof;

void BM_SteadyClockRead(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(now_ns());
}
BENCHMARK(BM_SteadyClockRead);

void BM_ThreadCpuClockRead(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(thread_cpu_ns());
}
BENCHMARK(BM_ThreadCpuClockRead);

const std::uint32_t kStep = NameTable::global().intern("to_float");

// As `run` records it: begin(), three stage spans (CPU and wall), one child
// span (wall), finish().
void BM_RequestSpansWithCpu(benchmark::State& state) {
  RequestRecord r;
  for (auto _ : state) {
    r.reset();
    r.begin();
    { ScopedSpan input(r, Stage::input); }
    {
      ScopedSpan pre(r, Stage::preprocess);
      ScopedSpan step(r, kStep, pre.index());
    }
    { ScopedSpan compute(r, Stage::compute); }
    r.finish();
    benchmark::DoNotOptimize(r.spans.data());
  }
}
BENCHMARK(BM_RequestSpansWithCpu);

// The same spans from wall clock reads only (add() takes no CPU clock).
void BM_RequestSpansWallOnly(benchmark::State& state) {
  RequestRecord r;
  auto stage = [&](std::uint32_t name, std::int32_t parent) {
    const Nanos t0 = now_ns();
    return r.add(name, parent, t0, now_ns() - t0);
  };
  for (auto _ : state) {
    r.reset();
    r.start = now_ns();
    stage(name_id(Stage::input), -1);
    const std::int32_t pre = stage(name_id(Stage::preprocess), -1);
    stage(kStep, pre);
    stage(name_id(Stage::compute), -1);
    r.finish();
    benchmark::DoNotOptimize(r.spans.data());
  }
}
BENCHMARK(BM_RequestSpansWallOnly);

}  // namespace

BENCHMARK_MAIN();
