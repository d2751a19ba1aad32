// Trace reading throughput: a full TraceReader pass (split, parse, validate)
// over a generated 1,000,000-line trace, and the generator's own speed.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "inferprof/trace.hpp"

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kTraceLines = 1'000'000;

// Generated once, on first use, and removed at exit: every benchmark and
// repetition reads the same bytes.
class TraceFixture {
 public:
  static TraceFixture& get() {
    static TraceFixture fixture;
    return fixture;
  }
  TraceFixture(const TraceFixture&) = delete;
  TraceFixture& operator=(const TraceFixture&) = delete;
  ~TraceFixture() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  const std::string& dir() const { return dir_; }
  const std::string& trace() const { return trace_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  TraceFixture() {
    std::string pattern = (fs::temp_directory_path() / "inferprof-bench-trace-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::exit(1);
    }
    dir_ = pattern;
    trace_ = (fs::path(dir_) / "requests.jsonl").string();
    inferprof::GenTraceOptions options;  // the defaults, only longer
    options.requests = kTraceLines;
    inferprof::generate_trace(options, trace_);
    bytes_ = fs::file_size(trace_);
  }

  std::string dir_;
  std::string trace_;
  std::uint64_t bytes_ = 0;
};

void BM_TraceRead(benchmark::State& state) {
  const TraceFixture& fixture = TraceFixture::get();
  inferprof::TraceReader::Options options;
  options.buffer_bytes = static_cast<std::size_t>(state.range(0));
  std::uint64_t records = 0;
  for (auto _ : state) {
    inferprof::TraceReader reader(fixture.trace(), options);
    inferprof::TraceRecord record;
    while (reader.next(record)) {
      benchmark::DoNotOptimize(record.request.id);
      ++records;
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * fixture.bytes()));
  state.SetItemsProcessed(static_cast<std::int64_t>(records));
  state.counters["lines"] = static_cast<double>(kTraceLines);
}
BENCHMARK(BM_TraceRead)->Arg(1 << 20)->Arg(64 << 10)->Unit(benchmark::kMillisecond);

void BM_GenerateTrace(benchmark::State& state) {
  const TraceFixture& fixture = TraceFixture::get();
  const std::string out = (fs::path(fixture.dir()) / "generated.jsonl").string();
  inferprof::GenTraceOptions options;
  options.requests = static_cast<std::uint64_t>(state.range(0));
  options.keys = static_cast<std::uint64_t>(state.range(1));
  for (auto _ : state)
    inferprof::generate_trace(options, out);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * fs::file_size(out)));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * options.requests));
}
// The second argument shows the cost of the Zipf table for many keys.
BENCHMARK(BM_GenerateTrace)->Args({100'000, 100})->Args({100'000, 10'000'000})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
