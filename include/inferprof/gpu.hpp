#pragma once
// GPU support: CUPTI activity records and NVTX ranges, behind an interface
// with no CUDA types. A build without CUDA compiles a stub (kSupported is
// false, the tracer does nothing); which one is built is decided by CMake
// (INFERPROF_WITH_CUDA), in one factory file.
//
// The attribution half (activity records -> per-request stage times) is pure
// code, compiled and unit-tested in every build.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "inferprof/timing.hpp"

namespace inferprof::gpu {

// True when this binary was built with CUDA, CUPTI and NVTX.
extern const bool kSupported;
// How to get a build with GPU support; part of the error for --device cuda.
inline constexpr const char* kRebuildHint =
    "rebuild with a CUDA libtorch on CMAKE_PREFIX_PATH and -DINFERPROF_WITH_CUDA=ON, "
    "e.g. -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)'); "
    "see README 'GPU'";

// ---- attribution (pure) ----------------------------------------------------

// One CUPTI activity record, reduced to what attribution needs. Times are
// host steady-clock ns (the tracer converts CUPTI's clock).
struct Activity {
  enum class Kind : std::uint8_t { kernel, memcpy_h2d, memcpy_d2h, memcpy_d2d, memcpy_other, memset, sync };
  Kind kind = Kind::kernel;
  Nanos start = 0, end = 0;
  std::uint64_t bytes = 0;     // memcpy, memset
  bool pinned = false;         // memcpy: the host side is page-locked
  std::uint32_t name = 0;      // kernel: NameTable id of its (demangled) name
  std::uint64_t external = 0;  // external correlation id; 0: none (outside any request)
};

// External correlation ids: the request's token in the high bits, the stage
// (or kNoStage: the request itself, between stages) in the low 4.
inline constexpr std::uint32_t kNoStage = 15;
inline constexpr std::uint64_t external_id(std::uint64_t token, std::uint32_t stage) {
  return (token << 4) | (stage & 15u);
}
inline constexpr std::uint64_t token_of(std::uint64_t external) {
  return external >> 4;
}
inline constexpr std::uint32_t stage_of(std::uint64_t external) {
  return static_cast<std::uint32_t>(external & 15u);
}

// Total length of the union of [start, end) intervals (overlaps counted once).
Nanos union_length(std::vector<std::pair<Nanos, Nanos>> intervals);

// What one request did on the GPU.
struct RequestGpu {
  Nanos h2d = 0, compute = 0, d2h = 0;  // busy time (union of intervals) per stage
  Nanos idle = 0;                       // gaps between the request's first and last GPU activity
  std::uint32_t kernels = 0;
  std::uint64_t h2d_bytes = 0, d2h_bytes = 0;
  Nanos h2d_copy_ns = 0, d2h_copy_ns = 0;  // time of the copies alone (for GB/s)
  Nanos first_start = 0;                   // of its first GPU activity
  // Compute's children: busy time by kernel name (concurrent kernels share
  // the overlap equally, so the children sum to `compute`).
  std::vector<std::pair<std::uint32_t, Nanos>> compute_children;
};

// Attributes one request's activity records (all carrying its token). A
// record goes to the stage its external id names; a record tagged with the
// request alone goes by kind (kernel and memset: compute, HtoD: h2d, DtoH:
// d2h). Synchronisation records are host waits: counted elsewhere, not GPU
// busy time.
RequestGpu attribute(const std::vector<Activity>& records);

// Rewrites the record's h2d/compute/d2h spans with the GPU's times, adds the
// kernels as children of compute and GPU idle as `overhead;gpu_idle`, and
// fills record.gpu. Call before record.finish().
void apply(const RequestGpu& gpu, RequestRecord& record);

// Routes activity records to requests by the token in their external id, so
// records of interleaved requests (several workers) each land on their own.
class Router {
 public:
  void add(const Activity& a);
  // Removes and returns the records of `token` (empty if none arrived); later
  // records for it are counted as unattributed.
  std::vector<Activity> take(std::uint64_t token);
  // Counts every record still held as unattributed and drops it (end of run:
  // requests that failed before end_request).
  void drop_all();
  // Records that landed on no request: no external id, or arriving after
  // their request was taken.
  std::uint64_t unattributed() const noexcept { return unattributed_; }
  std::size_t pending() const noexcept { return pending_; }

 private:
  std::unordered_map<std::uint64_t, std::vector<Activity>> by_token_;
  std::unordered_set<std::uint64_t> taken_;  // recent tokens only (pruned)
  std::uint64_t max_taken_ = 0;
  std::uint64_t unattributed_ = 0;
  std::size_t pending_ = 0;
};

// ---- the tracer the pipeline calls -----------------------------------------

// Achieved copy bandwidth of plain cudaMemcpy on this machine, GB/s (1e9 B/s).
struct CopyPeak {
  std::uint64_t bytes = 0;
  double h2d_pinned = 0, h2d_pageable = 0, d2h_pinned = 0, d2h_pageable = 0;
};

struct TracerStats {
  std::uint64_t records = 0;       // activity records received
  std::uint64_t dropped = 0;       // cuptiActivityGetNumDroppedRecords, summed
  std::uint64_t unattributed = 0;  // records that landed on no request
  std::uint64_t syncs = 0;         // synchronisation records
  std::uint64_t buffers = 0;       // activity buffers delivered
};

struct TracerOptions {
  int device_index = 0;
  bool trace = true;  // false: neither CUPTI nor NVTX (to measure their overhead)
};

// Per-request and per-stage hooks. begin/end pairs nest on the calling thread
// (request, then its stages). end_request flushes CUPTI, attributes the
// request's records and rewrites `record` (see apply()). The stub does nothing.
class Tracer {
 public:
  virtual ~Tracer() = default;
  virtual void begin_request(RequestRecord& record) = 0;
  virtual void end_request(RequestRecord& record) = 0;
  // A request that failed midway: pops what begin_request pushed, no attribution.
  virtual void cancel_request() noexcept = 0;
  virtual void begin_stage(Stage stage) = 0;
  virtual void end_stage(Stage stage) = 0;
  // Flushes everything (forced) and returns the counts so far.
  virtual TracerStats finish() = 0;
};

// The tracer for `options.device_index`: CUPTI + NVTX in a CUDA build,
// otherwise one that does nothing.
std::unique_ptr<Tracer> make_tracer(const TracerOptions& options);

// The device's name ("NVIDIA H200"); throws Error(runtime) when there is no
// usable CUDA device. Only meaningful when kSupported.
std::string device_name(int device_index);
// Times pinned and pageable cudaMemcpy of `bytes` each way (best of a few).
CopyPeak measure_copy_peak(int device_index, std::uint64_t bytes);

// RAII stage hook for the pipeline.
class StageScope {
 public:
  StageScope(Tracer* t, Stage s) : tracer_(t), stage_(s) {
    if (tracer_) tracer_->begin_stage(stage_);
  }
  ~StageScope() {
    if (tracer_) tracer_->end_stage(stage_);
  }
  StageScope(const StageScope&) = delete;
  StageScope& operator=(const StageScope&) = delete;

 private:
  Tracer* tracer_;
  Stage stage_;
};

}  // namespace inferprof::gpu
