// Instrumentation overhead: `inferprof run` (spans, producer/collector
// threads, streamed reports) against a bare libtorch loop doing the same work
// on the same model and inputs, interleaved in one process.
//
//   build/bench/bench_overhead [--arch mlp|cnn] [--requests N] [--rounds R] [--no-reports]
//
// Prints, per round and as medians, the wall time per request of each and the
// difference: what inferprof adds to every request.
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/script.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "inferprof/pipeline.hpp"
#include "inferprof/replay.hpp"
#include "inferprof/trace.hpp"
#include "temp_dir.hpp"

using namespace inferprof;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
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
  return static_cast<double>(now_ns() - t0) / 1e3 / static_cast<double>(requests.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::string arch = "mlp";
  std::uint64_t n = 0;
  int rounds = 5;
  bool reports = true;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--no-reports")) reports = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--arch"))
      arch = argv[i + 1];
    else if (!std::strcmp(argv[i], "--requests"))
      n = std::stoull(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::stoi(argv[i + 1]);
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
  for (int i = 0; i < 3; ++i)
    bare_loop_us(module, {requests.front()}, meta.input_shape);

  RunConfig config;
  config.model_path = dir.file("model.pt");
  config.replay.trace_path = dir.file("requests.jsonl");
  config.profile = load_profile("");
  config.replay.threads = 1;
  config.replay.warmup = 3;
  if (reports) config.output.out_dir = dir.file("reports");  // --no-reports: aggregate only, to see what writing costs

  fmt::print("bench_overhead: {} ({} parameters), {} requests, {} rounds, 1 intra-op thread, libtorch {}\n", arch,
             meta.parameters, n, rounds, libtorch_version());
  fmt::print("{:>5}  {:>12}  {:>12}  {:>10}  {:>8}\n", "round", "bare µs/req", "run µs/req", "added µs", "added %");
  std::vector<double> bare, run, added, ratio;
  for (int round = 0; round < rounds; ++round) {
    double b = bare_loop_us(module, requests, meta.input_shape);
    RunOutcome o = run_replay(config);
    double r = o.summary.info.wall_s * 1e6 / static_cast<double>(o.summary.requests);
    bare.push_back(b);
    run.push_back(r);
    added.push_back(r - b);
    ratio.push_back((r - b) / b * 100);
    fmt::print("{:>5}  {:>12.2f}  {:>12.2f}  {:>10.2f}  {:>7.2f}%\n", round + 1, b, r, r - b, (r - b) / b * 100);
  }
  fmt::print("{:>5}  {:>12.2f}  {:>12.2f}  {:>10.2f}  {:>7.2f}%\n", "median", median(bare), median(run), median(added),
             median(ratio));
  return 0;
}
