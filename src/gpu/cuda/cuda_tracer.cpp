// CUPTI activity tracing and NVTX ranges for the pipeline's requests and
// stages. Compiled only when CMake found CUDA, CUPTI and NVTX.
//
// Every request and stage pushes an external correlation id; CUPTI then emits,
// for each CUDA API call, an EXTERNAL_CORRELATION record mapping the call's
// correlation id to ours, and each kernel/memcpy/memset record carries the
// call's correlation id. Joining the two puts every activity on its request.
#include "gpu/cuda/cuda_tracer.hpp"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cxxabi.h>
#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "inferprof/error.hpp"

namespace inferprof::gpu::cuda {
namespace {

// The one checking helper for CUPTI and the CUDA runtime: names the call and
// its status. Throws Error(runtime).
void check(CUptiResult status, const char* call) {
  if (status == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  if (cuptiGetResultString(status, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown CUPTI error";
  throw runtime_failure(fmt::format("CUPTI: {} failed: {} ({})", call, text, static_cast<int>(status)));
}
void check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  throw runtime_failure(
      fmt::format("CUDA: {} failed: {} ({})", call, cudaGetErrorString(status), static_cast<int>(status)));
}
// CUPTI_CHECK(call): the call's text and status in the error. Also used for
// CUDA runtime calls (overloaded on the status type).
#define CUPTI_CHECK(call) ::inferprof::gpu::cuda::check((call), #call)

constexpr std::size_t kBufferBytes = 8u << 20;  // per activity buffer
constexpr std::size_t kAlign = 8;
constexpr CUpti_ExternalCorrelationKind kExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
};

std::string demangle(const char* name) {
  if (name == nullptr) return "[unnamed kernel]";
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = (status == 0 && out != nullptr) ? out : name;
  std::free(out);
  // Template-heavy kernel names run to kilobytes; the flame graph needs the head.
  constexpr std::size_t kMaxName = 160;
  if (s.size() > kMaxName) s = s.substr(0, kMaxName) + "...";
  return s;
}

// Process-wide CUPTI state: CUPTI's buffer callbacks are plain C functions,
// so there is one session, shared by the tracers a process creates in turn.
class Session {
 public:
  static Session& instance() {
    static Session s;
    return s;
  }

  // Buffer size and callbacks, once. The device buffer size applies to CUDA
  // contexts created afterwards, so this runs before the first CUDA call
  // that creates one (the copy-peak measurement, or the tracer).
  void configure() {
    std::lock_guard<std::mutex> lock(start_mutex_);
    if (registered_) return;
    // Larger device-side buffers so that a long burst of kernels is not
    // dropped before the host flushes.
    std::size_t device_buffer = 32u << 20;
    std::size_t size = sizeof(device_buffer);
    CUPTI_CHECK(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &device_buffer));
    CUPTI_CHECK(cuptiActivityRegisterCallbacks(&Session::buffer_requested, &Session::buffer_completed));
    registered_ = true;
  }

  void start() {
    configure();
    std::lock_guard<std::mutex> lock(start_mutex_);
    calibrate();
    for (CUpti_ActivityKind k : kKinds)
      CUPTI_CHECK(cuptiActivityEnable(k));
  }

  void stop() {
    std::lock_guard<std::mutex> lock(start_mutex_);
    CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    for (CUpti_ActivityKind k : kKinds)
      CUPTI_CHECK(cuptiActivityDisable(k));
  }

  // Converts CUPTI's clock to steady_clock: an offset measured between two
  // host reads (CUPTI timestamps are ns on their own monotonic clock).
  void calibrate() {
    std::uint64_t ts = 0;
    const Nanos a = now_ns();
    CUPTI_CHECK(cuptiGetTimestamp(&ts));
    const Nanos b = now_ns();
    offset_.store(a + (b - a) / 2 - static_cast<Nanos>(ts));
  }

  void flush(bool forced) {
    CUPTI_CHECK(cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0));
    rethrow_callback_error();
  }

  std::vector<Activity> take(std::uint64_t token) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Device records parked for two request ends without their correlation
    // record came from CUDA calls outside any request (libtorch's own).
    for (auto it = parked_.begin(); it != parked_.end();) {
      if (++it->second.age > 2) {
        ++stats_.unattributed;
        it = parked_.erase(it);
      } else {
        ++it;
      }
    }
    auto out = router_.take(token);
    if (correlation_.size() > (1u << 20)) correlation_.clear();  // old calls; keeps memory flat
    return out;
  }

  TracerStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    TracerStats s = stats_;
    s.unattributed += router_.unattributed() + parked_.size();
    return s;
  }
  void drop_pending() {
    std::lock_guard<std::mutex> lock(mutex_);
    router_.drop_all();
  }

  std::uint32_t intern(const char* mangled) {
    // Called from the buffer callback only, under mutex_.
    auto it = kernel_names_.find(mangled);
    if (it != kernel_names_.end()) return it->second;
    const std::uint32_t id = NameTable::global().intern(demangle(mangled));
    kernel_names_.emplace(mangled, id);
    return id;
  }

 private:
  struct Parked {
    Activity activity;
    int age = 0;
  };

  static void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;
    *max_records = 0;  // as many as fit
  }

  static void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream, std::uint8_t* buffer,
                                        std::size_t /*size*/, std::size_t valid) {
    // No exception may cross into CUPTI: errors are kept and rethrown by the
    // next flush on our side.
    try {
      instance().parse(context, stream, buffer, valid);
    } catch (const std::exception& e) {
      instance().keep_error(e.what());
    }
    std::free(buffer);
  }

  void parse(CUcontext context, std::uint32_t stream, std::uint8_t* buffer, std::size_t valid) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.buffers;
    const Nanos offset = offset_.load();
    CUpti_Activity* record = nullptr;
    for (;;) {
      const CUptiResult status = cuptiActivityGetNextRecord(buffer, valid, &record);
      if (status == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
      CUPTI_CHECK(status);
      ++stats_.records;
      Activity a;
      std::uint32_t correlation = 0;
      switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
          // The mapping record, not an activity: resolve what waits for it.
          const auto* r = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
          if (r->externalKind != kExternalKind) continue;
          correlation_[r->correlationId] = r->externalId;
          if (auto it = parked_.find(r->correlationId); it != parked_.end()) {
            it->second.activity.external = r->externalId;
            router_.add(it->second.activity);
            parked_.erase(it);
          }
          continue;
        }
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
          // The oldest layout still declared: later versions only append fields.
          const auto* r = reinterpret_cast<const CUpti_ActivityKernel4*>(record);
          a.kind = Activity::Kind::kernel;
          a.start = static_cast<Nanos>(r->start) + offset;
          a.end = static_cast<Nanos>(r->end) + offset;
          a.name = intern(r->name);
          correlation = r->correlationId;
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
          const auto* r = reinterpret_cast<const CUpti_ActivityMemcpy5*>(record);
          switch (r->copyKind) {
            case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
              a.kind = Activity::Kind::memcpy_h2d;
              break;
            case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
              a.kind = Activity::Kind::memcpy_d2h;
              break;
            case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
              a.kind = Activity::Kind::memcpy_d2d;
              break;
            default:
              a.kind = Activity::Kind::memcpy_other;
              break;
          }
          a.bytes = r->bytes;
          a.pinned = r->srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED || r->dstKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
          a.start = static_cast<Nanos>(r->start) + offset;
          a.end = static_cast<Nanos>(r->end) + offset;
          correlation = r->correlationId;
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
          const auto* r = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
          a.kind = Activity::Kind::memset;
          a.bytes = r->bytes;
          a.start = static_cast<Nanos>(r->start) + offset;
          a.end = static_cast<Nanos>(r->end) + offset;
          correlation = r->correlationId;
          break;
        }
        case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
          ++stats_.syncs;
          continue;
        default:
          continue;
      }
      if (auto it = correlation_.find(correlation); it != correlation_.end()) {
        a.external = it->second;
        router_.add(a);
      } else {
        parked_[correlation] = Parked{a, 0};
      }
    }
    std::size_t dropped = 0;
    CUPTI_CHECK(cuptiActivityGetNumDroppedRecords(context, stream, &dropped));
    stats_.dropped += dropped;
  }

  void keep_error(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_.empty()) error_ = what;
  }
  void rethrow_callback_error() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_.empty()) return;
    std::string e;
    e.swap(error_);
    throw runtime_failure(e);
  }

  std::mutex start_mutex_;
  bool registered_ = false;
  std::atomic<Nanos> offset_{0};

  std::mutex mutex_;  // everything below; buffer callbacks come from CUPTI's thread
  TracerStats stats_;
  Router router_;
  std::unordered_map<std::uint32_t, std::uint64_t> correlation_;  // CUDA call -> our external id
  std::unordered_map<std::uint32_t, Parked> parked_;              // device records awaiting their mapping
  std::unordered_map<std::string, std::uint32_t> kernel_names_;
  std::string error_;
};

std::atomic<std::uint64_t> g_next_token{1};
thread_local std::uint64_t t_token = 0;

class CuptiTracer final : public Tracer {
 public:
  explicit CuptiTracer(const TracerOptions& options) : trace_(options.trace) {
    if (!trace_) return;
    domain_ = nvtxDomainCreateA("inferprof");
    request_name_ = nvtxDomainRegisterStringA(domain_, "request");
    for (std::size_t i = 0; i < kStageCount; ++i)
      stage_names_[i] = nvtxDomainRegisterStringA(domain_, std::string(kStageNames[i]).c_str());
    Session::instance().start();
    started_ = true;
  }
  ~CuptiTracer() override {
    try {
      if (started_) Session::instance().stop();
    } catch (...) {
      // Destructors must not throw; finish() reports errors when called.
    }
  }

  void begin_request(RequestRecord& record) override {
    if (!trace_) return;
    t_token = g_next_token.fetch_add(1);
    CUPTI_CHECK(cuptiActivityPushExternalCorrelationId(kExternalKind, external_id(t_token, kNoStage)));
    nvtxEventAttributes_t a = attributes(request_name_);
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = record.id;
    nvtxDomainRangePushEx(domain_, &a);
  }

  void end_request(RequestRecord& record) override {
    if (!trace_) return;
    nvtxDomainRangePop(domain_);
    std::uint64_t popped = 0;
    CUPTI_CHECK(cuptiActivityPopExternalCorrelationId(kExternalKind, &popped));
    // The pipeline synchronised after the last copy, so the request's records
    // are complete: a default flush delivers them.
    Session& s = Session::instance();
    s.flush(false);
    if (++requests_ % kRecalibrateEvery == 0) s.calibrate();
    apply(attribute(s.take(t_token)), record);
  }

  void cancel_request() noexcept override {
    if (!trace_) return;
    // Unwinding from an error: the stacks are reset as far as CUPTI lets us;
    // the request's records are counted as unattributed at the end.
    nvtxDomainRangePop(domain_);
    std::uint64_t popped = 0;
    (void)cuptiActivityPopExternalCorrelationId(kExternalKind, &popped);  // no throwing while unwinding
  }

  void begin_stage(Stage stage) override {
    if (!trace_) return;
    CUPTI_CHECK(
        cuptiActivityPushExternalCorrelationId(kExternalKind, external_id(t_token, static_cast<std::uint32_t>(stage))));
    nvtxEventAttributes_t a = attributes(stage_names_[static_cast<std::size_t>(stage)]);
    nvtxDomainRangePushEx(domain_, &a);
  }

  void end_stage(Stage) override {
    if (!trace_) return;
    nvtxDomainRangePop(domain_);
    std::uint64_t popped = 0;
    CUPTI_CHECK(cuptiActivityPopExternalCorrelationId(kExternalKind, &popped));
  }

  TracerStats finish() override {
    if (!trace_) return {};
    Session& s = Session::instance();
    CUPTI_CHECK(cudaDeviceSynchronize());
    s.flush(true);
    s.drop_pending();
    TracerStats now = s.stats();
    TracerStats d;
    d.records = now.records - base_.records;
    d.dropped = now.dropped - base_.dropped;
    d.unattributed = now.unattributed - base_.unattributed;
    d.syncs = now.syncs - base_.syncs;
    d.buffers = now.buffers - base_.buffers;
    base_ = now;
    return d;
  }

 private:
  static constexpr std::uint64_t kRecalibrateEvery = 1000;

  static nvtxEventAttributes_t attributes(nvtxStringHandle_t name) {
    nvtxEventAttributes_t a;
    std::memset(&a, 0, sizeof(a));
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = name;
    return a;
  }

  bool trace_;
  bool started_ = false;
  std::uint64_t requests_ = 0;
  TracerStats base_;
  nvtxDomainHandle_t domain_ = nullptr;
  nvtxStringHandle_t request_name_ = nullptr;
  nvtxStringHandle_t stage_names_[kStageCount] = {};
};

}  // namespace

std::unique_ptr<Tracer> make_tracer(const TracerOptions& options) {
  if (options.trace) Session::instance().configure();
  CUPTI_CHECK(cudaSetDevice(options.device_index));
  return std::make_unique<CuptiTracer>(options);
}

std::string device_name(int device_index) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0)
    throw runtime_failure(fmt::format("no CUDA device is usable ({}); check nvidia-smi and CUDA_VISIBLE_DEVICES",
                                      status != cudaSuccess ? cudaGetErrorString(status) : "0 devices"));
  if (device_index < 0 || device_index >= count)
    throw bad_input(fmt::format("device cuda:{} does not exist ({} CUDA device{} visible)", device_index, count,
                                count == 1 ? "" : "s"));
  cudaDeviceProp prop{};
  CUPTI_CHECK(cudaGetDeviceProperties(&prop, device_index));
  return prop.name;
}

CopyPeak measure_copy_peak(int device_index, std::uint64_t bytes) {
  Session::instance().configure();  // before this creates the CUDA context
  CUPTI_CHECK(cudaSetDevice(device_index));
  CopyPeak peak;
  peak.bytes = bytes;
  void* device = nullptr;
  void* pinned = nullptr;
  std::vector<char> pageable(bytes, 1);  // touched: no first-use page faults in the timing
  cudaEvent_t start = nullptr, stop = nullptr;
  // Frees on every exit path; a failed check throws after cleanup.
  struct Cleanup {
    void*& d;
    void*& p;
    cudaEvent_t& a;
    cudaEvent_t& b;
    // Releasing while unwinding or after success: a failure here has no
    // one to report to, and must not mask the error being thrown.
    ~Cleanup() {
      if (d) (void)cudaFree(d);
      if (p) (void)cudaFreeHost(p);
      if (a) (void)cudaEventDestroy(a);
      if (b) (void)cudaEventDestroy(b);
    }
  } cleanup{device, pinned, start, stop};
  CUPTI_CHECK(cudaMalloc(&device, bytes));
  CUPTI_CHECK(cudaMallocHost(&pinned, bytes));
  std::memset(pinned, 1, bytes);
  CUPTI_CHECK(cudaEventCreate(&start));
  CUPTI_CHECK(cudaEventCreate(&stop));
  const auto best_gbps = [&](void* dst, const void* src, cudaMemcpyKind kind) {
    float best_ms = 0;
    for (int i = 0; i < 6; ++i) {  // the first is a warm-up
      CUPTI_CHECK(cudaEventRecord(start));
      CUPTI_CHECK(cudaMemcpy(dst, src, bytes, kind));
      CUPTI_CHECK(cudaEventRecord(stop));
      CUPTI_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      CUPTI_CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (i > 0 && (best_ms == 0 || ms < best_ms)) best_ms = ms;
    }
    return best_ms > 0 ? static_cast<double>(bytes) / (static_cast<double>(best_ms) * 1e6) : 0.0;
  };
  peak.h2d_pinned = best_gbps(device, pinned, cudaMemcpyHostToDevice);
  peak.h2d_pageable = best_gbps(device, pageable.data(), cudaMemcpyHostToDevice);
  peak.d2h_pinned = best_gbps(pinned, device, cudaMemcpyDeviceToHost);
  peak.d2h_pageable = best_gbps(pageable.data(), device, cudaMemcpyDeviceToHost);
  return peak;
}

}  // namespace inferprof::gpu::cuda
