#pragma once
// `inferprof run --replicas N`'s result (inferprof/replicas.hpp runs it) and
// its reporters (src/report/render/replicas_<format>.cpp).
#include <cstdint>
#include <string>
#include <vector>

namespace inferprof {

struct ReplicaResult {
  int index = 0;
  int pid = 0;                // 0: not started by this process (merge of folders)
  std::string host;           // where it ran (its summary's hostname)
  std::string dir;            // its run folder
  std::string status = "ok";  // ok | interrupted | "exit N" | "killed by signal N" | "timed out" | "no report"
  std::string log_tail;       // last lines of its output when it failed
  std::uint64_t requests = 0;
  // The requests its shard of the trace holds (merge counts them from the
  // trace; -1: unknown), so that a replica's missing requests show as lost.
  std::int64_t share = -1;
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
  // Requests of the replicas' shards that no replica served, by trace line (-1: the trace was not read).
  std::int64_t lost = -1;
  std::uint64_t duplicated = 0;                 // requests (trace lines) that more than one replica served
  double p50_spread_us = 0, p99_spread_us = 0;  // max - min across replicas that finished
  std::vector<ReplicaUpdate> updates;
  std::vector<std::string> files;
  std::string interrupted_by;  // "SIGINT"/"SIGTERM": the parent was interrupted and stopped the replicas
};

// Reporters (src/report/render/replicas_<format>.cpp; --format picks one: report/format.hpp).
std::string render_replicas_table(const ReplicaSummary& s);
std::string render_replicas_json(const ReplicaSummary& s);
std::string render_replicas_markdown(const ReplicaSummary& s);
std::string render_replicas_csv(const ReplicaSummary& s);  // one row per replica

}  // namespace inferprof
