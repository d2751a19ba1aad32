#pragma once
// `inferprof diff`'s result (inferprof/diff.hpp runs it): the saved runs it
// read, its rows and verdicts, and its reporters (src/report/render/diff_<format>.cpp).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "inferprof/gate.hpp"
#include "inferprof/run_result.hpp"

namespace inferprof {

// A saved run, as diff reads it.
struct RunData {
  std::string summary_path;
  std::string csv_path;  // empty: no requests.csv beside summary.json
  std::string model_hash, trace_hash, model_path, trace_path, hostname, cpu_model, libtorch_version, device,
      profile_name, mode, started_at;
  int cpu_cores = 0, threads = 0, concurrency = 0;
  std::uint64_t requests = 0, limit = 0;
  double throughput_rps = 0;
  // kStageCount stages, then the request total (index kStageCount).
  std::array<StageStats, kStageCount + 1> stages{};
  std::vector<std::pair<std::string, double>> hit_ratios;  // tier -> hits / lookups
  // Per successful request, µs, per stage then the total (same indexing);
  // empty without requests.csv. At most kMaxRows rows, evenly spaced.
  std::array<std::vector<double>, kStageCount + 1> per_request;
  // Thread CPU µs of the requests whose CPU clock was read (CPU sampling: a
  // uniform sample of them; at most kMaxRows); empty when requests.csv has none.
  std::array<std::vector<double>, kStageCount + 1> per_request_cpu;
  // The preprocess stage's parts (summary.json's stages.preprocess.ops), each
  // with its per-request µs from requests.csv as above.
  struct Part {
    std::string name;  // "preprocess.resize"
    StageStats stats;
    std::vector<double> per_request, per_request_cpu;
  };
  std::vector<Part> preprocess_ops;
  std::uint64_t csv_rows = 0;  // successful rows read (before thinning)
  static constexpr std::size_t kMaxRows = 10000;
  SpeedProbe speed_before, speed_after;  // not measured in an older summary.json
};

struct DiffRow {
  std::string stage;                                  // "total", "compute", ..., "throughput", "l1 hit ratio"
  std::string clock = "wall";                         // "wall" or "cpu" (latency rows)
  std::string metric;                                 // mean..max, "req/s", "ratio"
  Change change;                                      // base and new: the mean over each side's runs
  std::optional<std::pair<double, double>> relative;  // the interval of the relative change (fractions)
  std::vector<double> base_runs, new_runs;            // the statistic of each run
  // (max - min) / mean of the runs of a side, with two runs or more.
  std::optional<double> base_spread, new_spread;
  std::string unit = "us";  // "us", "req/s", "ratio"
  std::string gate;         // the gate applied, as written ("" if none)
  double limit = 0;         // allowed change (in the unit), when gated
  Verdict verdict = Verdict::none;
  std::string note;  // "no interval: ..." and the like
};

struct DiffResult {
  std::vector<RunData> base, now;  // the runs of each side, in the order given
  std::vector<GateSpec> gates;
  double confidence = 0.95;
  int resamples = 0;
  bool intervals = false;               // every run had requests.csv
  std::string method;                   // "hierarchical bootstrap", "request bootstrap" or "none"
  std::string intervals_note;           // why not, or how they were computed and what they can see
  std::vector<std::string> mismatches;  // identity differences overridden by --force
  std::vector<std::string> notes;       // configuration differences (profile, concurrency, ...)
  std::vector<std::string> hidden;      // stages zero or n/a in both runs, not shown
  std::vector<DiffRow> rows;
  // The machine's speed: the mean speed probe (thread CPU µs of a fixed piece
  // of work, before and after each run) of each side, and new / base. Absent
  // when a run has no probe.
  std::optional<double> base_probe_us, new_probe_us, machine_slowdown;
  int gated = 0, regressions = 0, noise = 0, improved = 0, unstable = 0;
  bool failed() const { return regressions > 0; }
  // 1 on a regression, kExitUnstable when a gate could not be judged, else 0
  // (inline: the renderers, in the report layer, print it too).
  int exit_code() const { return regressions > 0 ? 1 : unstable > 0 ? kExitUnstable : 0; }
};

// Reporters (src/report/render/diff_<format>.cpp; --format picks one: report/format.hpp).
std::string render_diff_table(const DiffResult& r);
std::string render_diff_markdown(const DiffResult& r);  // a verdict line first, then the table
std::string render_diff_json(const DiffResult& r);
std::string render_diff_junit(const DiffResult& r);  // one <testcase> per gated row

}  // namespace inferprof
