#pragma once
// `inferprof merge DIR... --out DIR`: the run folders of one run's replicas
// (`run --replicas N` on one host, `run --group` across hosts) made into one
// report. Every statistic is computed from all the replicas' request records
// (requests.csv) by the collector a replay uses, so the merged percentiles are
// those of one replay that served the same requests, never an average of
// per-replica percentiles. Beside it, one row per replica, and the replicas
// that left no report (killed, never started) as failed.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "inferprof/replicas_result.hpp"
#include "inferprof/run_result.hpp"

namespace inferprof {

struct MergeOptions {
  std::vector<std::string> dirs;  // run folders (each a summary.json + requests.csv)
  std::string out_dir;            // "": aggregate only, write nothing
  // How many replicas the group had: those without a folder are reported as
  // failed. 0: the count the replicas' summaries name (else the folders given).
  int replicas = 0;
  // The trace, to count each replica's share of it ("": the path the
  // summaries name; unreadable: shares and lost requests are unknown).
  std::string trace_path;
  // Called on each replica's row before it is counted: `run --replicas` adds
  // what it knows of the process (pid, exit status, log).
  std::function<void(ReplicaResult&)> annotate;
};

struct MergeResult {
  RunSummary run;           // over every request of every replica
  ReplicaSummary replicas;  // one row per replica (a missing one: status "no report")
  std::vector<std::string> files;
};

// Throws Error(bad_input) for a folder that is not a run, or runs that are
// not replicas of one run (another model, trace or profile, one replica
// twice), naming the folder. Replicas missing from `dirs` are not an error:
// they are counted in replicas.failed. With no folder at all (every replica
// failed) only replicas.json is written.
MergeResult merge_runs(const MergeOptions& options);

}  // namespace inferprof
