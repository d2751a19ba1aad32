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

Blob encode_output(const at::Tensor& tensor) {
  at::Tensor t = tensor.contiguous();
  auto dtype = detail::from_scalar_type(t.scalar_type());
  if (!dtype) return nullptr;  // an exotic dtype is served uncached
  return std::make_shared<const std::string>(encode_tensor(*dtype, t.sizes().vec(), t.data_ptr(), t.nbytes()));
}

// Zero-copy: the tensor keeps the blob alive. Models do not write to their input.
at::Tensor tensor_of(const Blob& blob) {
  auto view = decode_tensor(*blob);
  if (!view) return {};
  void* data = const_cast<char*>(view->bytes.data());
  return at::from_blob(
      data, view->shape, [keep = blob](void*) {}, at::TensorOptions().dtype(detail::to_scalar_type(view->dtype)));
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
};
const ModelInfo& model_info(const LoadedModel& model) {
  return model.info;
}
const torch::jit::Module& detail::module_of(const LoadedModel& model) {
  return model.module;
}

namespace {

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

  at::Tensor prepare(const TraceRequest& request, RequestRecord& record);
  // On cuda: h2d, compute and d2h, each synchronised so its host span holds
  // its own work; `tracer` null for work outside a request (verify).
  at::Tensor forward(LoadedModel& model, const TraceRequest& request, const at::Tensor& x, RequestRecord& record,
                     bool record_ops, gpu::Tracer* tracer);
  at::Tensor run_module(LoadedModel& model, const TraceRequest& request, const at::Tensor& x, RequestRecord& record,
                        bool record_ops, std::int32_t compute_span);
  void set_up_cuda();
  ModelHandle pick(const ModelHandle& model) const { return model ? model : std::atomic_load(&active); }

  Impl(const std::vector<PreprocessOp>& ops, PipelineOptions opts)
      : preprocess(ops, opts.trace_path), options(std::move(opts)) {}
};

Pipeline::Pipeline(const std::string& model_path, const Profile& profile, const PipelineOptions& options)
    : Pipeline(read_model_file(model_path), profile, options) {}

Pipeline::Pipeline(const ModelBytes& first, const Profile& profile, const PipelineOptions& options)
    : impl_(std::make_unique<Impl>(profile.preprocess, options)) {
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

at::Tensor Pipeline::Impl::prepare(const TraceRequest& request, RequestRecord& record) {
  at::Tensor x;
  {
    ScopedSpan span(record, Stage::input);
    try {
      x = detail::make_input(request, default_shape, default_dtype, options.trace_path);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw bad_input(fmt::format("request {}: cannot build its input: {}", request.id, torch_error_line(e)));
    }
  }
  ScopedSpan span(record, Stage::preprocess);
  return preprocess.run(std::move(x), request, record, span.index());
}

at::Tensor Pipeline::Impl::run_module(LoadedModel& model, const TraceRequest& request, const at::Tensor& x,
                                      RequestRecord& record, bool record_ops, std::int32_t compute_span) {
  detail::OpRecorder::Scope ops(record_ops, record, compute_span);
  try {
    c10::IValue out = model.module.forward({x});
    return out.isTensor() ? out.toTensor() : at::Tensor();
  } catch (const std::exception& e) {
    const auto& meta = model.info.meta;
    auto dtype = detail::from_scalar_type(x.scalar_type());
    const std::string given =
        fmt::format("{} {}", format_shape(x.sizes().vec()), dtype ? dtype_name(*dtype) : "tensor");
    // A shape or dtype the first layer cannot take: say what it takes and
    // which flag gives it, not libtorch's text about weights.
    if (dtype) {
      const std::string advice =
          detail::input_advice(model.module, x.sizes().vec(), *dtype, meta.input_shape, profile_name);
      if (!advice.empty())
        throw runtime_failure(fmt::format("{}: the model rejected the input {}: {}",
                                          detail::request_where(options.trace_path, request), given, advice));
    }
    std::string expected;
    if (!meta.input_shape.empty())
      expected = fmt::format("; the model expects {} {}", format_shape(meta.input_shape),
                             meta.input_dtype ? dtype_name(*meta.input_dtype) : "");
    throw runtime_failure(fmt::format("request {}: the model rejected its input of shape {}{}: {}", request.id, given,
                                      expected, torch_error_line(e)));
  }
}

at::Tensor Pipeline::Impl::forward(LoadedModel& model, const TraceRequest& request, const at::Tensor& x,
                                   RequestRecord& record, bool record_ops, gpu::Tracer* t) {
  if (!device.is_cuda()) {
    ScopedSpan span(record, Stage::compute);
    return run_module(model, request, x, record, record_ops, span.index());
  }
  const auto sync = [&] { torch::cuda::synchronize(device.index()); };
  at::Tensor on_device;
  {
    ScopedSpan span(record, Stage::h2d);
    gpu::StageScope stage(t, Stage::h2d);
    // Pinned: a page-locked staging copy, then an asynchronous DMA copy.
    on_device = options.pinned ? x.pin_memory().to(device, /*non_blocking=*/true) : x.to(device);
    sync();
  }
  at::Tensor out;
  {
    ScopedSpan span(record, Stage::compute);
    gpu::StageScope stage(t, Stage::compute);
    out = run_module(model, request, on_device, record, record_ops, span.index());
    sync();
  }
  if (!out.defined()) return out;
  ScopedSpan span(record, Stage::d2h);
  gpu::StageScope stage(t, Stage::d2h);
  out = out.to(at::kCPU);
  sync();
  return out;
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
    at::Tensor out = m.forward(*model, request, m.prepare(request, record), record, m.options.record_ops, t);
    if (served) *served = out.defined() ? encode_output(out) : nullptr;
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
    // The preprocessed input; empty: not cached (an L3 miss, or a blob that does not decode).
    std::optional<at::Tensor> get_input() {
      pkey = preprocessed_key(m.fingerprint, request.key);
      Blob hit = caches.l3->get(*pkey, now_ns());
      at::Tensor x = hit ? tensor_of(hit) : at::Tensor();
      return x.defined() ? std::optional<at::Tensor>(std::move(x)) : std::nullopt;
    }
    std::optional<at::Tensor> prepare() { return m.prepare(request, record); }
    void put_input(const std::optional<at::Tensor>& x) {
      if (Blob blob = encode_output(*x)) caches.l3->put(*pkey, std::move(blob), now_ns());
    }
    at::Tensor compute(const std::optional<at::Tensor>& x) {
      return m.forward(model, request, *x, record, m.options.record_ops, tracer);
    }
    bool cacheable(const at::Tensor& out) const { return out.defined(); }
    bool wants_result() const { return served != nullptr; }
    Blob encode(const at::Tensor& out) const { return encode_output(out); }
    void serve(Blob b) {
      if (served) *served = std::move(b);
    }
  } steps{m, *model, request, record, *caches, served, t};
  record.cache_outcome = std::string(outcome_name(walk_hierarchy(steps)));
}

double Pipeline::verify(const TraceRequest& request, const Blob& served, const ModelHandle& use) {
  c10::InferenceMode inference;
  RequestRecord scratch;
  const ModelHandle model = impl_->pick(use);
  at::Tensor fresh = impl_->forward(*model, request, impl_->prepare(request, scratch), scratch, false, nullptr);
  if (!served || !fresh.defined()) return std::numeric_limits<double>::infinity();
  at::Tensor cached = tensor_of(served);
  if (!cached.defined() || cached.sizes() != fresh.sizes() || cached.scalar_type() != fresh.scalar_type())
    return std::numeric_limits<double>::infinity();
  if (cached.numel() == 0) return 0;
  return (cached.to(at::kDouble) - fresh.to(at::kDouble)).abs().max().item<double>();
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
