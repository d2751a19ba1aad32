#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <torch/version.h>

#include <filesystem>
#include <mutex>
#include <thread>

#include "inferprof/error.hpp"
#include "inferprof/pipeline.hpp"
#include "pipeline/torch_detail.hpp"

namespace inferprof {

namespace fs = std::filesystem;
using detail::torch_error_line;

namespace {

constexpr const char* kMetadataFile = "inferprof.json";

ModelMetadata parse_metadata(const std::string& json) {
  ModelMetadata meta;
  if (json.empty()) return meta;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc)) return meta;  // foreign metadata: ignore, it is optional
  std::string_view s;
  if (!doc["arch"].get(s)) meta.arch = std::string(s);
  if (!doc["input_dtype"].get(s)) meta.input_dtype = parse_dtype(s);
  simdjson::dom::array shape;
  if (!doc["input_shape"].get(shape))
    for (auto d : shape) {
      std::int64_t v;
      if (!d.get(v)) meta.input_shape.push_back(v);
    }
  std::int64_t n;
  if (!doc["parameters"].get(n)) meta.parameters = n;
  std::uint64_t seed;
  if (!doc["seed"].get(seed)) meta.seed = seed;
  return meta;
}

}  // namespace

struct Pipeline::Impl {
  torch::jit::Module module;
  ModelInfo info;
  detail::Preprocessor preprocess;
  PipelineOptions options;
  std::vector<std::int64_t> default_shape;
  DType default_dtype = DType::float32;

  Impl(const std::vector<PreprocessOp>& ops, PipelineOptions opts) : preprocess(ops), options(std::move(opts)) {}
};

Pipeline::Pipeline(const std::string& model_path, const Profile& profile, const PipelineOptions& options)
    : impl_(std::make_unique<Impl>(profile.preprocess, options)) {
  if (options.device != "cpu")
    throw bad_input(fmt::format("device '{}': this build has no CUDA support (rebuild with a CUDA libtorch on "
                                "CMAKE_PREFIX_PATH and -DINFERPROF_WITH_CUDA=ON)",
                                options.device));
  std::error_code ec;
  if (!fs::exists(model_path, ec)) throw bad_input(fmt::format("model '{}' not found", model_path));
  if (fs::is_directory(model_path, ec))
    throw bad_input(fmt::format("model '{}' is a folder, not a TorchScript file", model_path));
  auto& info = impl_->info;
  info.path = model_path;
  info.file_bytes = static_cast<std::int64_t>(fs::file_size(model_path, ec));

  Nanos t0 = now_ns();
  torch::jit::ExtraFilesMap extra{{kMetadataFile, ""}};
  try {
    impl_->module = torch::jit::load(model_path, c10::Device(c10::kCPU), extra);
    impl_->module.eval();
  } catch (const std::exception& e) {
    std::string why = torch_error_line(e);
    bool not_archive = why.find("zip archive") != std::string::npos || why.find("constants.pkl") != std::string::npos ||
                       why.find("data.pkl") != std::string::npos;
    throw runtime_failure(fmt::format("cannot load model '{}': {} ({})", model_path,
                                      not_archive ? "not a TorchScript archive, or a truncated one"
                                                  : "libtorch could not deserialise it",
                                      why));
  }
  info.load_ms = static_cast<double>(now_ns() - t0) / 1e6;
  info.meta = parse_metadata(extra[kMetadataFile]);
  for (const auto& p : impl_->module.parameters()) info.parameters += p.numel();

  impl_->default_shape = !profile.input.shape.empty() ? profile.input.shape : info.meta.input_shape;
  impl_->default_dtype = profile.input.dtype.value_or(info.meta.input_dtype.value_or(DType::float32));
  if (options.record_ops) detail::OpRecorder::install();
}

Pipeline::~Pipeline() = default;

const ModelInfo& Pipeline::model() const noexcept { return impl_->info; }
std::vector<std::int64_t> Pipeline::default_shape() const { return impl_->default_shape; }
DType Pipeline::default_dtype() const { return impl_->default_dtype; }

void Pipeline::serve(const TraceRequest& request, RequestRecord& record) {
  c10::InferenceMode inference;
  at::Tensor x;
  {
    ScopedSpan span(record, Stage::input);
    try {
      x = detail::make_input(request, impl_->default_shape, impl_->default_dtype);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw bad_input(fmt::format("request {}: cannot build its input: {}", request.id, torch_error_line(e)));
    }
  }
  {
    ScopedSpan span(record, Stage::preprocess);
    x = impl_->preprocess.run(std::move(x), request, record, span.index());
  }
  {
    ScopedSpan span(record, Stage::compute);
    detail::OpRecorder::Scope ops(impl_->options.record_ops, record, span.index());
    try {
      c10::IValue out = impl_->module.forward({x});
      (void)out;
    } catch (const std::exception& e) {
      const auto& meta = impl_->info.meta;
      std::string expected;
      if (!meta.input_shape.empty())
        expected = fmt::format("; the model expects {} {}", format_shape(meta.input_shape),
                               meta.input_dtype ? dtype_name(*meta.input_dtype) : "");
      auto dtype = detail::from_scalar_type(x.scalar_type());
      throw runtime_failure(fmt::format("request {}: the model rejected its input of shape {} {}{}: {}", request.id,
                                        format_shape(x.sizes().vec()), dtype ? dtype_name(*dtype) : "tensor",
                                        expected, torch_error_line(e)));
    }
  }
}

int configure_threads(int requested) {
  int n = requested > 0 ? requested : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(n);
  static std::once_flag interop;
  // Inter-op parallelism only serves fork/wait in scripted models; one thread
  // keeps the intra-op count the only knob that changes compute time.
  std::call_once(interop, [] {
    try {
      at::set_num_interop_threads(1);
    } catch (const std::exception&) {
      // Already started by an earlier use: keep libtorch's choice.
    }
  });
  return at::get_num_threads();
}

std::string libtorch_version() { return TORCH_VERSION; }

}  // namespace inferprof
