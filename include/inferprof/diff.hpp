#pragma once
// `inferprof diff`: the CI gate. Two saved runs (summary.json, and the
// per-request requests.csv beside it when there is one) compared stage by
// stage and metric by metric; a gate fails only when a change is both past its
// threshold and statistically clear, so noise is named as noise instead of
// failing a build.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/report.hpp"

namespace inferprof {

// One gate of --max-regression: "p99=10%" (every stage and the total),
// "compute.p99=5%" (one stage), "total.mean=5%+0.05ms" (with an absolute
// allowance), "throughput=10%" (a drop in requests/s).
struct GateSpec {
  std::string stage;                  // a stage name, "total", or "*" (every stage and the total); "" for throughput
  std::string metric;                 // mean, p50, p90, p99, max or throughput
  double pct = 0;                     // allowed change, in percent of the base value
  double floor_us = kDefaultFloorUs;  // plus this much, in µs (latency metrics only)
  bool floor_given = false;
  std::string text;  // as the user wrote it
  static constexpr double kDefaultFloorUs = 10;
};

// What a CI user wants by default: fail on what callers feel, the request
// total, and leave stage rows informative until a gate names them.
inline constexpr std::string_view kDefaultGates = "total.p99=10%,total.mean=5%";

// Parses the --max-regression grammar. Throws Error(bad_input) naming the
// offending item and what was expected.
std::vector<GateSpec> parse_gates(std::string_view text);

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
  std::uint64_t csv_rows = 0;  // successful rows read (before thinning)
  static constexpr std::size_t kMaxRows = 10000;
};

// Reads BASE or NEW: a summary.json or the --out folder holding it. Throws
// Error(bad_input) for a missing or malformed file.
RunData load_run(const std::string& path);

enum class Verdict { none, ok, regression, improved, noise };
std::string_view verdict_name(Verdict v);  // "-", "ok", "REGRESSION", "improved", "noise"

// A change with its confidence interval (of new - base, in the metric's unit).
struct Change {
  double base = 0, now = 0;
  std::optional<std::pair<double, double>> interval;
  double delta() const { return now - base; }
  double pct() const { return base != 0 ? 100.0 * delta() / base : 0; }  // 0 when base is 0
};

// The gate decision, on its own so tests can drive it with constructed data.
// `limit` is the allowed change in the metric's unit (pct of base + floor);
// for throughput a drop is the regression.
Verdict judge(const Change& c, double limit, bool higher_is_better = false);
// Allowed change of `spec` against `base`.
double gate_limit(const GateSpec& spec, double base);

// The bootstrap interval of stat(now) - stat(base) for each latency metric,
// from per-request values. `metric` is mean, p50, p90 or p99 (the maximum has
// no valid bootstrap interval).
struct MetricIntervals {
  std::array<std::pair<double, double>, 4> mean_p50_p90_p99{};
};
MetricIntervals bootstrap_metric_intervals(const std::vector<double>& base, const std::vector<double>& now,
                                           double confidence, int resamples = 1000);

struct DiffRow {
  std::string stage;   // "total", "compute", ..., "throughput", "l1 hit ratio"
  std::string metric;  // mean..max, "req/s", "ratio"
  Change change;
  std::string unit = "us";  // "us", "req/s", "ratio"
  std::string gate;         // the gate applied, as written ("" if none)
  double limit = 0;         // allowed change (in the unit), when gated
  Verdict verdict = Verdict::none;
  std::string note;  // "no interval: ..." and the like
};

struct DiffConfig {
  std::string base_path, new_path;
  std::string gates = std::string(kDefaultGates);
  bool force = false;
  double confidence = 0.95;
  int resamples = 1000;
};

struct DiffResult {
  std::string base_path, new_path;
  RunData base, now;
  std::vector<GateSpec> gates;
  double confidence = 0.95;
  int resamples = 0;
  bool intervals = false;               // both runs had requests.csv
  std::string intervals_note;           // why not, or how they were computed
  std::vector<std::string> mismatches;  // identity differences overridden by --force
  std::vector<std::string> notes;       // configuration differences (profile, concurrency, ...)
  std::vector<std::string> hidden;      // stages zero or n/a in both runs, not shown
  std::vector<DiffRow> rows;
  int gated = 0, regressions = 0, noise = 0, improved = 0;
  bool failed() const { return regressions > 0; }
};

// Loads both runs, checks they are comparable (Error(bad_input) naming the
// differences unless config.force), and applies the gates.
DiffResult run_diff(const DiffConfig& config);
// The same on already-loaded runs (for tests).
DiffResult diff_runs(RunData base, RunData now, const DiffConfig& config);

// Renderers.
std::string render_diff_table(const DiffResult& r);
std::string render_diff_markdown(const DiffResult& r);  // a verdict line first, then the table
std::string render_diff_json(const DiffResult& r);
std::string render_diff_junit(const DiffResult& r);  // one <testcase> per gated row

}  // namespace inferprof
