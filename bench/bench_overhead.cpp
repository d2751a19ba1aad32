// Instrumentation overhead: `inferprof run` against a bare libtorch loop doing
// the same work on the same model and inputs, interleaved in one process, and
// where the difference goes: each row below adds one layer of what `run` does
// to the row above it, all rows measured in every round (order rotated).
//
//   bare          the model's work per request, no timer (input + preprocessing + forward)
//   pipeline      Pipeline::serve (the plugin's function table, its spans on wall clocks)
//   + cpu clock   the same, every request reading the thread CPU clock at its stage boundaries
//   + serve step  the engine's serve step around it (record reset, verify and update checks)
//   + aggregate   the Collector's add() on the same thread (no files)
//   + stream      the same Collector streaming requests.csv and trace.json
//   run inline    run_replay, inline driver: reads, serves and aggregates on one thread
//   run threaded  run_replay, reader and collector threads beside the worker
//
// The `run` rows use the default CPU sampling (1 in N requests read the CPU
// clock, N from its cost; summary.json's cpu_sample says which N); the
// `+ cpu clock` row reads it on every request, to show what one read costs.
//
//   build/bench/bench_overhead [--arch mlp|cnn] [--requests N] [--rounds R] [--no-reports] [--only ROW]
//   (--only: that row alone, e.g. under `perf record`)
//   bench/overhead.sh runs it alone and under a pinned busy loop.
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/script.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "base/atomic_file.hpp"
#include "base/output_owner.hpp"
#include "inferprof/pipeline.hpp"
#include "inferprof/replay.hpp"
#include "inferprof/report.hpp"
#include "inferprof/trace.hpp"
#include "replay/engine.hpp"
#include "temp_dir.hpp"

using namespace inferprof;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double per_request_us(Nanos t0, std::size_t n) {
  return static_cast<double>(now_ns() - t0) / 1e3 / static_cast<double>(n);
}

// The work inferprof's default profile does per request, without any timer.
double bare_loop_us(torch::jit::Module& module, const std::vector<TraceRequest>& requests,
                    const std::vector<std::int64_t>& shape) {
  c10::InferenceMode guard;
  Nanos t0 = now_ns();
  for (const auto& r : requests) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(r.input.seed);
    at::Tensor x = at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat));
    x = x.to(at::kFloat);
    module.forward({x});
  }
  return per_request_us(t0, requests.size());
}

enum class Layer { pipeline, cpu, step, aggregate, stream };

// The layers of `run` up to `layer`, on this thread, over the pre-read requests.
double layered_us(Pipeline& pipeline, const std::vector<TraceRequest>& requests, Layer layer,
                  const std::string& out_dir) {
  inferprof::detail::PipelineServer server(pipeline);
  inferprof::detail::Verifier verifier(false, 0);
  std::unique_ptr<Collector> collector;
  if (layer >= Layer::aggregate) {
    CollectorOptions o;
    if (layer == Layer::stream) o.out_dir = out_dir;
    collector = std::make_unique<Collector>(o);
  }
  RequestRecord record;
  const Nanos t0 = now_ns();
  if (collector) collector->set_epoch(t0);
  std::uint64_t seq = 0;
  for (const auto& r : requests) {
    if (layer <= Layer::cpu) {
      record.reset();
      record.begin(layer == Layer::cpu);
      pipeline.serve(r, record);
      record.finish();
      continue;
    }
    inferprof::detail::ServeJob job{&r, seq, seq + 1, 0, 0};
    job.cpu = true;
    inferprof::detail::serve_step(server, nullptr, nullptr, &verifier, job, record);
    ++seq;
    if (collector) collector->add(record);
  }
  const double us = per_request_us(t0, requests.size());
  if (collector) collector->discard();
  return us;
}

struct Row {
  std::string name;
  std::function<double()> run;
  std::vector<double> us, added;
};

}  // namespace

int main(int argc, char** argv) {
  std::string arch = "mlp";
  std::uint64_t n = 0;
  int rounds = 5;
  bool reports = true;
  std::string only;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--no-reports")) reports = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--arch"))
      arch = argv[i + 1];
    else if (!std::strcmp(argv[i], "--requests"))
      n = std::stoull(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--only"))
      only = argv[i + 1];
  }
  if (n == 0) n = arch == "mlp" ? 20000 : 400;

  inferprof::testing::TempDir dir;
  ModelMetadata meta = generate_model({arch, 1, dir.file("model.pt")});
  GenTraceOptions t;
  t.requests = n;
  t.keys = 100;
  t.shape = meta.input_shape;
  generate_trace(t, dir.file("requests.jsonl"));

  std::vector<TraceRequest> requests;
  {
    TraceReader reader(dir.file("requests.jsonl"));
    TraceRecord rec;
    while (reader.next(rec))
      requests.push_back(rec.request);
  }
  configure_threads(1);
  torch::jit::Module module = torch::jit::load(dir.file("model.pt"));
  module.eval();
  const Profile profile = load_profile("");
  Pipeline pipeline(dir.file("model.pt"), profile, PipelineOptions{});
  for (int i = 0; i < 3; ++i) {
    bare_loop_us(module, {requests.front()}, meta.input_shape);
    layered_us(pipeline, {requests.front()}, Layer::pipeline, "");
  }
  const std::string stream_dir = dir.file("stream");
  output::claim_dir(stream_dir);

  RunConfig config;
  config.model_path = dir.file("model.pt");
  config.replay.trace_path = dir.file("requests.jsonl");
  config.profile = profile;
  config.replay.threads = 1;
  config.replay.warmup = 3;
  if (reports) config.output.out_dir = dir.file("reports");  // --no-reports: aggregate only, to see what writing costs
  std::uint32_t cpu_every = 0;
  auto run_us = [&](bool inline_driver) {
    RunConfig c = config;
    c.replay.driver = inline_driver ? Driver::inline_worker : Driver::threaded;
    RunOutcome o = run_replay(c);
    cpu_every = o.summary.info.cpu_sample_every;
    return o.summary.info.wall_s * 1e6 / static_cast<double>(o.summary.requests);
  };

  std::vector<Row> rows;
  rows.push_back({"bare", [&] { return bare_loop_us(module, requests, meta.input_shape); }, {}, {}});
  // The bare loop on a thread of its own, as run's worker is: glibc gives
  // each thread its own malloc arena, which behaves unlike the main thread's.
  rows.push_back({"bare thread",
                  [&] {
                    double us = 0;
                    std::thread([&] { us = bare_loop_us(module, requests, meta.input_shape); }).join();
                    return us;
                  },
                  {},
                  {}});
  rows.push_back({"pipeline", [&] { return layered_us(pipeline, requests, Layer::pipeline, ""); }, {}, {}});
  rows.push_back({"+ cpu clock", [&] { return layered_us(pipeline, requests, Layer::cpu, ""); }, {}, {}});
  rows.push_back({"+ serve step", [&] { return layered_us(pipeline, requests, Layer::step, ""); }, {}, {}});
  rows.push_back({"+ aggregate", [&] { return layered_us(pipeline, requests, Layer::aggregate, ""); }, {}, {}});
  rows.push_back({"+ stream", [&] { return layered_us(pipeline, requests, Layer::stream, stream_dir); }, {}, {}});
  rows.push_back({"run inline", [&] { return run_us(true); }, {}, {}});
  rows.push_back({"run threaded", [&] { return run_us(false); }, {}, {}});
  if (!only.empty()) {
    for (const Row& r : rows)
      if (r.name == only) {
        for (int round = 0; round < rounds; ++round)
          fmt::print("{}: {:.2f} µs/req\n", only, r.run());
        return 0;
      }
    fmt::print(stderr, "--only {}: no such row\n", only);
    return 2;
  }

  fmt::print("bench_overhead: {} ({} parameters), {} requests, {} rounds, 1 intra-op thread, libtorch {}{}\n", arch,
             meta.parameters, n, rounds, libtorch_version(), reports ? "" : ", no report files");
  for (int round = 0; round < rounds; ++round) {
    std::vector<double> us(rows.size());
    // Rotated, so that no row always runs right after the same one.
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const std::size_t i = (k + static_cast<std::size_t>(round)) % rows.size();
      us[i] = rows[i].run();
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      rows[i].us.push_back(us[i]);
      rows[i].added.push_back(us[i] - us[0]);
    }
    fmt::print("round {}:", round + 1);
    for (std::size_t i = 0; i < rows.size(); ++i)
      fmt::print(" {}={:.2f}", rows[i].name, us[i]);
    fmt::print(" µs/req\n");
  }
  fmt::print("\n{:<14} {:>10} {:>12} {:>19} {:>9} {:>11}\n", "row", "µs/req", "added µs", "added range", "added %",
             "vs row above");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const auto [lo, hi] = std::minmax_element(r.added.begin(), r.added.end());
    std::vector<double> step;
    for (std::size_t k = 0; i > 0 && k < r.us.size(); ++k)
      step.push_back(r.us[k] - rows[i - 1].us[k]);
    fmt::print("{:<14} {:>10.2f} {:>+12.2f} {:>+9.2f} … {:>+7.2f} {:>+8.1f}% {:>+11.2f}\n", r.name, median(r.us),
               median(r.added), *lo, *hi, median(r.added) / median(rows[0].us) * 100, i ? median(step) : 0.0);
  }
  fmt::print(
      "(medians over rounds; `added` is per round against that round's bare loop; run rows: CPU clock on 1 in "
      "{} requests)\n",
      cpu_every);
  return 0;
}
