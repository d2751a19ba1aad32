#pragma once
// A run's result: what `run` (and each configuration of `compare`) measured,
// as the collector summarises it and the reporters (report.hpp) print it.
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "inferprof/cache.hpp"
#include "inferprof/timing.hpp"

namespace inferprof {

// Facts about the run that the records do not carry; filled in by replay.
struct RunInfo {
  std::string command = "run";
  std::string tool_version;
  std::string libtorch_version;
  std::string hostname;
  std::string cpu_model;   // /proc/cpuinfo "model name"; with cpu_cores, what `diff` calls the machine
  int cpu_cores = 0;       // hardware threads
  std::string started_at;  // ISO 8601, UTC
  // The wall clock (Unix ms) at the replay's epoch, which requests.csv's times count from: `merge` lines up
  // the replicas of a group by it (across hosts, as far as their clocks agree).
  double epoch_unix_ms = 0;
  // A replica of a group (run --replicas, --group): which one of how many, how the trace was sharded, and
  // the group's name (--group). index -1: not a replica.
  struct Replica {
    int index = -1;
    int count = 0;
    std::string shard_by, group;
  } replica;
  int merged_from = 0;  // merge: how many replicas' run folders this report merges (0: one replay)
  // The machine's speed before the first request and after the last
  // (probe_machine_speed): what `diff` compares to tell a slower machine from slower code.
  SpeedProbe speed_before, speed_after;
  std::string model_path;
  std::string model_version;             // the store's version, or "xxh3:..." of the file
  std::string model_served_by = "file";  // file, or the store tier: memory, redis, remote
  std::string model_hash;                // "xxh3:<16 hex>" of the model file
  std::string model_sha256;  // of a plain model file's bytes (the store checks its own); what --model-sha256 compares
  std::string model_arch;    // from the model's metadata, "unknown" if none
  std::int64_t model_parameters = 0;
  std::int64_t model_bytes = 0;  // file size
  std::string profile_name;
  std::string profile_source;  // a path, or "<embedded default>"
  std::string trace_path;
  std::uint64_t trace_bytes = 0;
  std::string trace_hash;  // "xxh3:<16 hex>" of the trace file
  std::string device = "cpu";
  bool copies_applicable = false;    // h2d/d2h mean something (GPU); on CPU they print n/a
  int threads = 1;                   // intra-op threads, as set
  int concurrency = 1;               // replay workers
  std::string mode = "closed-loop";  // or "open-loop"
  std::string driver;                // run: "inline" or "threaded" (replay.hpp); lockstep compare: "lockstep"
  int max_batch = 1;                 // --max-batch (1: no batcher; batch_wait is n/a)
  double batch_delay_us = 0;         // --batch-delay-us
  // Thread CPU time was read on 1 in cpu_sample_every requests (timing.hpp,
  // CpuSampling); one read of cpu_clock (thread_cpu_clock_name()) cost
  // cpu_clock_read_ns when the run started.
  std::uint32_t cpu_sample_every = 1;
  double cpu_clock_read_ns = 0;
  std::string cpu_clock;
  double speed = 1.0;                 // open loop: trace time is divided by this
  double poisson_rps = 0;             // open loop: Poisson arrivals at this rate (--rate); 0: the trace's ts_ms
  std::uint64_t limit = 0;            // 0: whole trace
  bool ops = false;                   // --ops: aten operators recorded under compute
  double load_ms = 0;                 // model load: read + deserialise + to device
  int warmup = 0;                     // warm-up iterations asked for
  std::vector<double> warmup_us;      // latency of each warm-up iteration, in order
  std::string warmup_from;            // which request they replayed: "line 17 (the median input size ...)"
  double wall_s = 0;                  // measured replay wall time (warm-up excluded)
  std::uint64_t skipped_invalid = 0;  // trace lines skipped by --skip-invalid
  std::vector<std::string> skipped_examples;
  double peak_rss_mb = 0;
  std::vector<std::string> warnings;  // shown under the table and in summary.json
  GpuInfo gpu;
  // A SIGINT/SIGTERM stopped the replay early: every figure covers only the
  // requests that completed before it ("SIGINT" or "SIGTERM"; empty: ran to the end).
  std::string interrupted_by;
  bool interrupted() const { return !interrupted_by.empty(); }
};

// Statistics of one stage (or of the total) over the measured requests, in µs.
struct StageStats {
  std::uint64_t count = 0;  // requests where the stage took > 0 ns or was recorded
  double total_us = 0;      // sum over all requests
  double mean_us = 0;       // total_us / number of requests (not / count), so means add up
  double p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0, min_us = 0;
  double share = 0;        // total_us / total of the request root
  bool applicable = true;  // false: h2d/d2h on CPU (printed n/a)
  // Thread CPU time of the same requests (docs/reports.md). cpu = false: not
  // measured (the queue stage, or a run without CPU clocks): printed as n/a.
  bool cpu = false;
  double cpu_mean_us = 0, cpu_p50_us = 0, cpu_p99_us = 0;
  // 1 - cpu/wall summed over the requests: the share of the stage spent off the
  // CPU (waiting, or descheduled by other processes).
  double off_cpu = 0;
};

// Above this off-CPU share of compute (one intra-op thread, CPU device) the run
// is flagged as noisy: its thread was descheduled, so wall times are inflated.
inline constexpr double kNoisyOffCpuShare = 0.20;

struct OpStats {
  std::string name;  // "aten::conv2d"
  std::uint64_t calls = 0;
  double self_us = 0;           // time in the op minus its child ops
  double total_us = 0;          // inclusive time (nested calls of the same op counted once per call)
  double share_of_compute = 0;  // self_us / compute total
};

// What one cache tier did during the run.
struct CacheTierReport {
  TierSpec spec;
  std::string where;  // "in-process", "redis://host:port/db" (never a password), "lmdb PATH"
  TierStats stats;
};

// Latency of the requests grouped by what served them: "l1_hit", "l2_hit",
// "l3_hit", "miss" (perf_analyzer's cache hit latency vs miss latency).
struct OutcomeStats {
  CacheOutcome outcome = CacheOutcome::miss;
  std::uint64_t count = 0;
  double mean_us = 0, p50_us = 0, p99_us = 0;
};

// --verify: cache hits recomputed without caches and compared.
struct VerifyReport {
  bool enabled = false;
  double fraction = 0;
  std::uint64_t checked = 0, mismatches = 0;
  double max_abs_diff = 0;
  std::vector<std::string> examples;  // "request 17 (l2_hit): max abs difference 0.5"
};

// Latency of a group of requests, in µs.
struct LatencyStats {
  std::uint64_t count = 0;
  double mean_us = 0, p50_us = 0, p99_us = 0, max_us = 0;
};

// One model update during the replay (a trace event, or a replica's broadcast)
// and what it cost the requests around it.
struct UpdateReport {
  std::string model, from_version, to_version;
  std::string mode;         // sync | async | preload
  double announced_ms = 0;  // since the replay started
  double live_ms = -1;      // when the new version began serving; -1: not within the replay
  double live_unix_ms = 0;  // the same on the wall clock (ms since 1970), to line up replicas
  double fetch_ms = 0, deserialize_ms = 0;
  std::string served_by;           // the store tier the new version came from
  std::uint64_t stalled = 0;       // requests that waited for the new version to load
  double stall_ms = 0;             // their summed waiting (part of their `load` stage)
  std::uint64_t stale_served = 0;  // requests after the announcement served by the old version
  std::uint64_t invalidated = 0;   // result-cache entries of the old version dropped
  // Requests that started before the announcement (after the previous update
  // was live), while it was pending, and after it was live (until the next one).
  LatencyStats before, during, after;
  std::string error;  // the update failed (e.g. unknown version): the old version kept serving
};

// A part of a stage: a preprocessing op, its wall and thread CPU time in each
// request (all its runs in the request summed), as the stages are counted.
struct StagePart {
  std::string name;  // "preprocess.resize": the stage, a dot, the op
  StageStats stats;
};

// --max-batch: how the requests that ran the model were batched.
struct BatchingStats {
  bool enabled = false;                // a batcher ran (info.max_batch > 1)
  std::uint64_t computed = 0;          // requests that ran the model (not result-cache hits)
  std::uint64_t batches = 0;           // model runs
  std::vector<std::uint64_t> of_size;  // [k]: batches of k requests (k = 1..max_batch)
  double mean_size() const { return batches ? static_cast<double>(computed) / static_cast<double>(batches) : 0; }
};

// A request's place in an open loop's queue.
struct QueueSample {
  double arrival_us = 0;  // when it was due, from the replay's first arrival
  double service_us = 0;  // service start to end: its latency without the wait
  bool measured = true;   // false: served before --measure-after's window
};

struct RunSummary {
  RunInfo info;
  std::uint64_t requests = 0;      // measured requests
  std::uint64_t cpu_requests = 0;  // of them, those whose thread CPU time was read (CPU figures are over these)
  std::uint64_t failed = 0;
  std::array<StageStats, kStageCount> stages{};
  std::vector<StagePart> preprocess_ops;   // the preprocess stage's parts, in the profile's order
  StageStats total;                        // the request root: arrival to end
  double throughput_rps = 0;               // requests / info.wall_s
  std::vector<OpStats> top_ops;            // by self time, at most 25
  std::uint64_t spans = 0;                 // events written (or that would be) to trace.json per request root + spans
  std::uint64_t trace_json_requests = 0;   // requests trace.json holds (capped by size)
  std::uint64_t trace_json_max_bytes = 0;  // the cap on its events (0: none)
  std::uint64_t csv_rows = 0;
  std::vector<std::string> failed_examples;  // "id 17: why", the first few failed requests
  std::vector<CacheTierReport> caches;       // empty: no cache tier configured
  std::vector<OutcomeStats> outcomes;        // only with caches
  VerifyReport verify;
  BatchingStats batching;
  std::vector<UpdateReport> updates;  // model updates applied during the replay
  // GPU sums over the measured requests (record.gpu); zero on CPU.
  std::uint64_t gpu_kernels = 0, h2d_bytes = 0, d2h_bytes = 0;
  double gpu_idle_us = 0;
  // A uniform sample (reservoir, at most 50,000) of request totals in µs, for
  // confidence intervals of comparisons; not written to summary.json.
  std::vector<double> latency_sample_us;
  // With CollectorOptions::queue_samples (sweep's queueing model): every
  // request served, in arrival order; empty otherwise.
  std::vector<QueueSample> queue_samples;
};

}  // namespace inferprof
