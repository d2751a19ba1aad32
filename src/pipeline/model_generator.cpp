// Builds the demo/test architectures directly as TorchScript from C++: the
// weights are registered as parameters and buffers, the forward is TorchScript
// source compiled by Module::define, and the result saves like any scripted model.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "base/atomic_file.hpp"
#include "inferprof/error.hpp"
#include "inferprof/pipeline.hpp"
#include "pipeline/torch_detail.hpp"

namespace inferprof {
namespace {

class Builder {
 public:
  explicit Builder(const std::string& name) : module_(name) {}

  // Kaiming-normal weights keep activations in range through deep stacks, so
  // outputs stay finite whatever the seed.
  std::string conv(const std::string& name, std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride,
                   std::int64_t pad, const std::string& x) {
    double std = std::sqrt(2.0 / static_cast<double>(in * k * k));
    param(name + "_weight", torch::randn({out, in, k, k}) * std);
    return fmt::format("torch.conv2d({}, self.{}_weight, None, [{}, {}], [{}, {}])", x, name, stride, stride, pad, pad);
  }
  std::string bn(const std::string& name, std::int64_t c, const std::string& x, double gamma = 1.0) {
    param(name + "_weight", torch::full({c}, gamma));
    param(name + "_bias", torch::zeros({c}));
    module_.register_buffer(name + "_running_mean", torch::randn({c}) * 0.01);
    module_.register_buffer(name + "_running_var", torch::ones({c}));
    return fmt::format(
        "torch.batch_norm({x}, self.{n}_weight, self.{n}_bias, self.{n}_running_mean, self.{n}_running_var, "
        "False, 0.1, 1e-05, True)",
        fmt::arg("x", x), fmt::arg("n", name));
  }
  std::string linear(const std::string& name, std::int64_t in, std::int64_t out, const std::string& x) {
    param(name + "_weight", torch::randn({out, in}) / std::sqrt(static_cast<double>(in)));
    param(name + "_bias", torch::zeros({out}));
    return fmt::format("torch.linear({}, self.{}_weight, self.{}_bias)", x, name, name);
  }
  std::string embedding(const std::string& name, std::int64_t vocab, std::int64_t dim, const std::string& ids) {
    param(name + "_weight", torch::randn({vocab, dim}));
    return fmt::format("torch.embedding(self.{}_weight, {})", name, ids);
  }
  void line(const std::string& code) { body_ += "    " + code + "\n"; }
  torch::jit::Module finish(const std::string& signature = "def forward(self, x):") {
    module_.define(signature + "\n" + body_);
    module_.eval();
    return module_;
  }
  std::int64_t parameters() const { return parameters_; }

 private:
  void param(const std::string& name, const at::Tensor& t) {
    module_.register_parameter(name, t, /*is_buffer=*/false);
    parameters_ += t.numel();
  }
  torch::jit::Module module_;
  std::string body_;
  std::int64_t parameters_ = 0;
};

torch::jit::Module build_mlp(Builder& b) {
  b.line("x = torch.relu(" + b.linear("fc1", 16, 64, "x") + ")");
  b.line("x = torch.relu(" + b.linear("fc2", 64, 64, "x") + ")");
  b.line("return " + b.linear("fc3", 64, 10, "x"));
  return b.finish();
}

torch::jit::Module build_cnn(Builder& b) {
  std::int64_t in = 3;
  int i = 1;
  for (std::int64_t out : {32, 64, 128}) {
    auto name = fmt::format("conv{}", i);
    b.line("x = " + b.conv(name, in, out, 3, 1, 1, "x"));
    b.line("x = torch.relu(" + b.bn(fmt::format("bn{}", i), out, "x") + ")");
    if (out != 128) b.line("x = torch.max_pool2d(x, [2, 2], [2, 2])");
    in = out;
    ++i;
  }
  b.line("x = torch.flatten(torch.adaptive_avg_pool2d(x, [1, 1]), 1)");
  b.line("return " + b.linear("fc", 128, 10, "x"));
  return b.finish();
}

// ResNet-18's shape: 7x7 stem, four stages of two basic blocks, 1000 classes.
torch::jit::Module build_resnet18(Builder& b) {
  b.line("x = " + b.conv("conv1", 3, 64, 7, 2, 3, "x"));
  b.line("x = torch.relu(" + b.bn("bn1", 64, "x") + ")");
  b.line("x = torch.max_pool2d(x, [3, 3], [2, 2], [1, 1])");
  std::int64_t in = 64;
  const std::int64_t widths[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    std::int64_t out = widths[stage];
    for (int block = 0; block < 2; ++block) {
      std::int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      auto p = fmt::format("layer{}_{}", stage + 1, block);
      b.line("y = " + b.conv(p + "_conv1", in, out, 3, stride, 1, "x"));
      b.line("y = torch.relu(" + b.bn(p + "_bn1", out, "y") + ")");
      b.line("y = " + b.conv(p + "_conv2", out, out, 3, 1, 1, "y"));
      // A small last gamma keeps the residual sum from growing block after block.
      b.line("y = " + b.bn(p + "_bn2", out, "y", 0.2));
      if (stride != 1 || in != out) {
        b.line("x = " + b.conv(p + "_downsample_0", in, out, 1, stride, 0, "x"));
        b.line("x = " + b.bn(p + "_downsample_1", out, "x"));
      }
      b.line("x = torch.relu(y + x)");
      in = out;
    }
  }
  b.line("x = torch.flatten(torch.adaptive_avg_pool2d(x, [1, 1]), 1)");
  b.line("return " + b.linear("fc", 512, 1000, "x"));
  return b.finish();
}

// A text classifier of two inputs, as a tokenizer feeds it: token ids and the
// attention mask ([N, L] int64 each). Embedding, mean over the real tokens,
// linear; returns (logits, pooled) so that tuple outputs are exercised too.
constexpr std::int64_t kTextVocab = 32000;
constexpr std::int64_t kTextLength = 128;
torch::jit::Module build_text(Builder& b) {
  b.line("e = " + b.embedding("embedding", kTextVocab, 64, "ids"));
  b.line("m = mask.unsqueeze(-1).to(e.dtype)");
  b.line("pooled = (e * m).sum(1) / torch.clamp_min(m.sum(1), 1.0)");
  b.line("return " + b.linear("fc", 64, 2, "pooled") + ", pooled");
  return b.finish("def forward(self, ids: Tensor, mask: Tensor) -> Tuple[Tensor, Tensor]:");
}

}  // namespace

ModelMetadata generate_model(const GenModelOptions& options) {
  if (options.out_path.empty()) throw bad_input("gen-model needs an output file (-o FILE)");
  ModelMetadata meta;
  meta.arch = options.arch;
  meta.seed = options.seed;
  meta.input_dtype = DType::float32;
  torch::manual_seed(options.seed);
  c10::InferenceMode guard(false);
  Builder builder(options.arch);
  torch::jit::Module module;
  if (options.arch == "mlp") {
    meta.input_shape = {1, 16};
    module = build_mlp(builder);
  } else if (options.arch == "cnn") {
    meta.input_shape = {1, 3, 64, 64};
    module = build_cnn(builder);
  } else if (options.arch == "resnet18") {
    meta.input_shape = {1, 3, 224, 224};
    module = build_resnet18(builder);
  } else if (options.arch == "text") {
    meta.input_shape = {1, kTextLength};
    meta.input_dtype = DType::int64;
    module = build_text(builder);
  } else {
    throw bad_input(
        fmt::format("unknown architecture '{}' (expected one of: {})", options.arch, fmt::join(model_archs(), ", ")));
  }
  meta.parameters = builder.parameters();
  std::string json = fmt::format(
      R"({{"arch": "{}", "input_shape": [{}], "input_dtype": "{}", "parameters": {}, "seed": {}, "generator": "inferprof gen-model"}})",
      meta.arch, fmt::join(meta.input_shape, ", "), dtype_name(*meta.input_dtype), meta.parameters, meta.seed);

  std::ostringstream bytes;
  try {
    module.save(bytes, {{"inferprof.json", json}});
  } catch (const std::exception& e) {
    throw runtime_failure(fmt::format("cannot write model '{}': {}", options.out_path, detail::torch_error_line(e)));
  }
  // The executable's one atomic writer (temporary file, fsync, rename).
  report::TempFile file;
  file.open(options.out_path);
  file.write(bytes.str());
  file.rename_into_place();
  return meta;
}

}  // namespace inferprof
