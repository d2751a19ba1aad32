#pragma once
// `inferprof run --replicas N`: N replica processes (the same binary) split
// the trace, share the Redis tiers and learn of model updates over Redis
// pub/sub; the parent starts them together, waits for all of them, and
// folds their reports into one: per-replica latency, the cross-replica
// spread, and per update the version skew (first to last replica serving the
// new version) and the stale and stalled requests.
#include <cstdint>
#include <string>
#include <vector>

#include "inferprof/run_config.hpp"

namespace inferprof {

struct ReplicaLaunch {
  int replicas = 2;
  std::string binary;                   // the inferprof executable
  std::vector<std::string> child_args;  // the parent's `run` arguments: each replica's, less what the parent decides
  Split split = Split::round_robin;
  std::string out_dir;          // DIR/replica-I/ per replica, DIR/replicas.json
  std::string cache_namespace;  // shared by all replicas
  std::string redis_url;        // shared tiers and the update channel ("" none)
  int timeout_s = 0;            // > 0: replicas still running then are killed (reported)
};

struct ReplicaResult {
  int index = 0;
  int pid = 0;
  std::string status = "ok";  // ok | interrupted | "exit N" | "killed by signal N" | "timed out"
  std::string log_tail;       // last lines of its output when it failed
  std::uint64_t requests = 0;
  double mean_us = 0, p50_us = 0, p99_us = 0, throughput_rps = 0;
  std::uint64_t stale_served = 0, stalled = 0;
  double stall_ms = 0;
  struct Live {
    std::string version;
    double unix_ms = -1;  // -1: this replica never served it
    std::uint64_t stale_served = 0, stalled = 0;
    double stall_ms = 0;
  };
  std::vector<Live> live;  // per update it saw
};

struct ReplicaUpdate {
  std::string version;
  int replicas_live = 0;  // replicas that went live on it
  double skew_ms = 0;     // last minus first replica going live
  std::uint64_t stale_served = 0, stalled = 0;
  double stall_ms = 0;
};

struct ReplicaSummary {
  std::string split;  // enum_name(Split): the report module renders it without depending on replay
  std::vector<ReplicaResult> replicas;
  int failed = 0;
  std::uint64_t requests = 0;
  double p50_spread_us = 0, p99_spread_us = 0;  // max - min across replicas that finished
  std::vector<ReplicaUpdate> updates;
  std::vector<std::string> files;
  std::string interrupted_by;  // "SIGINT"/"SIGTERM": the parent was interrupted and stopped the replicas
};

// Starts the replicas, waits for them, aggregates. Throws Error(runtime) if
// none can be started; a replica that fails is reported, not thrown.
ReplicaSummary run_replicas(const ReplicaLaunch& launch);

// Reporters (src/report/render/replicas_<format>.cpp; --format picks one: report/format.hpp).
std::string render_replicas_table(const ReplicaSummary& s);
std::string render_replicas_json(const ReplicaSummary& s);
std::string render_replicas_markdown(const ReplicaSummary& s);
std::string render_replicas_csv(const ReplicaSummary& s);  // one row per replica

}  // namespace inferprof
