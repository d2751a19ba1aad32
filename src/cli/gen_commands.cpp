#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <sstream>

#include "cli/arg_check.hpp"
#include "cli/commands.hpp"
#include "inferprof/error.hpp"
#include "inferprof/pipeline.hpp"
#include "inferprof/trace.hpp"

namespace inferprof::cli {

Runner add_gen_model_command(CLI::App& app) {
  auto opts = std::make_shared<GenModelOptions>();
  CLI::App* cmd = app.add_subcommand("gen-model", "Write a TorchScript model built in C++ (random weights)");
  cmd->add_option("--arch", opts->arch, "mlp (tests), cnn (small image model) or resnet18 (ResNet-18's shape)")
      ->check(one_of(model_archs()))
      ->capture_default_str();
  cmd->add_option("--seed", opts->seed, "Weight seed: two seeds give two versions of one model")
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->out_path, "Output file (model.pt)")->required();
  return [opts] {
    ModelMetadata meta = generate_model(*opts);
    std::fprintf(stdout, "wrote %s: %s, %s parameters, input %s %s, seed %llu\n", opts->out_path.c_str(),
                 meta.arch.c_str(), fmt::format("{:L}", meta.parameters).c_str(), format_shape(meta.input_shape).c_str(),
                 meta.input_dtype ? std::string(dtype_name(*meta.input_dtype)).c_str() : "?",
                 static_cast<unsigned long long>(meta.seed));
    return 0;
  };
}

namespace {
std::vector<std::int64_t> parse_shape(const std::string& text) {
  std::vector<std::int64_t> shape;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    try {
      std::size_t used = 0;
      long long v = std::stoll(part, &used);
      if (used != part.size() || v <= 0) throw std::invalid_argument("bad");
      shape.push_back(v);
    } catch (const std::exception&) {
      throw bad_input(fmt::format("--shape '{}': expected positive integers separated by commas, like 1,3,224,224",
                                  text));
    }
  }
  if (shape.empty()) throw bad_input("--shape is empty: expected e.g. 1,16");
  return shape;
}
}  // namespace

Runner add_gen_trace_command(CLI::App& app) {
  auto opts = std::make_shared<GenTraceOptions>();
  auto shape = std::make_shared<std::string>("1,16");
  auto dtype = std::make_shared<std::string>("float32");
  auto out = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("gen-trace", "Write a reproducible synthetic request trace (JSON lines)");
  cmd->add_option("--requests", opts->requests, "Number of requests")->capture_default_str();
  cmd->add_option("--keys", opts->keys, "Distinct inputs (cache keys)")->capture_default_str();
  cmd->add_option("--zipf", opts->zipf, "Popularity skew of keys (0 = uniform)")->capture_default_str();
  cmd->add_option("--rate", opts->rate, "Poisson arrivals per second for ts_ms (0 = no timestamps)")
      ->capture_default_str();
  cmd->add_option("--shape", *shape, "Input shape, comma-separated")->capture_default_str();
  cmd->add_option("--dtype", *dtype, "Input dtype")->capture_default_str();
  cmd->add_option("--seed", opts->seed, "Random seed")->capture_default_str();
  cmd->add_option("--update-every", opts->update_every_ms, "A model_update event every MS milliseconds (0 = none)")
      ->capture_default_str();
  cmd->add_option("--model", opts->model, "Model name in model_update events")->capture_default_str();
  cmd->add_option("-o,--output", *out, "Output file (requests.jsonl)")->required();
  return [opts, shape, dtype, out] {
    opts->shape = parse_shape(*shape);
    auto d = parse_dtype(*dtype);
    if (!d)
      throw bad_input(fmt::format("--dtype '{}': expected one of uint8, int8, int16, int32, int64, float16, float32, "
                                  "float64, bool",
                                  *dtype));
    opts->dtype = *d;
    generate_trace(*opts, *out);
    std::fprintf(stdout, "wrote %s: %llu requests over %llu keys (zipf %.2f)%s\n", out->c_str(),
                 static_cast<unsigned long long>(opts->requests), static_cast<unsigned long long>(opts->keys),
                 opts->zipf, opts->rate > 0 ? fmt::format(", Poisson arrivals at {} req/s", opts->rate).c_str() : "");
    return 0;
  };
}

}  // namespace inferprof::cli
