#pragma once
// Host timers and the span model every request is recorded in.
//
// A request is a tree of timed spans. Its root is the request itself (implicit:
// RequestRecord::arrival..end); the root's children are the stages of
// docs/reports.md; stages have children of their own (one per preprocessing op, one
// per aten op, one per cache tier). Names are interned once so recording a
// span is two clock reads and a push into a reused vector.
#include <time.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace inferprof {

using Nanos = std::int64_t;

// Monotonic nanoseconds since an arbitrary epoch (steady_clock).
inline Nanos now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU time this thread has run, in nanoseconds. A thread that waits, sleeps
// or is descheduled does not advance it, so wall minus CPU is time off the
// CPU. Each read is a system call (bench_cpu_clock measures it), which is why
// only stage spans read it, and only on sampled requests. Read from a
// perf_event task clock where the kernel allows one (cpu_clock.cpp says why),
// else CLOCK_THREAD_CPUTIME_ID; never 0.
Nanos thread_cpu_ns() noexcept;
// Which of the two this thread reads: "perf task clock" or "CLOCK_THREAD_CPUTIME_ID".
const char* thread_cpu_clock_name() noexcept;

// CPU sampling: on a machine where a CPU clock read is a system call (~0.5 µs
// in a VM), reading it at every stage boundary would cost a small model's
// request more than everything else inferprof adds. So 1 in `every` requests
// reads it (the same requests in every run and every lockstep lane: chosen
// by a hash of the request's position), and CPU figures are over those. The
// rule picks `every` so that the reads cost at most kCpuClockBudget of a
// request on average, from the read's cost measured at start-up against a
// warm-up request's duration; on bare metal, where a read is cheap, that is
// every request for all but the smallest models.
inline constexpr double kCpuClockBudget = 0.01;
struct CpuSampling {
  std::uint32_t every = 1;  // 1: every request
  double read_ns = 0;       // one read as measured at start-up (0: not measured)
  const char* clock = "";   // which clock (thread_cpu_clock_name())
  bool wants(std::uint64_t seq) const noexcept;
};
// How fast this machine runs a fixed piece of work now, in thread CPU µs (the
// fastest of `repetitions`): a dependent multiply-add chain (the core: within
// 1% from one probe to the next beside a busy process, 8% over 30 processes)
// and a dependent walk over 4 MiB (shared cache and memory: it moves with what
// other processes do to the cache, 1-7x on the development VM under ctest). A
// run probes before its warm-up and after its last request; `diff` compares
// the compute probes of its two sides to tell a machine that slowed down from
// code that did.
struct SpeedProbe {
  double compute_us = 0, memory_us = 0;
  bool measured() const noexcept { return compute_us > 0; }
};
SpeedProbe probe_machine_speed(int repetitions = 7);

// The median cost of one thread_cpu_ns() read on this thread, now.
double measure_cpu_clock_read_ns();
// The rule: the smallest `every` whose reads (`reads` per sampled request, at
// `read_ns` each) cost at most kCpuClockBudget of a `request_ns` request,
// capped at kMaxCpuSampleEvery. request_ns <= 0 (no warm-up to go by): 1.
inline constexpr std::uint32_t kMaxCpuSampleEvery = 1000;
std::uint32_t cpu_sample_every(double read_ns, int reads, Nanos request_ns);

// The top-level stages, in report order. Their values double as name ids.
// batch_wait: a request ready for the model waiting for its batch to run
// (--max-batch); not applicable without a batcher.
enum class Stage : std::uint8_t { queue, cache, load, input, preprocess, batch_wait, h2d, compute, d2h, overhead };
inline constexpr std::size_t kStageCount = 10;
inline constexpr std::array<std::string_view, kStageCount> kStageNames = {
    "queue", "cache", "load", "input", "preprocess", "batch_wait", "h2d", "compute", "d2h", "overhead"};
constexpr std::string_view stage_name(Stage s) {
  return kStageNames[static_cast<std::size_t>(s)];
}
constexpr std::uint32_t name_id(Stage s) {
  return static_cast<std::uint32_t>(s);
}
// Name id of the request root ("request"), right after the stages.
inline constexpr std::uint32_t kRequestNameId = kStageCount;

// Process-wide table of span names. Ids 0..kStageCount-1 are the stages, then "request".
// intern() takes a lock; call it once per distinct name (at set-up, or cached
// by the caller), not per span. name() is lock-free for ids already handed out.
class NameTable {
 public:
  static NameTable& global();
  std::uint32_t intern(std::string_view name);
  std::string_view name(std::uint32_t id) const;
  std::size_t size() const;

 private:
  NameTable();
  mutable std::mutex mutex_;
  std::deque<std::string> names_;  // deque: references stay valid as it grows
  std::unordered_map<std::string_view, std::uint32_t> ids_;
};

struct Span {
  std::uint32_t name = 0;    // NameTable id
  std::int32_t parent = -1;  // index into RequestRecord::spans; -1 = child of the request root
  Nanos start = 0;           // absolute now_ns()
  Nanos dur = 0;
  Nanos cpu = -1;  // thread CPU time during the span; -1: not measured (child or add()ed spans)
};

// A --device cuda run: the device, its copy peak and what CUPTI delivered.
struct GpuInfo {
  bool enabled = false;  // false on CPU: nothing below is reported
  std::string name;      // "NVIDIA H200"
  bool pinned = false;   // --pinned: inputs staged in page-locked memory
  bool trace = true;     // CUPTI + NVTX on (--gpu-trace off: stages are host times)
  // Plain cudaMemcpy on this machine at startup, GB/s.
  double peak_h2d_pinned_gbps = 0, peak_h2d_pageable_gbps = 0;
  double peak_d2h_pinned_gbps = 0, peak_d2h_pageable_gbps = 0;
  std::uint64_t records = 0, dropped = 0, unattributed = 0;  // CUPTI activity records
};

// What served a request: a result tier, the preprocessed-input tier (compute
// still ran), or nothing (input, preprocess and compute all ran); `none` when
// no cache tier is configured. An enum from the pipeline's serve through the
// record, the collector and compare; its text (outcome_name) is written only
// by the report writers and read back only by the readers (parse_outcome).
enum class CacheOutcome : std::uint8_t { l1_hit, l2_hit, l3_hit, miss, none };
inline constexpr int kCacheOutcomes = 4;  // those a cache walk gives (not `none`)

// The name reports use (requests.csv's cache column, summary.json).
constexpr std::string_view outcome_name(CacheOutcome o) noexcept {
  switch (o) {
    case CacheOutcome::l1_hit:
      return "l1_hit";
    case CacheOutcome::l2_hit:
      return "l2_hit";
    case CacheOutcome::l3_hit:
      return "l3_hit";
    case CacheOutcome::miss:
      return "miss";
    case CacheOutcome::none:
      return "none";
  }
  return "miss";
}
// One of the four a walk gives ("none" is not one: nullopt, as for unknown text).
inline std::optional<CacheOutcome> parse_outcome(std::string_view name) noexcept {
  for (int i = 0; i < kCacheOutcomes; ++i)
    if (outcome_name(static_cast<CacheOutcome>(i)) == name) return static_cast<CacheOutcome>(i);
  return std::nullopt;
}

// What CUPTI saw of one request on the GPU (all zero on CPU).
struct GpuRequestStats {
  std::uint32_t kernels = 0;  // kernel launches that ran for the request
  std::uint64_t h2d_bytes = 0, d2h_bytes = 0;
  Nanos gpu_idle = 0;  // gaps between its GPU activities (a child of overhead)
};

// Everything recorded about one request. Reused across requests by a worker
// (reset() keeps the vectors' capacity) so steady-state recording allocates nothing.
struct RequestRecord {
  std::uint64_t seq = 0;                   // 0-based position among measured requests
  std::uint64_t id = 0;                    // the trace's id (default: line number)
  std::uint64_t line = 0;                  // line in the trace file
  std::string key;                         // cache identity of the input
  std::uint32_t worker = 0;                // which replay worker served it
  Nanos arrival = 0;                       // when it was due (open loop) or taken (closed loop)
  Nanos start = 0;                         // service start
  Nanos end = 0;                           // service end
  std::array<Nanos, kStageCount> stage{};  // summed top-level stage time; overhead set by finish()
  // Thread CPU time: at begin() and finish() (0: not measured), and per stage
  // (queue stays 0: waiting uses none; overhead is the rest, set by finish()).
  Nanos cpu_start = 0, cpu_end = 0;
  std::array<Nanos, kStageCount> stage_cpu{};
  // The preprocess stage's parts: wall and thread CPU time of each op, summed
  // over its runs in this request, by Profile::preprocess_op_names() index
  // (sized by the preprocessing that ran: shorter, or empty, means 0).
  std::vector<Nanos> preprocess_op, preprocess_op_cpu;
  // What the decode op read (0: nothing decoded in this request): encoded
  // bytes and decoded pixels (width x height), summed over the image inputs.
  std::uint64_t image_bytes = 0, image_pixels = 0;
  // The requests in the model run that computed this one: 1 unbatched, up to
  // --max-batch with a batcher; 0 when the model did not run (a result-cache hit).
  std::uint32_t batch = 0;
  std::vector<Span> spans;                          // every span, parents before children
  CacheOutcome cache_outcome = CacheOutcome::none;  // none when no cache tier is configured
  std::string model_version;                        // the model version that served it
  // Model updates (docs/model-store.md): the index of the
  // last update announced when the request started (-1: none yet), and
  // whether that update was still pending (announced, not yet live).
  std::int32_t update = -1;
  bool update_pending = false;
  bool ok = true;
  std::string error;  // when !ok: why the request failed
  GpuRequestStats gpu;

  void reset();
  Nanos total() const noexcept { return end - arrival; }
  // Service start: sets `start` and, with `cpu`, the thread CPU clock the
  // request is charged from. Without it (a request CPU sampling skips,
  // cpu_sampling.hpp) no span of the request reads the CPU clock.
  void begin(bool cpu = true) noexcept;
  bool cpu_measured() const noexcept { return cpu_start != 0; }
  // Thread CPU time from begin() to finish(); 0 when not measured.
  Nanos cpu_total() const noexcept { return cpu_start != 0 && cpu_end >= cpu_start ? cpu_end - cpu_start : 0; }

  // Opens a span now and returns its index; pair with close(). Top-level
  // stage spans (parent -1, name < kStageCount) add to stage[] when closed.
  // Top-level spans (the stages) of a request begun with CPU time also
  // record thread CPU time, and so do spans opened with `cpu` (preprocessing
  // ops, reported as parts of their stage); other spans inside a stage (aten
  // ops, cache tiers) record wall time only: each CPU clock read is a system
  // call (~0.5 µs), more than a small op costs.
  std::int32_t open(std::uint32_t name, std::int32_t parent = -1, bool cpu = false);
  void close(std::int32_t index) noexcept;
  // Records a finished span (e.g. from observer callbacks or the queue wait).
  std::int32_t add(std::uint32_t name, std::int32_t parent, Nanos start, Nanos dur);
  // Sets `end` if unset, the queue stage from arrival..start, and overhead =
  // total - sum(other stages): the time no stage explains (and likewise for
  // CPU time when begin() measured it).
  void finish();
};

// Where a closed span's wall and CPU time are also added (a stage's part,
// e.g. RequestRecord::preprocess_op); null: nowhere.
struct SpanSums {
  Nanos* wall = nullptr;
  Nanos* cpu = nullptr;
};

// RAII span: opens on construction, closes on destruction (however the scope
// ends), adding its times to `sums`.
class ScopedSpan {
 public:
  ScopedSpan(RequestRecord& r, std::uint32_t name, std::int32_t parent = -1, bool cpu = false, SpanSums sums = {})
      : record_(r), index_(r.open(name, parent, cpu)), sums_(sums) {}
  ScopedSpan(RequestRecord& r, Stage s) : ScopedSpan(r, name_id(s), -1) {}
  ~ScopedSpan() {
    record_.close(index_);
    if (!sums_.wall) return;
    const Span& s = record_.spans[static_cast<std::size_t>(index_)];
    *sums_.wall += s.dur;
    if (sums_.cpu && s.cpu > 0) *sums_.cpu += s.cpu;
  }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;
  std::int32_t index() const noexcept { return index_; }

 private:
  RequestRecord& record_;
  std::int32_t index_;
  SpanSums sums_;
};

}  // namespace inferprof
