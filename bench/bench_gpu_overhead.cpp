// What CUPTI + NVTX cost a request on the GPU: one pipeline on cuda, rounds
// alternating tracing on and off (A B A B ...), in one process.
//
//   build/bench/bench_gpu_overhead MODEL [--batch N] [--requests N] [--rounds R] [--pinned]
//
// The latency compared is the request's device path: wall time minus the
// host-side input and preprocessing spans (identical work in both modes), so
// the ratio is not diluted by synthesising inputs on the CPU. With tracing on
// it includes what the tracer adds at the end of each request (CUPTI flush and
// attribution). Prints per-round means and the median ratio on/off.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "inferprof/error.hpp"
#include "inferprof/pipeline.hpp"
#include "inferprof/profile.hpp"

using namespace inferprof;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Mean device-path latency (µs) over `n` requests.
double round_us(Pipeline& p, const std::vector<std::int64_t>& shape, int n, std::uint64_t seed) {
  RequestRecord r;
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    TraceRequest req;
    req.id = seed + static_cast<std::uint64_t>(i);
    req.key = fmt::format("k{}", req.id);
    req.input.kind = InputSpec::Kind::seed;
    req.input.seed = req.id;
    req.input.shape = shape;
    r.reset();
    r.start = now_ns();
    p.serve(req, r);
    r.end = now_ns();
    const Nanos host =
        r.stage[static_cast<std::size_t>(Stage::input)] + r.stage[static_cast<std::size_t>(Stage::preprocess)];
    sum += static_cast<double>(r.end - r.start - host) / 1e3;
  }
  return sum / n;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2 || argv[1][0] == '-') {
    fmt::print(stderr, "usage: bench_gpu_overhead MODEL [--batch N] [--requests N] [--rounds R] [--pinned]\n");
    return 2;
  }
  const std::string model = argv[1];
  int batch = 32, requests = 30, rounds = 10;
  bool pinned = false;
  for (int i = 2; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--pinned"))
      pinned = true;
    else if (!std::strcmp(argv[i], "--batch") && has_value)
      batch = std::stoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--requests") && has_value)
      requests = std::stoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--rounds") && has_value)
      rounds = std::stoi(argv[++i]);
    else
      throw bad_input(fmt::format("unknown argument '{}'", argv[i]));
  }
  configure_threads(1);
  Profile profile = load_profile("");
  PipelineOptions options;
  options.device = "cuda";
  options.pinned = pinned;
  Pipeline p(model, profile, options);
  std::vector<std::int64_t> shape = p.default_shape();
  if (shape.empty()) throw bad_input(fmt::format("{}: the model does not say its input shape", model));
  shape[0] = batch;

  // Warm-up in both modes: TorchScript's profiling runs, cuDNN, the allocator.
  for (bool on : {true, false}) {
    p.set_gpu_trace(on);
    round_us(p, shape, 5, 1'000'000);
  }
  fmt::print("bench_gpu_overhead: {} batch {} · {} requests x {} rounds per mode, interleaved · {}\n", model, batch,
             requests, rounds, pinned ? "pinned" : "pageable");
  fmt::print("{:>5}  {:>12}  {:>12}  {:>8}\n", "round", "off µs/req", "on µs/req", "on/off");
  std::vector<double> off, on, ratio;
  for (int round = 0; round < rounds; ++round) {
    // Alternate which mode goes first so drift does not favour one.
    double t_on = 0, t_off = 0;
    for (int k = 0; k < 2; ++k) {
      const bool trace = (k == 0) == (round % 2 == 0);
      p.set_gpu_trace(trace);
      const double t = round_us(p, shape, requests, static_cast<std::uint64_t>(round) * 1000);
      (trace ? t_on : t_off) = t;
    }
    off.push_back(t_off);
    on.push_back(t_on);
    ratio.push_back(t_on / t_off);
    fmt::print("{:>5}  {:>12.1f}  {:>12.1f}  {:>8.4f}\n", round + 1, t_off, t_on, t_on / t_off);
  }
  p.set_gpu_trace(true);
  const GpuInfo g = p.finish_gpu();
  fmt::print("{:>5}  {:>12.1f}  {:>12.1f}  {:>8.4f}\n", "median", median(off), median(on), median(ratio));
  fmt::print("overhead_ratio {:.4f}\n", median(ratio));
  fmt::print("cupti_dropped {}\n", g.dropped);
  return 0;
} catch (const Error& e) {
  fmt::print(stderr, "bench_gpu_overhead: error: {}\n", e.what());
  return e.exit_code();
}
