#pragma once
// `inferprof run --replicas N`: N replica processes (the same binary) split
// the trace, share the Redis tiers and learn of model updates over Redis
// pub/sub; the parent starts them together, waits for all of them, and
// merges their reports into one (inferprof/merge.hpp): statistics over every
// request, per-replica latency and the cross-replica spread, and per update
// the version skew (first to last replica serving the new version) and the
// stale and stalled requests.
#include <cstdint>
#include <string>
#include <vector>

#include "inferprof/merge.hpp"
#include "inferprof/run_config.hpp"

namespace inferprof {

struct ReplicaLaunch {
  int replicas = 2;
  std::string binary;                   // the inferprof executable
  std::vector<std::string> child_args;  // the parent's `run` arguments: each replica's, less what the parent decides
  Split split = Split::round_robin;
  std::string out_dir;          // DIR/replica-I/ per replica (and its log)
  std::string merged_dir;       // the merged report and replicas.json ("": none written)
  std::string cache_namespace;  // shared by all replicas
  std::string redis_url;        // shared tiers and the update channel ("" none)
  int timeout_s = 0;            // > 0: replicas still running then are killed (reported)
};

// Starts the replicas, waits for them, merges their reports. Throws
// Error(runtime) if none can be started; a replica that fails is reported,
// not thrown.
MergeResult run_replicas(const ReplicaLaunch& launch);

}  // namespace inferprof
