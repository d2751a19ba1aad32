#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/arg_check.hpp"
#include "cli/commands.hpp"
#include "image/image.hpp"
#include "inferprof/error.hpp"
#include "inferprof/pipeline.hpp"
#include "inferprof/trace.hpp"

namespace inferprof::cli {

Runner add_gen_model_command(CLI::App& app) {
  auto opts = std::make_shared<GenModelOptions>();
  CLI::App* cmd = app.add_subcommand("gen-model", "Write a TorchScript model built in C++ (random weights)");
  cmd->add_option("--arch", opts->arch,
                  "mlp (tests), cnn (small image model), resnet18 (ResNet-18's shape) or text (forward(ids, mask))")
      ->check(one_of(model_archs()))
      ->capture_default_str();
  cmd->add_option("--seed", opts->seed, "Weight seed: two seeds give two versions of one model")->capture_default_str();
  cmd->add_option("-o,--output", opts->out_path, "Output file (model.pt)")->required();
  return [opts] {
    ModelMetadata meta = generate_model(*opts);
    std::fprintf(stdout, "wrote %s: %s, %s parameters, input %s %s, seed %llu\n", opts->out_path.c_str(),
                 meta.arch.c_str(), fmt::format("{:L}", meta.parameters).c_str(),
                 format_shape(meta.input_shape).c_str(),
                 meta.input_dtype ? std::string(dtype_name(*meta.input_dtype)).c_str() : "?",
                 static_cast<unsigned long long>(meta.seed));
    return 0;
  };
}

namespace {

struct GenImagesOptions {
  std::string out_dir;
  std::string sizes = "320x240,1920x1080,3840x2160";
  std::string formats = "jpeg,png";
  int count = 1;
  int quality = 90;
  std::uint64_t seed = 1;
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ','))
    parts.push_back(part);
  return parts;
}

std::pair<std::uint32_t, std::uint32_t> parse_size(const std::string& text) {
  const auto x = text.find('x');
  try {
    std::size_t used_w = 0, used_h = 0;
    if (x == std::string::npos) throw std::invalid_argument("no x");
    const long long w = std::stoll(text.substr(0, x), &used_w);
    const long long h = std::stoll(text.substr(x + 1), &used_h);
    if (used_w != x || used_h != text.size() - x - 1 || w <= 0 || h <= 0 || w > 16384 || h > 16384)
      throw std::invalid_argument("range");
    return {static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(h)};
  } catch (const std::exception&) {
    throw bad_input(fmt::format("--sizes: '{}': expected WIDTHxHEIGHT, each 1..16384, like 1920x1080", text));
  }
}

}  // namespace

Runner add_gen_images_command(CLI::App& app) {
  auto opts = std::make_shared<GenImagesOptions>();
  CLI::App* cmd =
      app.add_subcommand("gen-images", "Write synthetic pictures as JPEG and PNG files (demo and test inputs)");
  cmd->add_option("--out", opts->out_dir, "Output folder (created if missing)")->required();
  cmd->add_option("--sizes", opts->sizes, "WIDTHxHEIGHT,... (up to 16384 each)")->capture_default_str();
  cmd->add_option("--formats", opts->formats, "jpeg, png or both")->capture_default_str();
  cmd->add_option("--count", opts->count, "Pictures per size and format")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_option("--quality", opts->quality, "JPEG quality")->check(CLI::Range(1, 100))->capture_default_str();
  cmd->add_option("--seed", opts->seed, "Picture seed")->capture_default_str();
  return [opts] {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> sizes;
    for (const auto& s : split_commas(opts->sizes))
      sizes.push_back(parse_size(s));
    if (sizes.empty()) throw bad_input("--sizes is empty: expected e.g. 1920x1080");
    bool jpeg = false, png = false;
    for (const auto& f : split_commas(opts->formats)) {
      if (f == "jpeg" || f == "jpg")
        jpeg = true;
      else if (f == "png")
        png = true;
      else
        throw bad_input(fmt::format("--formats: '{}': expected jpeg or png", f));
    }
    if (!jpeg && !png) throw bad_input("--formats is empty: expected jpeg, png or jpeg,png");
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(opts->out_dir, ec);
    if (ec) throw bad_input(fmt::format("--out '{}': cannot create it ({})", opts->out_dir, ec.message()));
    // Written beside their final name and renamed: a failure leaves no half file.
    auto write = [&](const std::string& name, const std::string& bytes) {
      const fs::path final_path = fs::path(opts->out_dir) / name;
      const fs::path tmp = final_path.string() + ".tmp";
      {
        std::ofstream out(tmp, std::ios::binary);
        if (!out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())) || !out.flush()) {
          fs::remove(tmp, ec);
          throw runtime_failure(fmt::format("cannot write '{}'", tmp.string()));
        }
      }
      fs::rename(tmp, final_path, ec);
      if (ec) throw runtime_failure(fmt::format("cannot write '{}': {}", final_path.string(), ec.message()));
      std::fprintf(stdout, "wrote %s (%zu bytes)\n", final_path.string().c_str(), bytes.size());
    };
    std::uint64_t seed = opts->seed;
    for (const auto& [w, h] : sizes) {
      for (int i = 0; i < opts->count; ++i, ++seed) {
        const std::string rgb = image::synth_picture(w, h, seed);
        try {
          if (jpeg) write(fmt::format("{}x{}-{}.jpg", w, h, i), image::encode_jpeg(rgb, w, h, opts->quality));
          if (png) write(fmt::format("{}x{}-{}.png", w, h, i), image::encode_png(rgb, w, h));
        } catch (const image::DecodeError& e) {
          throw runtime_failure(e.what);
        }
      }
    }
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
      throw bad_input(
          fmt::format("--shape '{}': expected positive integers separated by commas, like 1,3,224,224", text));
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
  cmd->add_option("--update-every-ms", opts->update_every_ms, "A model_update event every MS milliseconds (0 = none)")
      ->capture_default_str();
  cmd->add_option("--model", opts->model, "Model name in model_update events")->capture_default_str();
  cmd->add_option("-o,--output", *out, "Output file (requests.jsonl)")->required();
  return [opts, shape, dtype, out] {
    opts->shape = parse_shape(*shape);
    auto d = parse_dtype(*dtype);
    if (!d)
      throw bad_input(
          fmt::format("--dtype '{}': expected one of uint8, int8, int16, int32, int64, float16, float32, "
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
