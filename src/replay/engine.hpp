#pragma once
// The replay engine's parts that every driver shares (closed loop, open loop,
// lockstep): what a request is served through (RequestServer: the real
// Pipeline, or a stand-in in unit tests), one configuration's cache state,
// the --verify check, and the serve step itself. No libtorch here.
#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "inferprof/pipeline.hpp"
#include "inferprof/replay.hpp"
#include "inferprof/report.hpp"
#include "inferprof/timing.hpp"
#include "inferprof/trace.hpp"

namespace inferprof {
class ModelUpdates;
class ModelSource;
class TraceReader;
struct TraceRecord;

namespace detail {

// What the engine serves requests through. Pipeline's contract (pipeline.hpp):
// serve records the stages in `record` and sets record.cache_outcome.
class RequestServer {
 public:
  virtual ~RequestServer() = default;
  virtual void serve(const TraceRequest& request, RequestRecord& record, const CacheSet* caches, Blob* served,
                     const ModelHandle& model) = 0;
  // Max absolute difference between a fresh, uncached computation and `served`.
  virtual double verify(const TraceRequest& request, const Blob& served, const ModelHandle& model) = 0;
  virtual ModelHandle active() const = 0;
};

class PipelineServer final : public RequestServer {
 public:
  explicit PipelineServer(Pipeline& pipeline) : pipeline_(pipeline) {}
  void serve(const TraceRequest& request, RequestRecord& record, const CacheSet* caches, Blob* served,
             const ModelHandle& model) override {
    pipeline_.serve(request, record, caches, served, model);
  }
  double verify(const TraceRequest& request, const Blob& served, const ModelHandle& model) override {
    return pipeline_.verify(request, served, model);
  }
  ModelHandle active() const override { return pipeline_.active(); }

 private:
  Pipeline& pipeline_;
};

// One configuration's cache tiers, started empty, and their CacheSet view.
// Remote ones live in their own Redis namespace, an unplaced L3 in a private
// LMDB folder; both are emptied and removed when the state goes, also when
// the run fails (a replica leaves the shared namespace to its parent).
struct CacheState {
  std::vector<std::unique_ptr<CacheTier>> owned;
  std::vector<std::string> where;
  CacheSet set;
  std::vector<lifecycle::PrivateFolder> scratch;
  bool keep_remote = false;
  // A process killed by a signal runs no destructor: the lifecycle thread
  // empties the namespace over its own connection.
  std::vector<std::pair<std::string, std::string>> remote;  // (Redis URL, namespace) this state owns
  lifecycle::Cleanup remote_cleanup;
  CacheState() = default;
  CacheState(CacheState&&) = default;
  ~CacheState();
  const CacheSet* caches() const { return set.any() ? &set : nullptr; }
  std::vector<CacheTierReport> reports() const;
};
CacheState build_cache_state(const std::vector<TierSpec>& tiers, const std::string& name_space, bool keep_remote);

// --verify: a deterministic sample of the cache hits and of the batched results
// (--max-batch) recomputed alone without caches and compared,
// outside the measured request.
class Verifier {
 public:
  Verifier(bool caches, double fraction);
  bool wants(std::uint64_t seq) const;
  void check(RequestServer& server, const TraceRequest& request, const RequestRecord& record, const Blob& served,
             const ModelHandle& model);
  VerifyReport report() const;
  Nanos spent_ns() const { return spent_ns_.load(); }  // not part of the replay's wall time

 private:
  mutable std::mutex mutex_;
  VerifyReport report_;
  std::atomic<Nanos> spent_ns_{0};
};

// One request as a driver hands it to the serve step.
struct ServeJob {
  const TraceRequest* request = nullptr;
  std::uint64_t seq = 0, line = 0;
  Nanos due = 0;  // open loop: when it arrived; 0: arrives when served
  std::uint32_t worker = 0;
  bool cpu = true;  // read the thread CPU clock (CpuSampling::wants)
};

// THE serve step: one request through (server, cache state) into `record`
// (reset, identified, timed, outcome set), with the model updates and the
// verify sample when given.
void serve_step(RequestServer& server, const CacheSet* caches, ModelUpdates* updates, Verifier* verifier,
                const ServeJob& job, RequestRecord& record);

// What CPU sampling is calibrated from: the fastest warm-up request that read
// the CPU clock and, for a short request, the fastest that did not. Their
// difference is what the reads really cost a request: where a read is a
// system call, the caches and TLB entries it evicts cost the request's own
// code about as much again as the read itself (MLP on this project's VM:
// 4 reads of 1.2 µs made a request ~10 µs slower).
struct WarmUpFastest {
  RequestRecord with_cpu;
  Nanos without_cpu = 0;  // 0: not measured
};

// The warm-up gate's work for one thread: `request` served `times` without
// caches, never measured, each reading the CPU clock as a sampled request
// would; `each` hears every warm-up's µs. `fastest` (if given) receives the
// fastest request, the closest to the steady state (the first ones pay
// one-time costs); for a request under 1 ms, up to 64 more un-reported serves
// (at most 2 ms), alternately without the CPU clock, bring it closer and
// measure what the reads cost. Stops early on `stop`.
void warm_up(RequestServer& server, const TraceRequest& request, int times, const std::function<bool()>& stop,
             const std::function<void(int, double)>& each, WarmUpFastest* fastest = nullptr);

// CPU sampling (timing.hpp) from the warm-up: 1 in `forced` requests when
// forced >= 1, else the rule, from what the reads cost a request (the
// with/without difference when measured, at least the reads' own cost
// measured now) against the request's duration without them. No warm-up:
// every request.
CpuSampling calibrate_cpu_sampling(const WarmUpFastest& warmup, std::uint32_t forced);

// Lockstep (compare --mode lockstep): each request served under every lane,
// one after another on this thread, the order rotated per request (request i
// starts with lane i mod N), so drift reaches all lanes alike.
// --skip-invalid at serve time: a request whose input proves bad only when it
// is served (a missing or corrupt image or .npy file, an input name the model
// lacks: Error(bad_input)) is counted and left out, as the trace reader does
// with malformed lines. Thread-safe.
class SkippedRequests {
 public:
  explicit SkippedRequests(bool enabled) : enabled_(enabled) {}
  // True when `e` is a request's bad input and skipping is on (counted, the
  // first few messages kept); false: the caller rethrows.
  bool absorb(const Error& e);
  std::uint64_t count() const;
  std::vector<std::string> examples() const;

 private:
  bool enabled_;
  mutable std::mutex mutex_;
  std::uint64_t count_ = 0;
  std::vector<std::string> examples_;
};

// One configuration's figures, request by request in the order served (the
// same order in every configuration of a lockstep pass).
struct RequestSeries {
  std::vector<double> latency_us;
  std::vector<CacheOutcome> outcome;
  std::vector<double> cpu_us;  // thread CPU time; NaN where not read (CPU sampling)
  // Per stage: wall µs, and thread CPU µs (NaN where not read).
  std::array<std::vector<double>, kStageCount> stage_us, stage_cpu_us;
  // Its preprocessing ops ("preprocess.resize", the profile's order), each's µs the same way.
  std::vector<std::string> op_names;
  std::vector<std::vector<double>> op_us, op_cpu_us;

  // `more`'s requests after these (its op names replace these).
  void append(RequestSeries&& more);
  // The per-request µs of `name`: "total", a stage's name or a preprocessing
  // op's; null when it has no such op.
  const std::vector<double>* named(const std::string& name, bool on_cpu) const;
};

struct LockstepLane {
  RequestServer* server = nullptr;  // what serves this lane (its model and profile); null: drive_lockstep's
  const CacheSet* caches = nullptr;
  Collector* collector = nullptr;    // null: not aggregated
  Verifier* verifier = nullptr;      // --verify's sample of its hits; null: none
  RequestSeries series;              // op_names (and op_us's size) set by the caller
  std::vector<std::uint64_t> input;  // per request: a hash of its input key (the same in every lane)
  Nanos busy_ns = 0;                 // summed request time: this lane's replay time
};
// Serves requests from `next` (false: no more) through each lane's server
// (`server` for a lane without one) until it ends, `stop` says so
// between requests, or `limit` (0: none) are served. Returns the requests
// served under every lane: each lane's vectors have exactly that many entries.
// A request that `skipped` absorbs is left out of every lane (the lanes stay paired).
// A request `cpu` samples reads the CPU clock in every lane (the lanes stay paired).
std::uint64_t drive_lockstep(RequestServer& server, std::vector<LockstepLane>& lanes,
                             const std::function<bool(TraceRequest&, std::uint64_t&)>& next,
                             const std::function<bool()>& stop, std::uint64_t limit = 0,
                             SkippedRequests* skipped = nullptr, const CpuSampling& cpu = CpuSampling{});

// The observer hears `finished` however a replay ends (declare it after the
// ReplayCounters it was given: they must outlive that call).
struct ObserverFinish {
  ReplayObserver* observer;
  ~ObserverFinish() {
    if (observer) observer->phase(ReplayObserver::Phase::finished);
  }
  ObserverFinish(const ObserverFinish&) = delete;
  ObserverFinish& operator=(const ObserverFinish&) = delete;
};

// ---- Set-up, shared by run_replay and the lockstep compare (replay.cpp) ----
// The checks of a replay's settings (Error(bad_input)).
void check_replay_config(const RunConfig& config);
// The run's description before anything is loaded (tool, machine, settings).
RunInfo describe_replay(const RunConfig& config);
// Reads up to the trace's first request (the warm-up input): the records read,
// that request last, are replayed first. Records the trace's size and hash.
std::deque<TraceRecord> read_trace_head(const RunConfig& config, TraceReader& reader, RunInfo& info);
// The request the warm-up replays (warmup_request.cpp): the first with key
// --warmup-from KEY (Error(bad_input) when none), else the median-sized input
// of the trace's first 1,000 requests (up to --limit), `first` when their
// sizes are all equal. Says which in info.warmup_from.
TraceRequest pick_warmup_request(const RunConfig& config, const TraceRequest& first, RunInfo& info);
// The model's first version loaded (sha256 checked), intra-op threads set,
// and the model's facts in `info`.
struct LoadedPipeline {
  std::unique_ptr<ModelSource> source;
  std::unique_ptr<Pipeline> pipeline;
  LoadedPipeline();
  LoadedPipeline(LoadedPipeline&&) noexcept;
  LoadedPipeline& operator=(LoadedPipeline&&) noexcept;
  ~LoadedPipeline();
};
LoadedPipeline load_pipeline(const RunConfig& config, RunInfo& info, ReplayObserver* observer);

// The collector of one configuration's requests: its report folder (empty:
// none), trace.json's cap, its profile's preprocessing ops.
CollectorOptions collector_options(const RunConfig& config, const RunInfo& info, const std::string& out_dir);

// ---- Collect, shared by run_replay and the lockstep compare ----
// The warning of a replay without a warm-up.
void warn_if_no_warmup(RunInfo& info);
// Interrupted before any request completed: nothing to report (exit 128 + signal).
[[noreturn]] void throw_interrupted_before_any_request();
// The invalid requests skipped, the reader's and the serve step's, with up to ten examples.
void record_skipped(RunInfo& info, const TraceReader& reader, const SkippedRequests& skipped);
// No request completed: the trace has no valid one (Error(bad_input)).
[[noreturn]] void throw_no_valid_requests(const std::string& trace_path, std::uint64_t skipped);

// Collect: the summary of what `collector` aggregated, with the tiers' and
// --verify's reports, and the flame graph's stacks.
RunOutcome collect_run(const Collector& collector, const RunInfo& info, const CacheState& caches,
                       const Verifier& verifier);
// Commit: with `out_dir`, the report files (each complete or absent), listed in outcome.files.
void commit_run(Collector& collector, RunOutcome& outcome, const std::string& out_dir);

// compare --mode lockstep's pass (lockstep.cpp): one configuration per target.
struct LockstepTarget {
  std::vector<TierSpec> tiers;
  std::string cache_namespace;       // its own Redis namespace (an unplaced L3 gets its own folder)
  std::string out_dir;               // empty: no report files
  std::string model_path;            // empty: the base's
  const Profile* profile = nullptr;  // null: the base's (it must outlive the pass)
};
struct LockstepPass {
  std::uint64_t requests = 0;         // served under every configuration
  std::vector<RunOutcome> outcomes;   // per target (files written when out_dir was set)
  std::vector<RequestSeries> series;  // per target, its requests (the same order for all)
  std::vector<std::uint64_t> input;   // per request: a hash of its input key
};
// Set-up, one pipeline per distinct (model, profile) with its warm-up, drive,
// collect, commit. Throws Error; a failure
// leaves no report of any target. An interrupt ends the pass between
// requests: it covers the requests served under every configuration.
LockstepPass run_lockstep_pass(const RunConfig& base, const std::vector<LockstepTarget>& targets);

}  // namespace detail
}  // namespace inferprof
