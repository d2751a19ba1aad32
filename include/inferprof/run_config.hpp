#pragma once
// The validated settings of one replay, one struct per concern. The CLI
// fills them (src/cli/replay_options.cpp), parsing each mode once into its
// enum; nothing below the CLI sees CLI11 or compares a mode's spelling.
// Negative numbers mean "take the profile's value".
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "inferprof/cache.hpp"
#include "inferprof/enum_names.hpp"
#include "inferprof/profile.hpp"
#include "inferprof/trace.hpp"

namespace inferprof {

class ReplayObserver;  // replay.hpp

// How requests are released: closed loop, each worker takes the next request
// when it finishes one; open loop, at their ts_ms (the wait is the queue stage).
enum class Drive : std::uint8_t { closed_loop, open_loop };
template <>
struct EnumNames<Drive> {
  static constexpr std::array<std::string_view, 2> names{"closed-loop", "open-loop"};
};

// How the replicas of `run --replicas N` divide the requests: round-robin
// (request n to replica n mod N) or by a hash of the request's key.
enum class Split : std::uint8_t { round_robin, hash };
template <>
struct EnumNames<Split> {
  static constexpr std::array<std::string_view, 2> names{"rr", "hash"};
};

// Which driver serves a replay (driver.hpp): threaded, a reader and a
// collector thread beside the workers; or inline, on the worker alone (closed
// loop, one worker: it reads, serves and aggregates in batches, no other
// thread). Threaded is the default: on the 2-core development VM it adds
// less to a request than inline when the other core is free (inline wins by
// as much when a busy loop takes it; docs/performance.md).
enum class Driver : std::uint8_t { threaded, inline_worker };
template <>
struct EnumNames<Driver> {
  static constexpr std::array<std::string_view, 2> names{"threaded", "inline"};
};

// --max-batch's upper bound.
inline constexpr int kMaxBatch = 4096;

// What to replay and how.
struct ReplayOptions {
  std::string trace_path;
  CsvColumns csv;           // a .csv trace's columns (--csv-columns)
  int warmup = -1;          // un-measured iterations per worker
  std::string warmup_from;  // --warmup-from KEY; empty: the median-sized input (replay/warmup_request.cpp)
  int threads = -1;         // libtorch intra-op threads; 0: one per core
  int concurrency = 1;
  Drive drive = Drive::closed_loop;
  double speed = 1.0;  // open loop: ts_ms divided by this
  // Open loop: > 0 replaces the trace's ts_ms by Poisson arrivals at this many
  // requests per second (exponential gaps drawn from a fixed seed, the same
  // in every replay of the trace), as a load generator's request rate does.
  double poisson_rps = 0;
  std::uint64_t limit = 0;  // 0: the whole trace
  bool skip_invalid = false;
  Driver driver = Driver::threaded;
  // Thread CPU time on 1 in N requests (--cpu-sample N); 0: N from the CPU
  // clock's measured cost against a warm-up request's duration (timing.hpp).
  std::uint32_t cpu_sample = 0;
  // Dynamic batching (--max-batch, --batch-delay-us): requests that need the
  // model run in batches of up to max_batch; a batch's first request waits up
  // to batch_delay_us for more. 1: no batcher.
  int max_batch = 1;
  double batch_delay_us = 0;
  // The first N requests are served but not measured (sweep --measure-after):
  // the caches fill and the queue settles first. The wall time counts from
  // the first measured request's arrival.
  std::uint64_t measure_after = 0;
  // Keep every request's arrival and service time in the summary (sweep's queueing model).
  bool queue_samples = false;
};

// What the replay writes and tells.
struct OutputOptions {
  std::string out_dir;                               // empty: no report files
  bool ops = false;                                  // attribute compute to aten operators
  std::uint64_t trace_json_max_bytes = 100'000'000;  // trace.json's cap (--trace-json-max-mb); 0: none
  std::shared_ptr<ReplayObserver> observer;          // told the phase and counts (a progress line); null: nobody
  std::string dump_inputs, dump_outputs;             // --dump-inputs/--dump-outputs folders (replay/dump.hpp)
};

// Result caches. Each replay starts its tiers empty; remote ones are cleared
// before and after, in `key_namespace` (unique per replay).
struct CacheOptions {
  std::vector<TierSpec> tiers;  // resolved (backend and location set); empty: no caching
  std::string key_namespace;
  double verify_fraction = 0;  // share of cache hits recomputed and compared (--verify)
};

// Where model versions come from and how model_update events switch them.
// (StoreOptions, store.hpp, are the store's own settings; these are the run's.)
struct ModelStoreOptions {
  // A file:// folder or http(s):// URL; empty: model_path is a plain file,
  // its own one-version store, and update events cannot apply.
  std::string url;
  std::string redis_url;                  // keep model bytes in Redis too (between memory and the remote)
  bool zstd = false;                      // compress them there
  std::optional<UpdateMode> update_mode;  // unset: the profile's
  double preload_lead_ms = 1000;          // preload, open loop: start fetching this long before the event
};

// One replica of `run --replicas N` (replicas.hpp): it replays its share of
// the requests (every event), leaves the shared Redis namespace to the
// parent, and with update_channel takes model updates from Redis pub/sub
// (replica 0 publishes the trace's events).
struct ReplicaRole {
  int index = -1;  // -1: not a replica
  int count = 0;
  Split split = Split::round_robin;
  std::string group;               // --group NAME (across hosts); empty: run --replicas on this host
  std::string update_channel;      // Redis URL for update pub/sub; empty: the trace's own events
  std::function<void()> on_ready;  // called when warmed up, before the replay starts; may block
  bool is_replica() const { return index >= 0; }
};

// cuda only.
struct GpuOptions {
  bool pinned = false;  // inputs staged in pinned memory (--pinned)
  bool trace = true;    // CUPTI + NVTX (--gpu-trace off)
};

struct RunConfig {
  std::string model_path;    // a TorchScript file, or with store.url "name[@version]" in the store
  std::string model_sha256;  // lowercase hex; when set, the model's bytes must hash to it before loading
  Profile profile;
  ReplayOptions replay;
  OutputOptions output;
  CacheOptions caches;
  ModelStoreOptions store;
  ReplicaRole replica;
  GpuOptions gpu;
};

}  // namespace inferprof
