#pragma once
// Replaying a trace through the pipeline: closed loop (each worker takes the
// next request when it finishes one) or open loop (requests are released at
// their ts_ms, scaled by speed; the wait before service is the queue stage).
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "inferprof/profile.hpp"
#include "inferprof/report.hpp"

namespace inferprof {

// What a replay tells whoever shows its progress (the CLI's progress line,
// src/cli/progress.cpp). Called from the replay's threads: implementations
// are thread-safe and return at once; the replay never waits on them.
struct ReplayCounters {
  std::atomic<std::uint64_t> done{0};      // requests completed
  std::atomic<std::uint64_t> total{0};     // requests the replay serves, once known exactly; 0: not yet
  std::atomic<std::uint64_t> estimate{0};  // total estimated from the trace's size (or --limit); 0: none
};
class ReplayObserver {
 public:
  enum class Phase { loading_model, warming_up, replaying, writing_reports, finished };
  virtual ~ReplayObserver() = default;
  // Which replay of several this is (compare: "configuration 2/4 (l1) · repeat 1/3").
  virtual void context(const std::string& /*label*/) {}
  virtual void phase(Phase /*phase*/) {}
  virtual void warmup(int /*done*/, int /*total*/) {}
  // The replay's clock started; `counters` stay valid until phase(writing_reports or finished).
  virtual void replaying(const ReplayCounters& /*counters*/) {}
};

// Validated settings of one replay. The CLI fills it; nothing below the CLI
// sees CLI11. Negative numbers mean "take the profile's value".
struct RunConfig {
  std::string model_path;  // a TorchScript file, or with store_url "name[@version]" in the store
  std::string trace_path;
  CsvColumns csv;            // a .csv trace's columns (--csv-columns)
  std::string model_sha256;  // lowercase hex; when set, the model's bytes must hash to it before loading
  Profile profile;
  int warmup = -1;
  int threads = -1;
  int concurrency = 1;
  bool open_loop = false;
  double speed = 1.0;
  std::uint64_t limit = 0;  // 0: the whole trace
  std::string out_dir;      // empty: no report files
  bool ops = false;
  std::shared_ptr<ReplayObserver> observer;  // told the phase and counts (a progress line); null: nobody
  bool skip_invalid = false;
  std::uint64_t trace_json_max_bytes = 100'000'000;  // trace.json's cap (--trace-json-max-mb); 0: none
  // Cache tiers for this replay, resolved (backend and location set); empty:
  // no caching. Each replay starts them empty; remote ones are cleared before
  // and after, in the namespace `cache_namespace` (unique per replay).
  std::vector<TierSpec> tiers;
  std::string cache_namespace;
  double verify_fraction = 0;  // share of cache hits recomputed and compared (--verify)
  // The model store (file:// folder or http(s):// URL); empty: model_path is a
  // plain file, its own one-version store, and update events cannot apply.
  std::string store_url;
  std::string store_redis_url;  // keep model bytes in Redis too (between memory and the remote)
  bool store_zstd = false;      // compress them there
  std::string update_mode;  // sync | async | preload (empty: the profile's): how model_update events switch versions
  double preload_lead_ms = 1000;  // preload, open loop: start fetching this long before the event
  // One replica of `run --replicas N` (replicas.hpp): it replays its share of
  // the requests (every event), leaves the shared Redis namespace to the
  // parent, and with update_channel takes model updates from Redis pub/sub
  // (replica 0 publishes the trace's events).
  int replica_index = -1;  // -1: not a replica
  int replica_count = 0;
  std::string split = "rr";        // rr: request n goes to replica n mod N; hash: by its key
  std::string update_channel;      // Redis URL for update pub/sub; empty: the trace's own events
  std::function<void()> on_ready;  // called when warmed up, before the replay starts; may block
  bool pinned = false;             // cuda: inputs staged in pinned memory (--pinned)
  bool gpu_trace = true;           // cuda: CUPTI + NVTX (--gpu-trace off)
  // Thread CPU time on 1 in N requests (--cpu-sample N); 0: N from the CPU
  // clock's measured cost against a warm-up request's duration (timing.hpp).
  std::uint32_t cpu_sample = 0;
  // How requests reach the worker (--driver): "inline" (closed loop, one
  // worker: it reads, serves and aggregates, no other thread) or "threaded"
  // (a reader and a collector thread beside the workers); empty: inline where
  // it applies.
  std::string driver;
};

// The tiers named in `which` ("none", "l1", "l1,l2,l3", ...): each from the
// profile's [cache.lN], else the built-in default (l1 lru:1000 in-process,
// l2 lru:100000 in-process, l3 LMDB in `scratch_dir`), then `overrides`
// (--tier) by tier name; `redis_url` moves l2 and (unless the profile places
// it) l3 onto Redis. Throws Error(bad_input) naming what is wrong.
std::vector<TierSpec> resolve_tiers(const Profile& profile, const std::string& which,
                                    const std::vector<TierSpec>& overrides, const std::string& redis_url,
                                    const std::string& scratch_dir);

struct RunOutcome {
  RunSummary summary;
  std::vector<std::string> files;                             // report files written
  std::vector<std::pair<std::string, std::uint64_t>> folded;  // the flame graph's stacks (µs)
};

// Loads the model, warms up, replays, aggregates and (with out_dir) writes the
// reports. Throws Error; on any error no report file is left behind.
// A first SIGINT/SIGTERM (lifecycle.hpp) stops releasing requests: the ones in
// flight finish and the outcome covers what completed, with
// info.interrupted_by set; interrupted before any request completed, it throws
// Error with exit code 128 + the signal.
RunOutcome run_replay(const RunConfig& config);

}  // namespace inferprof
