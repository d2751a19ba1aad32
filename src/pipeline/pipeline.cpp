#include "inferprof/pipeline.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <torch/cuda.h>
#include <torch/version.h>
#include <xxhash.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <thread>

#include "cache/hierarchy.hpp"
#include "inferprof/error.hpp"
#include "inferprof/gpu.hpp"
#include "inferprof/printable.hpp"
#include "pipeline/batcher.hpp"
#include "pipeline/inspect_detail.hpp"
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
  // From the model file, printed in headers: escaped once here (no terminal escapes, no bidi controls).
  if (!doc["arch"].get(s)) meta.arch = printable(s);
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

// Zero-copy view of model bytes for torch::jit::load: the archive reader
// asks for ranges at offsets, which a plain istream would serve by copying.
class BytesReader final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit BytesReader(std::shared_ptr<const std::string> bytes) : bytes_(std::move(bytes)) {}
  std::size_t size() const override { return bytes_->size(); }
  std::size_t read(std::uint64_t pos, void* buf, std::size_t n, const char* /*what*/) const override {
    if (pos >= bytes_->size()) return 0;
    n = std::min<std::size_t>(n, bytes_->size() - pos);
    std::memcpy(buf, bytes_->data() + pos, n);
    return n;
  }

 private:
  std::shared_ptr<const std::string> bytes_;
};

struct LoadNames {
  std::uint32_t fetch, verify, deserialize, to_device;
};
const LoadNames& load_names() {
  auto& t = NameTable::global();
  static const LoadNames names{t.intern("fetch"), t.intern("verify"), t.intern("deserialize"), t.intern("to_device")};
  return names;
}

// One tensor as a cache value part; false for a dtype the format lacks.
bool part_of(const at::Tensor& tensor, std::string name, std::vector<TensorPart>& parts,
             std::vector<at::Tensor>& keep) {
  at::Tensor t = tensor.contiguous();
  auto dtype = detail::from_scalar_type(t.scalar_type());
  if (!dtype) return false;
  parts.push_back(TensorPart{std::move(name), *dtype, t.sizes().vec(), t.data_ptr(), t.nbytes()});
  keep.push_back(std::move(t));
  return true;
}

// A model's output as a cache value: a tensor, or a tuple, list or
// string-keyed dict of tensors. Null (served uncached) for anything else.
Blob encode_output(const c10::IValue& out) {
  std::vector<TensorPart> parts;
  std::vector<at::Tensor> keep;
  TensorSet::Kind kind = TensorSet::Kind::single;
  if (out.isTensor()) {
    if (!part_of(out.toTensor(), {}, parts, keep)) return nullptr;
  } else if (out.isTuple() || out.isList()) {
    kind = out.isTuple() ? TensorSet::Kind::tuple : TensorSet::Kind::list;
    const std::vector<c10::IValue> items = out.isTuple() ? out.toTupleRef().elements().vec() : out.toListRef().vec();
    for (const c10::IValue& item : items)
      if (!item.isTensor() || !part_of(item.toTensor(), {}, parts, keep)) return nullptr;
  } else if (out.isGenericDict()) {
    kind = TensorSet::Kind::dict;
    for (const auto& entry : out.toGenericDict())
      if (!entry.key().isString() || !entry.value().isTensor() ||
          !part_of(entry.value().toTensor(), entry.key().toStringRef(), parts, keep))
        return nullptr;
  } else {
    return nullptr;
  }
  if (parts.size() > kMaxTensorSetSize) return nullptr;
  return std::make_shared<const std::string>(encode_tensors(kind, parts));
}

// Preprocessed inputs as one L3 value: one tensor as before, several as a
// list (positional) or a dict (by argument name).
Blob encode_inputs(const detail::Inputs& x) {
  std::vector<TensorPart> parts;
  std::vector<at::Tensor> keep;
  for (std::size_t i = 0; i < x.tensors.size(); ++i)
    if (!part_of(x.tensors[i], x.names.empty() ? std::string() : x.names[i], parts, keep)) return nullptr;
  const TensorSet::Kind kind = !x.names.empty()    ? TensorSet::Kind::dict
                               : parts.size() == 1 ? TensorSet::Kind::single
                                                   : TensorSet::Kind::list;
  return std::make_shared<const std::string>(encode_tensors(kind, parts));
}

// Zero-copy: the tensors keep the blob alive. Models do not write to their input.
std::optional<TensorSet> tensors_of(const Blob& blob, std::vector<at::Tensor>& out) {
  auto set = decode_tensors(*blob);
  out.clear();
  if (!set) return std::nullopt;
  for (const TensorView& view : set->tensors) {
    void* data = const_cast<char*>(view.bytes.data());
    out.push_back(at::from_blob(
        data, view.shape, [keep = blob](void*) {}, at::TensorOptions().dtype(detail::to_scalar_type(view.dtype))));
  }
  return set;
}

detail::Inputs inputs_of(const Blob& blob) {
  detail::Inputs x;
  auto set = tensors_of(blob, x.tensors);
  if (!set) return {};
  if (set->kind == TensorSet::Kind::dict) x.names = set->names;
  x.specs.assign(x.tensors.size(), nullptr);
  return x;
}

struct TierNames {
  std::uint32_t l1, l2, l3;
};
const TierNames& tier_names() {
  static const TierNames names{NameTable::global().intern("l1"), NameTable::global().intern("l2"),
                               NameTable::global().intern("l3")};
  return names;
}

}  // namespace

struct LoadedModel {
  torch::jit::Module module;
  ModelInfo info;
  const c10::FunctionSchema* forward = nullptr;  // its arguments, self first
};
const ModelInfo& model_info(const LoadedModel& model) {
  return model.info;
}
const torch::jit::Module& detail::module_of(const LoadedModel& model) {
  return model.module;
}

namespace {

// torch.save's output, which users mistake for a model file: a zip archive
// with data.pkl but none of TorchScript's constants.pkl (libtorch says it
// failed locating it), or the legacy format, a pickle starting with torch's
// magic number (0x1950a86a20f9469cfc6c as a protocol-2 LONG1).
bool written_by_torch_save(const std::string& bytes, const std::string& load_error) {
  static constexpr std::string_view kLegacyMagic = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";
  if (std::string_view(bytes).substr(0, kLegacyMagic.size()) == kLegacyMagic) return true;
  return bytes.rfind("PK", 0) == 0 && load_error.find("constants.pkl") != std::string::npos &&
         bytes.find("data.pkl") != std::string::npos;
}

ModelHandle deserialize(const ModelBytes& m, const c10::Device& device, RequestRecord* record) {
  auto model = std::make_shared<LoadedModel>();
  ModelInfo& info = model->info;
  info.name = m.name;
  info.version = m.version;
  info.served_by = m.served_by;
  info.path = m.served_by == "file" ? m.name : m.name + "@" + m.version;
  info.file_bytes = static_cast<std::int64_t>(m.bytes->size());
  info.hash = m.version.rfind("xxh3:", 0) == 0
                  ? m.version
                  : fmt::format("xxh3:{:016x}", XXH3_64bits(m.bytes->data(), m.bytes->size()));
  const LoadNames& names = load_names();
  std::optional<ScopedSpan> load;
  if (record) {
    load.emplace(*record, Stage::load);
    // The store measured its own fetch and verify; they precede this call.
    Nanos t = now_ns() - m.fetch_ns - m.verify_ns;
    record->add(names.fetch, load->index(), t, m.fetch_ns);
    if (m.verify_ns) record->add(names.verify, load->index(), t + m.fetch_ns, m.verify_ns);
    record->spans[static_cast<std::size_t>(load->index())].start = t;
  }
  Nanos t0 = now_ns();
  torch::jit::ExtraFilesMap extra{{kMetadataFile, ""}};
  try {
    std::optional<ScopedSpan> span;
    if (record) span.emplace(*record, names.deserialize, load->index());
    model->module = torch::jit::load(std::make_shared<BytesReader>(m.bytes), c10::Device(c10::kCPU), extra);
    model->module.eval();
  } catch (const std::exception& e) {
    std::string why = torch_error_line(e);
    if (written_by_torch_save(*m.bytes, why))
      throw runtime_failure(fmt::format(
          "cannot load model '{}': written by torch.save (a state_dict or a pickled module), not TorchScript: save "
          "it with torch.jit.script(model).save(PATH) or torch.jit.trace(model, example).save(PATH)",
          info.path));
    bool not_archive = why.find("zip archive") != std::string::npos || why.find("constants.pkl") != std::string::npos ||
                       why.find("data.pkl") != std::string::npos;
    throw runtime_failure(fmt::format(
        "cannot load model '{}': {} ({})", info.path,
        not_archive ? "not a TorchScript archive, or a truncated one" : "libtorch could not deserialise it", why));
  }
  {
    // On the CPU this is a no-op; the span is there so GPU runs show the move.
    std::optional<ScopedSpan> span;
    if (record) span.emplace(*record, names.to_device, load->index());
    try {
      if (!device.is_cpu()) model->module.to(device);
    } catch (const std::exception& e) {
      throw runtime_failure(
          fmt::format("cannot move model '{}' to {}: {}", info.path, device.str(), torch_error_line(e)));
    }
  }
  info.load_ms = static_cast<double>(now_ns() - t0 + m.fetch_ns + m.verify_ns) / 1e6;
  info.meta = parse_metadata(extra[kMetadataFile]);
  if (auto method = model->module.find_method("forward")) model->forward = &method->function().getSchema();
  for (const auto& p : model->module.parameters())
    info.parameters += p.numel();
  return model;
}

}  // namespace

struct Pipeline::Impl {
  ModelHandle first;   // what model() describes
  ModelHandle active;  // what serve() uses: read and swapped with std::atomic_load/store
  detail::Preprocessor preprocess;
  PipelineOptions options;
  std::vector<std::int64_t> default_shape;
  DType default_dtype = DType::float32;
  std::string fingerprint;   // of the preprocessing: part of every L3 key
  std::string profile_name;  // not suggested again when the model rejects an input
  // cuda: the device, and the tracer every request and stage reports to.
  c10::Device device{c10::kCPU};
  std::unique_ptr<gpu::Tracer> tracer;
  GpuInfo gpu_info;

  detail::Inputs prepare(const TraceRequest& request, RequestRecord& record);
  // On cuda: h2d, compute and d2h, each synchronised so its host span holds
  // its own work; `tracer` null for work outside a request (verify).
  c10::IValue forward(LoadedModel& model, const TraceRequest& request, const detail::Inputs& x, RequestRecord& record,
                      bool record_ops, gpu::Tracer* tracer);
  c10::IValue run_module(LoadedModel& model, const TraceRequest& request, const detail::Inputs& x,
                         RequestRecord& record, bool record_ops, std::int32_t compute_span);
  // A request's model run: forward() alone, or with a batcher its share of a batch's.
  c10::IValue compute(LoadedModel& model, const TraceRequest& request, const detail::Inputs& x, RequestRecord& record,
                      gpu::Tracer* tracer);
  // One batch's forward (on the leader's thread, recorded in its record): the
  // inputs stacked along dim 0, the output split back into one per request.
  std::vector<c10::IValue> run_batch(LoadedModel& model, const TraceRequest& leader,
                                     const std::vector<const detail::Inputs*>& batch, RequestRecord& record,
                                     gpu::Tracer* tracer);
  std::unique_ptr<detail::Batcher<detail::Inputs, c10::IValue>> batcher;  // max_batch > 1
  void set_up_cuda();
  ModelHandle pick(const ModelHandle& model) const { return model ? model : std::atomic_load(&active); }

  Impl(const Profile& profile, PipelineOptions opts)
      : preprocess(profile.preprocess, opts.trace_path, profile.source), options(std::move(opts)) {}
};

Pipeline::Pipeline(const std::string& model_path, const Profile& profile, const PipelineOptions& options)
    : Pipeline(read_model_file(model_path), profile, options) {}

Pipeline::Pipeline(const ModelBytes& first, const Profile& profile, const PipelineOptions& options)
    : impl_(std::make_unique<Impl>(profile, options)) {
  if (options.device != "cpu" && !gpu::kSupported)
    throw bad_input(fmt::format("device '{}': this build has no CUDA support; {}", options.device, gpu::kRebuildHint));
  if (options.device != "cpu") impl_->set_up_cuda();
  impl_->first = deserialize(first, impl_->device, nullptr);
  impl_->active = impl_->first;
  const ModelInfo& info = impl_->first->info;
  impl_->default_shape = !profile.input.shape.empty() ? profile.input.shape : info.meta.input_shape;
  impl_->default_dtype = profile.input.dtype.value_or(info.meta.input_dtype.value_or(DType::float32));
  impl_->fingerprint = profile.preprocess_fingerprint();
  impl_->profile_name = profile.name;
  if (options.record_ops) detail::OpRecorder::install();
  if (options.max_batch > 1)
    impl_->batcher = std::make_unique<detail::Batcher<detail::Inputs, c10::IValue>>(
        static_cast<std::size_t>(options.max_batch), options.batch_delay_ns);
}

ModelHandle Pipeline::load(const ModelBytes& bytes, RequestRecord* record) const {
  return deserialize(bytes, impl_->device, record);
}
void Pipeline::activate(ModelHandle model) {
  std::atomic_store(&impl_->active, std::move(model));
}
ModelHandle Pipeline::active() const {
  return std::atomic_load(&impl_->active);
}

void Pipeline::Impl::set_up_cuda() {
  int index = 0;
  if (options.device.rfind("cuda:", 0) == 0) {
    try {
      index = std::stoi(options.device.substr(5));
    } catch (const std::exception&) {
      index = -1;
    }
    if (index < 0) throw bad_input(fmt::format("device '{}': expected cuda or cuda:N", options.device));
  }
  gpu_info.name = gpu::device_name(index);  // exit 3 when no device is usable
  if (!torch::cuda::is_available())
    throw runtime_failure(fmt::format("device '{}': CUDA sees {} but libtorch reports no usable CUDA device",
                                      options.device, gpu_info.name));
  device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
  gpu_info.enabled = true;
  gpu_info.pinned = options.pinned;
  gpu_info.trace = options.gpu_trace;
  // Before tracing starts: these copies are not any request's.
  const gpu::CopyPeak peak = gpu::measure_copy_peak(index, 64u << 20);
  gpu_info.peak_h2d_pinned_gbps = peak.h2d_pinned;
  gpu_info.peak_h2d_pageable_gbps = peak.h2d_pageable;
  gpu_info.peak_d2h_pinned_gbps = peak.d2h_pinned;
  gpu_info.peak_d2h_pageable_gbps = peak.d2h_pageable;
  tracer = gpu::make_tracer(gpu::TracerOptions{index, options.gpu_trace});
}

namespace {
void add_stats(GpuInfo& g, const gpu::TracerStats& s) {
  g.records += s.records;
  g.dropped += s.dropped;
  g.unattributed += s.unattributed;
}
}  // namespace

GpuInfo Pipeline::finish_gpu() {
  if (impl_->tracer) add_stats(impl_->gpu_info, impl_->tracer->finish());
  return impl_->gpu_info;
}

void Pipeline::set_gpu_trace(bool on) {
  Impl& m = *impl_;
  if (!m.tracer || m.options.gpu_trace == on) return;
  add_stats(m.gpu_info, m.tracer->finish());
  m.tracer.reset();  // the old one stops CUPTI before the new one starts it
  m.options.gpu_trace = on;
  m.gpu_info.trace = on;
  m.tracer = gpu::make_tracer(gpu::TracerOptions{m.device.index(), on});
}

Pipeline::~Pipeline() = default;

const ModelInfo& Pipeline::model() const noexcept {
  return impl_->first->info;
}
std::vector<std::int64_t> Pipeline::default_shape() const {
  return impl_->default_shape;
}
DType Pipeline::default_dtype() const {
  return impl_->default_dtype;
}

detail::Inputs Pipeline::Impl::prepare(const TraceRequest& request, RequestRecord& record) {
  detail::Inputs x;
  {
    ScopedSpan span(record, Stage::input);
    try {
      x = detail::make_inputs(request, default_shape, default_dtype, options.trace_path);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw bad_input(fmt::format("request {}: cannot build its input: {}", request.id, torch_error_line(e)));
    }
  }
  ScopedSpan span(record, Stage::preprocess);
  return preprocess.run(std::move(x), request, record, span.index());
}

namespace {

std::string describe(const at::Tensor& t) {
  auto dtype = detail::from_scalar_type(t.scalar_type());
  return fmt::format("{} {}", format_shape(t.sizes().vec()), dtype ? dtype_name(*dtype) : "tensor");
}

// The forward's arguments (self excluded), for messages: "ids, mask".
std::string argument_list(const c10::FunctionSchema& schema) {
  std::string out;
  for (std::size_t i = 1; i < schema.arguments().size(); ++i)
    out += (i > 1 ? ", " : "") + schema.arguments()[i].name();
  return out;
}

// The forward's positional arguments: the inputs in order, or placed by
// name. Names the model lacks, a missing argument or too many inputs are the
// trace's fault: Error(bad_input) naming its line.
std::vector<c10::IValue> arguments(const LoadedModel& model, const TraceRequest& request, const detail::Inputs& x,
                                   const std::string& trace_path) {
  std::vector<c10::IValue> args;
  const c10::FunctionSchema* schema = model.forward;
  if (!schema) {
    args.assign(x.tensors.begin(), x.tensors.end());
    return args;
  }
  const auto& params = schema->arguments();
  const std::size_t count = params.empty() ? 0 : params.size() - 1;  // without self
  const auto fail = [&](const std::string& what) {
    throw bad_input(fmt::format("{}: {} (the model's forward takes {})", detail::request_where(trace_path, request),
                                what, count == 0 ? std::string("no inputs") : argument_list(*schema)));
  };
  if (x.names.empty()) {
    if (x.tensors.size() > count && !schema->is_vararg())
      fail(fmt::format("{} inputs given, the model takes {}", x.tensors.size(), count));
    for (std::size_t i = x.tensors.size(); i < count; ++i)
      if (!params[i + 1].default_value())
        fail(fmt::format("{} input{} given; '{}' is missing", x.tensors.size(), x.tensors.size() == 1 ? "" : "s",
                         params[i + 1].name()));
    args.assign(x.tensors.begin(), x.tensors.end());
    return args;
  }
  std::vector<int> at(count, -1);
  for (std::size_t i = 0; i < x.names.size(); ++i) {
    std::size_t p = 0;
    while (p < count && params[p + 1].name() != x.names[i])
      ++p;
    if (p == count) fail(fmt::format("input '{}': the model has no such argument", x.names[i]));
    at[p] = static_cast<int>(i);
  }
  std::size_t last = 0;  // one past the last argument given
  for (std::size_t p = 0; p < count; ++p)
    if (at[p] >= 0) last = p + 1;
  for (std::size_t p = 0; p < count; ++p) {
    if (at[p] >= 0) {
      if (p < last) args.emplace_back(x.tensors[static_cast<std::size_t>(at[p])]);
    } else if (!params[p + 1].default_value()) {
      fail(fmt::format("input '{}' is missing", params[p + 1].name()));
    } else if (p < last) {
      args.push_back(*params[p + 1].default_value());
    }
  }
  return args;
}

c10::IValue to_cpu(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().to(at::kCPU);
  if (v.isTuple()) {
    std::vector<c10::IValue> items;
    for (const auto& item : v.toTupleRef().elements())
      items.push_back(to_cpu(item));
    return c10::ivalue::Tuple::create(std::move(items));
  }
  if (v.isGenericDict()) {
    auto dict = v.toGenericDict().copy();
    for (const auto& entry : dict)
      dict.insert_or_assign(entry.key(), to_cpu(entry.value()));
    return dict;
  }
  if (v.isTensorList()) {
    auto list = v.toTensorList().copy();
    for (std::size_t i = 0; i < list.size(); ++i)
      list.set(i, list.get(i).to(at::kCPU));
    return list;
  }
  return v;
}

}  // namespace

c10::IValue Pipeline::Impl::run_module(LoadedModel& model, const TraceRequest& request, const detail::Inputs& x,
                                       RequestRecord& record, bool record_ops, std::int32_t compute_span) {
  std::vector<c10::IValue> args = arguments(model, request, x, options.trace_path);
  detail::OpRecorder::Scope ops(record_ops, record, compute_span);
  try {
    return model.module.forward(std::move(args));
  } catch (const std::exception& e) {
    const auto& meta = model.info.meta;
    // One tensor of a shape or dtype the first layer cannot take: say what it
    // takes and which flag gives it, not libtorch's text about weights.
    if (x.tensors.size() == 1) {
      const at::Tensor& t = x.tensors.front();
      if (auto dtype = detail::from_scalar_type(t.scalar_type())) {
        const std::string advice =
            detail::input_advice(model.module, t.sizes().vec(), *dtype, meta.input_shape, profile_name);
        if (!advice.empty())
          throw runtime_failure(fmt::format("{}: the model rejected the input {}: {}",
                                            detail::request_where(options.trace_path, request), describe(t), advice));
      }
    }
    std::string expected;
    if (!meta.input_shape.empty())
      expected = fmt::format("; the model expects {} {}", format_shape(meta.input_shape),
                             meta.input_dtype ? dtype_name(*meta.input_dtype) : "");
    std::string given;
    for (std::size_t i = 0; i < x.tensors.size(); ++i)
      given += fmt::format("{}{}{}", i ? ", " : "", x.names.empty() ? "" : x.names[i] + " ", describe(x.tensors[i]));
    throw runtime_failure(fmt::format("{}: the model rejected its input{} {}{}: {}",
                                      detail::request_where(options.trace_path, request),
                                      x.tensors.size() == 1 ? " of shape" : "s", given, expected, torch_error_line(e)));
  }
}

c10::IValue Pipeline::Impl::forward(LoadedModel& model, const TraceRequest& request, const detail::Inputs& x,
                                    RequestRecord& record, bool record_ops, gpu::Tracer* t) {
  if (!device.is_cuda()) {
    ScopedSpan span(record, Stage::compute);
    return run_module(model, request, x, record, record_ops, span.index());
  }
  const auto sync = [&] { torch::cuda::synchronize(device.index()); };
  detail::Inputs on_device = x;
  {
    ScopedSpan span(record, Stage::h2d);
    gpu::StageScope stage(t, Stage::h2d);
    // Pinned: a page-locked staging copy, then an asynchronous DMA copy.
    for (at::Tensor& v : on_device.tensors)
      v = options.pinned ? v.pin_memory().to(device, /*non_blocking=*/true) : v.to(device);
    sync();
  }
  c10::IValue out;
  {
    ScopedSpan span(record, Stage::compute);
    gpu::StageScope stage(t, Stage::compute);
    out = run_module(model, request, on_device, record, record_ops, span.index());
    sync();
  }
  ScopedSpan span(record, Stage::d2h);
  gpu::StageScope stage(t, Stage::d2h);
  out = to_cpu(out);
  sync();
  return out;
}

namespace {

// Which requests may share a batch: the same model version, input names,
// dtypes and shapes past dim 0. Empty: this request runs alone (no inputs, or
// one without a dim 0 to stack along).
std::string batch_kind(const LoadedModel& model, const detail::Inputs& x) {
  if (x.tensors.empty()) return {};
  std::string kind = fmt::format("{}", static_cast<const void*>(&model));
  for (std::size_t i = 0; i < x.tensors.size(); ++i) {
    const at::Tensor& t = x.tensors[i];
    if (t.dim() == 0) return {};
    kind += fmt::format("|{}:{}:", x.names.empty() ? "" : x.names[i], static_cast<int>(t.scalar_type()));
    for (std::int64_t d = 1; d < t.dim(); ++d)
      kind += fmt::format("{},", t.size(d));
  }
  return kind;
}

[[noreturn]] void cannot_split(std::size_t requests, const std::string& why) {
  throw runtime_failure(
      fmt::format("--max-batch: the model ran for a batch of {} requests stacked along dim 0, but {}: it does not "
                  "batch along dim 0; run without --max-batch",
                  requests, why));
}

// The rows [offset, offset + rows) of each tensor in a batch's output.
std::vector<c10::IValue> split_output(const c10::IValue& out, const std::vector<std::int64_t>& rows) {
  std::int64_t total = 0;
  for (std::int64_t r : rows)
    total += r;
  const auto split_tensor = [&](const at::Tensor& t) {
    if (t.dim() == 0 || t.size(0) != total)
      cannot_split(rows.size(), fmt::format("its output {} has {} rows for {} input rows",
                                            format_shape(t.sizes().vec()), t.dim() == 0 ? 0 : t.size(0), total));
    std::vector<at::Tensor> parts;
    std::int64_t offset = 0;
    for (std::int64_t r : rows) {
      parts.push_back(t.narrow(0, offset, r));
      offset += r;
    }
    return parts;
  };
  std::vector<c10::IValue> split(rows.size());
  if (out.isTensor()) {
    auto parts = split_tensor(out.toTensor());
    for (std::size_t i = 0; i < rows.size(); ++i)
      split[i] = std::move(parts[i]);
  } else if (out.isTuple() || out.isList()) {
    const std::vector<c10::IValue> items = out.isTuple() ? out.toTupleRef().elements().vec() : out.toListRef().vec();
    std::vector<std::vector<c10::IValue>> per(rows.size());
    for (const c10::IValue& item : items) {
      if (!item.isTensor()) cannot_split(rows.size(), "its output holds a value that is not a tensor");
      auto parts = split_tensor(item.toTensor());
      for (std::size_t i = 0; i < rows.size(); ++i)
        per[i].emplace_back(std::move(parts[i]));
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (out.isTuple()) {
        split[i] = c10::ivalue::Tuple::create(std::move(per[i]));
      } else {
        c10::List<at::Tensor> list;
        for (auto& v : per[i])
          list.push_back(v.toTensor());
        split[i] = list;
      }
    }
  } else if (out.isGenericDict()) {
    for (std::size_t i = 0; i < rows.size(); ++i)
      split[i] = out.toGenericDict().copy();  // replaced value by value below
    for (const auto& entry : out.toGenericDict()) {
      if (!entry.value().isTensor()) cannot_split(rows.size(), "its output holds a value that is not a tensor");
      auto parts = split_tensor(entry.value().toTensor());
      for (std::size_t i = 0; i < rows.size(); ++i)
        split[i].toGenericDict().insert_or_assign(entry.key(), std::move(parts[i]));
    }
  } else {
    cannot_split(rows.size(), fmt::format("its output is a {}, not tensors", out.tagKind()));
  }
  return split;
}

}  // namespace

std::vector<c10::IValue> Pipeline::Impl::run_batch(LoadedModel& model, const TraceRequest& leader,
                                                   const std::vector<const detail::Inputs*>& batch,
                                                   RequestRecord& record, gpu::Tracer* t) {
  if (batch.size() == 1) return {forward(model, leader, *batch.front(), record, false, t)};
  detail::Inputs stacked = *batch.front();
  std::vector<std::int64_t> rows;
  for (const detail::Inputs* x : batch)
    rows.push_back(x->tensors.front().size(0));
  for (std::size_t i = 0; i < stacked.tensors.size(); ++i) {
    std::vector<at::Tensor> parts;
    for (const detail::Inputs* x : batch)
      parts.push_back(x->tensors[i]);
    stacked.tensors[i] = at::cat(parts, 0);
  }
  c10::IValue out;
  try {
    out = forward(model, leader, stacked, record, false, t);
  } catch (const Error& e) {
    // The shapes it names are the batch's: say so, and how to tell whether batching is the cause.
    throw Error(e.code(), fmt::format("{} (--max-batch: a batch of {} requests stacked along dim 0; a model that "
                                      "does not take batches fails so: run without --max-batch)",
                                      e.what(), batch.size()));
  }
  return split_output(out, rows);
}

c10::IValue Pipeline::Impl::compute(LoadedModel& model, const TraceRequest& request, const detail::Inputs& x,
                                    RequestRecord& record, gpu::Tracer* t) {
  const std::string kind = batcher ? batch_kind(model, x) : std::string();
  if (kind.empty()) {
    record.batch = 1;
    return forward(model, request, x, record, options.record_ops, t);
  }
  auto served =
      batcher->submit(kind, x, [&](const std::vector<const detail::Inputs*>& batch, std::vector<Span>& spans) {
        const std::size_t first = record.spans.size();
        auto outputs = run_batch(model, request, batch, record, t);
        // The stages the batch's forward recorded (h2d, compute, d2h), for its other requests.
        for (std::size_t i = first; i < record.spans.size(); ++i)
          if (record.spans[i].parent < 0) spans.push_back(record.spans[i]);
        return outputs;
      });
  record.batch = static_cast<std::uint32_t>(served.size);
  record.add(name_id(Stage::batch_wait), -1, served.joined, served.started - served.joined);
  for (const Span& s : served.spans)
    record.add(s.name, -1, s.start, s.dur);
  return std::move(served.output);
}

namespace {
// Brackets a request for the GPU tracer; a request that throws is cancelled.
class TracedRequest {
 public:
  TracedRequest(gpu::Tracer* t, RequestRecord& r) : tracer_(t), record_(r) {
    if (tracer_) tracer_->begin_request(record_);
  }
  ~TracedRequest() {
    if (tracer_) tracer_->cancel_request();
  }
  void end() {
    gpu::Tracer* t = tracer_;
    tracer_ = nullptr;
    if (t) t->end_request(record_);
  }
  TracedRequest(const TracedRequest&) = delete;
  TracedRequest& operator=(const TracedRequest&) = delete;

 private:
  gpu::Tracer* tracer_;
  RequestRecord& record_;
};
}  // namespace

void Pipeline::serve(const TraceRequest& request, RequestRecord& record, const CacheSet* caches, Blob* served,
                     const ModelHandle& use) {
  TracedRequest traced(impl_->tracer.get(), record);
  serve_traced(request, record, caches, served, use);
  traced.end();
}

void Pipeline::serve_traced(const TraceRequest& request, RequestRecord& record, const CacheSet* caches, Blob* served,
                            const ModelHandle& use) {
  c10::InferenceMode inference;
  Impl& m = *impl_;
  gpu::Tracer* const t = m.tracer.get();
  const ModelHandle model = m.pick(use);
  record.model_version = model->info.version;
  if (!caches || !caches->any()) {
    c10::IValue out = m.compute(*model, request, m.prepare(request, record), record, t);
    if (served) *served = encode_output(out);
    return;
  }
  struct Steps {
    Impl& m;
    LoadedModel& model;
    const TraceRequest& request;
    RequestRecord& record;
    const CacheSet& caches;
    Blob* served;
    gpu::Tracer* tracer;
    const TierNames& names = tier_names();
    std::int32_t cache_span = -1;  // the open `cache` phase's span
    std::optional<CacheKey> rkey{}, pkey{};

    CacheTier* tier(CacheLevel l) const {
      return l == CacheLevel::l1 ? caches.l1 : l == CacheLevel::l2 ? caches.l2 : caches.l3;
    }
    bool has(CacheLevel l) const { return tier(l) != nullptr; }
    struct Phase {
      ScopedSpan span;
      std::int32_t& open;
      Phase(RequestRecord& r, std::int32_t& o) : span(r, Stage::cache), open(o) { open = span.index(); }
      ~Phase() { open = -1; }
    };
    Phase phase() { return Phase(record, cache_span); }
    ScopedSpan at(CacheLevel l) {
      const std::uint32_t name = l == CacheLevel::l1 ? names.l1 : l == CacheLevel::l2 ? names.l2 : names.l3;
      return ScopedSpan(record, name, cache_span);
    }
    const CacheKey& result_key_() {
      if (!rkey) rkey = result_key(model.info.version, request.key);
      return *rkey;
    }
    Blob get_result(CacheLevel l) { return tier(l)->get(result_key_(), now_ns()); }
    void put_result(CacheLevel l, const Blob& b) { tier(l)->put(result_key_(), b, now_ns()); }
    // The preprocessed inputs (one blob holding all); empty: not cached (an L3
    // miss, or a blob that does not decode).
    std::optional<detail::Inputs> get_input() {
      pkey = preprocessed_key(m.fingerprint, request.key);
      Blob hit = caches.l3->get(*pkey, now_ns());
      detail::Inputs x = hit ? inputs_of(hit) : detail::Inputs();
      return x.empty() ? std::nullopt : std::optional<detail::Inputs>(std::move(x));
    }
    std::optional<detail::Inputs> prepare() { return m.prepare(request, record); }
    void put_input(const std::optional<detail::Inputs>& x) {
      if (Blob blob = encode_inputs(*x)) caches.l3->put(*pkey, std::move(blob), now_ns());
    }
    c10::IValue compute(const std::optional<detail::Inputs>& x) {
      return m.compute(model, request, *x, record, tracer);
    }
    // A tensor, or a tuple, list or dict of them; other outputs are served uncached.
    bool cacheable(const c10::IValue& out) const {
      return out.isTensor() || out.isTuple() || out.isList() || out.isGenericDict();
    }
    bool wants_result() const { return served != nullptr; }
    Blob encode(const c10::IValue& out) const { return encode_output(out); }
    void serve(Blob b) {
      if (served) *served = std::move(b);
    }
  } steps{m, *model, request, record, *caches, served, t};
  record.cache_outcome = walk_hierarchy(steps);
}

double Pipeline::verify(const TraceRequest& request, const Blob& served, const ModelHandle& use) {
  c10::InferenceMode inference;
  RequestRecord scratch;
  const ModelHandle model = impl_->pick(use);
  const Blob fresh_blob =
      encode_output(impl_->forward(*model, request, impl_->prepare(request, scratch), scratch, false, nullptr));
  if (!served || !fresh_blob) return std::numeric_limits<double>::infinity();
  std::vector<at::Tensor> cached, fresh;
  const auto cached_set = tensors_of(served, cached);
  const auto fresh_set = tensors_of(fresh_blob, fresh);
  if (!cached_set || !fresh_set || cached_set->kind != fresh_set->kind || cached_set->names != fresh_set->names)
    return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (std::size_t i = 0; i < cached.size(); ++i) {
    if (cached[i].sizes() != fresh[i].sizes() || cached[i].scalar_type() != fresh[i].scalar_type())
      return std::numeric_limits<double>::infinity();
    if (cached[i].numel() == 0) continue;
    const double d = (cached[i].to(at::kDouble) - fresh[i].to(at::kDouble)).abs().max().item<double>();
    if (std::isnan(d)) return d;
    worst = std::max(worst, d);
  }
  return worst;
}

Pipeline::ModelIo Pipeline::model_io(const TraceRequest& request, bool with_outputs, const ModelHandle& use) {
  c10::InferenceMode inference;
  RequestRecord scratch;
  const ModelHandle model = impl_->pick(use);
  const detail::Inputs x = impl_->prepare(request, scratch);
  detail::Inputs named = x;
  if (named.names.empty()) {
    // Positional inputs take the names of the arguments they fill.
    const c10::FunctionSchema* schema = model->forward;
    for (std::size_t i = 0; i < x.tensors.size(); ++i)
      named.names.push_back(schema && i + 1 < schema->arguments().size() ? schema->arguments()[i + 1].name()
                                                                         : fmt::format("input{}", i));
  }
  ModelIo io;
  io.inputs = encode_inputs(named);
  if (with_outputs) io.outputs = encode_output(impl_->forward(*model, request, x, scratch, false, nullptr));
  return io;
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

std::string libtorch_version() {
  return TORCH_VERSION;
}

}  // namespace inferprof
