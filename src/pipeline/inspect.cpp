// `inferprof inspect` in the plugin: the forward's schema, the parameters, and
// a trial forward through the same Pipeline `run` uses, so its verdict (and
// its error line) are the ones a run would give.
#include "inferprof/inspect.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>

#include "base/output_owner.hpp"
#include "image/image.hpp"
#include "inferprof/error.hpp"
#include "pipeline/inspect_detail.hpp"

namespace inferprof {

namespace detail {

namespace {
std::string pattern_text(const std::vector<std::int64_t>& pattern) {
  static const char* const four[] = {"N", "C", "H", "W"};
  std::vector<std::string> dims;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] >= 0)
      dims.push_back(std::to_string(pattern[i]));
    else if (i == 0)
      dims.emplace_back("N");
    else
      dims.emplace_back(pattern.size() == 4 ? four[i] : "L");
  }
  return fmt::format("[{}]", fmt::join(dims, ", "));
}
bool is_integer(DType d) {
  return d != DType::float16 && d != DType::float32 && d != DType::float64;
}
}  // namespace

std::string InputGuess::describe() const {
  return fmt::format("{} {} (its first layer '{}' is {})", pattern_text(pattern), dtype_name(dtype), layer,
                     format_shape(weight));
}

bool InputGuess::fits(const std::vector<std::int64_t>& shape, DType d) const {
  if (!known) return true;
  if (shape.size() != pattern.size() || is_integer(d) != is_integer(dtype)) return false;
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (pattern[i] >= 0 && shape[i] != pattern[i]) return false;
  return true;
}

std::vector<std::int64_t> InputGuess::example(const std::vector<std::int64_t>& hint) const {
  if (fits(hint, dtype) && !hint.empty()) return hint;
  std::vector<std::int64_t> shape = pattern;
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < 0) shape[i] = i == 0 ? 1 : shape.size() == 4 ? 224 : 128;
  return shape;
}

namespace {

// "emb.weight" for the value a chain of prim::GetAttr reads from self; empty otherwise.
std::string attribute_path(const torch::jit::Value* v) {
  std::string path;
  while (v->node()->kind() == c10::prim::GetAttr) {
    path = v->node()->s(c10::attr::name) + (path.empty() ? "" : "." + path);
    v = v->node()->input(0);
  }
  return v->node()->kind() == c10::prim::Param && v->offset() == 0 ? path : std::string();
}

// For each forward argument (self excluded) that an embedding indexes directly:
// the embedding's weight (its path from self, and its sizes: [vocab, dim]).
struct EmbeddingUse {
  std::string weight;
  std::vector<std::int64_t> sizes;
};
std::map<std::size_t, EmbeddingUse> embedding_arguments(const torch::jit::Module& module) {
  std::map<std::size_t, EmbeddingUse> out;
  const auto forward = module.find_method("forward");
  if (!forward) return out;
  std::shared_ptr<torch::jit::Graph> graph = forward->graph()->copy();
  torch::jit::Inline(*graph);
  std::map<std::string, std::vector<std::int64_t>> weights;
  for (const auto& p : module.named_parameters(/*recurse=*/true))
    if (p.value.dim() == 2) weights[p.name] = p.value.sizes().vec();
  for (const torch::jit::Node* n : graph->nodes()) {
    if (n->kind() != c10::aten::embedding || n->inputs().size() < 2) continue;
    const torch::jit::Value* ids = n->input(1);
    if (ids->node()->kind() != c10::prim::Param || ids->offset() == 0) continue;
    const std::string path = attribute_path(n->input(0));
    if (const auto w = weights.find(path); w != weights.end())
      out.emplace(ids->offset() - 1, EmbeddingUse{path, w->second});
  }
  return out;
}

bool name_has(std::string name, std::initializer_list<std::string_view> parts) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return std::any_of(parts.begin(), parts.end(), [&](std::string_view p) { return name.find(p) != std::string::npos; });
}

}  // namespace

InputGuess guess_input(const torch::jit::Module& module) {
  InputGuess g;
  // An embedding indexed by the first argument, whatever it is called: token ids.
  if (const auto e = embedding_arguments(module); e.count(0)) {
    g.known = true;
    g.pattern = {-1, -1};
    g.dtype = DType::int64;
    g.layer = e.at(0).weight;
    g.weight = e.at(0).sizes;
    return g;
  }
  for (const auto& p : module.named_parameters(/*recurse=*/true)) {
    const auto sizes = p.value.sizes().vec();
    std::string lower = p.name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (sizes.size() == 4) {
      g.pattern = {-1, sizes[1], -1, -1};
    } else if (sizes.size() == 3) {
      g.pattern = {-1, sizes[1], -1};
    } else if (sizes.size() == 2 && lower.find("embed") != std::string::npos) {
      g.pattern = {-1, -1};
      g.dtype = DType::int64;
    } else if (sizes.size() == 2) {
      g.pattern = {-1, sizes[1]};
    } else {
      continue;  // a bias or a norm's scale says nothing about the input
    }
    g.known = true;
    g.layer = p.name;
    g.weight = sizes;
    break;
  }
  return g;
}

std::vector<InputSpec> token_inputs(const torch::jit::Module& module, std::int64_t seq_len) {
  const auto forward = module.find_method("forward");
  if (!forward) return {};
  const std::map<std::size_t, EmbeddingUse> embeddings = embedding_arguments(module);
  if (embeddings.empty()) return {};
  const auto& args = forward->function().getSchema().arguments();
  std::vector<InputSpec> out;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const auto& a = args[i];
    if (a.type()->kind() != c10::TypeKind::TensorType) {
      if (a.default_value()) break;  // Optional[Tensor] = None and the like: left to their defaults
      return {};
    }
    InputSpec spec;
    spec.kind = InputSpec::Kind::seed;
    spec.name = a.name();
    spec.shape = {1, seq_len};
    spec.dtype = DType::int64;
    spec.seed = 1;
    if (const auto e = embeddings.find(i - 1); e != embeddings.end())
      spec.range = std::array<std::int64_t, 2>{0, e->second.sizes[0]};
    else if (name_has(a.name(), {"mask"}))
      spec.range = std::array<std::int64_t, 2>{1, 2};
    else if (name_has(a.name(), {"type", "segment"}))
      spec.range = std::array<std::int64_t, 2>{0, 1};
    else if (a.default_value())
      break;
    else
      return {};
    out.push_back(std::move(spec));
  }
  return out;
}

std::string input_advice(const torch::jit::Module& module, const std::vector<std::int64_t>& given_shape,
                         DType given_dtype, const std::vector<std::int64_t>& metadata_shape,
                         const std::string& current_profile) {
  const InputGuess g = guess_input(module);
  if (!g.known || g.fits(given_shape, given_dtype)) return {};
  // Profiles whose [input] gives a shape that fits: the user's next flag.
  std::vector<std::string> profiles;
  for (const std::string& name : available_profiles()) {
    if (name == current_profile) continue;
    try {
      const Profile p = load_profile(name);
      // Shape only: a profile's ops may cast its input (uint8 pixels -> float).
      if (!p.input.shape.empty() && g.fits(p.input.shape, g.dtype)) profiles.push_back(name);
    } catch (const Error&) {
      // A broken profile in the search path is not this model's problem.
    }
  }
  const std::vector<std::int64_t> shape = g.example(metadata_shape);
  std::string flags = fmt::format("--shape {}", fmt::join(shape, ","));
  if (g.dtype != DType::float32) flags += fmt::format(" --dtype {}", dtype_name(g.dtype));
  std::string use;
  for (std::size_t i = 0; i < profiles.size(); ++i)
    use += fmt::format("{}--profile {}", i == 0 ? "" : " or ", profiles[i]);
  return fmt::format("the model expects {}: use {}{}", g.describe(), use.empty() ? "" : use + " or ", flags);
}

}  // namespace detail

namespace {

// A synthesised JPEG for a trial through a profile that decodes images,
// removed when the trial is over.
class TrialImage {
 public:
  TrialImage() {
    char name[] = "/tmp/inferprof-inspect-XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd < 0) throw runtime_failure("inspect: cannot create a temporary image in /tmp");
    ::close(fd);
    path_ = name;
    output::created(path_);
    const std::string jpeg = image::encode_jpeg(image::synth_picture(640, 480, 1), 640, 480, 90);
    std::ofstream out(path_, std::ios::binary);
    if (!out.write(jpeg.data(), static_cast<std::streamsize>(jpeg.size())))
      throw runtime_failure(fmt::format("inspect: cannot write '{}'", path_));
  }
  ~TrialImage() { output::remove_created(path_); }
  TrialImage(const TrialImage&) = delete;
  TrialImage& operator=(const TrialImage&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

Inspection inspect_model(const ModelBytes& bytes, const Profile& profile, const InspectOptions& options) {
  Pipeline pipeline(bytes, profile, PipelineOptions{});
  Inspection r;
  r.model = pipeline.model();
  const ModelHandle handle = pipeline.active();
  const torch::jit::Module& module = detail::module_of(*handle);
  for (const auto& p : module.parameters())
    r.parameter_bytes += static_cast<std::int64_t>(p.nbytes());
  if (const auto forward = module.find_method("forward")) {
    const c10::FunctionSchema& schema = forward->function().getSchema();
    const auto& args = schema.arguments();
    for (std::size_t i = 1; i < args.size(); ++i)  // 0 is self
      r.arguments.push_back({args[i].name(), args[i].type()->annotation_str()});
    std::vector<std::string> returns;
    for (const auto& ret : schema.returns())
      returns.push_back(ret.type()->annotation_str());
    r.returns = fmt::format("{}", fmt::join(returns, ", "));
  }
  const detail::InputGuess guess = detail::guess_input(module);
  if (guess.known) r.expects = guess.describe();
  r.image = !profile.preprocess.empty() && profile.preprocess.front().op == PreprocessKind::decode;
  r.text = !profile.preprocess.empty() && profile.preprocess.front().op == PreprocessKind::tokenize;

  if (!r.image && !r.text && options.shape.empty() && profile.input.shape.empty()) {
    // A token model's sequence length: --seq-len, else its metadata's [1, L], else 128.
    const std::vector<std::int64_t> meta = pipeline.default_shape();
    r.inputs = detail::token_inputs(module, options.seq_len > 0 ? options.seq_len : meta.size() == 2 ? meta[1] : 128);
  }

  TraceRequest request;
  request.id = 1;
  request.key = "inspect";
  std::optional<TrialImage> picture;
  if (r.image) {
    picture.emplace();
    request.input.kind = InputSpec::Kind::image;
    request.input.file = picture->path();
    r.source = "profile";
    r.shape = {1, 3, 480, 640};  // the picture, before the profile's ops
    r.dtype = DType::uint8;
  } else if (r.text) {
    // What run gives a tokenizing profile: text, tokenized by the profile itself.
    request.input.kind = InputSpec::Kind::text;
    request.input.text = "The quick brown fox jumps over the lazy dog.";
    r.source = "profile";
  } else if (!r.inputs.empty()) {
    // Token ids (and a mask, type ids) for each argument, named, as a tokenizer would feed them.
    request.inputs = r.inputs;
    request.inputs_named = true;
    r.shape = r.inputs.front().shape;
    r.dtype = DType::int64;
    r.source = "embedding";
  } else {
    r.shape = pipeline.default_shape();
    r.dtype = pipeline.default_dtype();
    r.source = !profile.input.shape.empty() ? "profile" : !r.shape.empty() ? "metadata" : "none";
    if (!options.shape.empty()) {
      r.shape = options.shape;
      r.source = "--shape";
    }
    if (options.dtype) r.dtype = *options.dtype;
    if (r.shape.empty() && guess.known) {
      // Nothing says what to send: try what the first layer takes.
      r.shape = guess.example({});
      r.dtype = guess.dtype;
      r.source = "first layer";
    }
    request.input.kind = InputSpec::Kind::seed;
    request.input.shape = r.shape;
    request.input.dtype = r.dtype;
  }
  if (r.shape.empty() && !r.image && !r.text) {
    r.error =
        "no input shape: the profile has no [input] shape, the model no inferprof.json, and its first "
        "layer says nothing: give --shape";
    return r;
  }
  RequestRecord record;
  Blob served;
  r.trial_ran = true;
  const Nanos t0 = now_ns();
  try {
    pipeline.serve(request, record, nullptr, &served);
    r.trial_ok = true;
  } catch (const Error& e) {
    r.error = e.what();
  }
  r.trial_ms = static_cast<double>(now_ns() - t0) / 1e6;
  if (served)
    if (auto view = decode_tensor(*served)) {
      r.output_shape = view->shape;
      r.output_dtype = std::string(dtype_name(view->dtype));
    }
  return r;
}

}  // namespace inferprof
