#pragma once
// `inferprof diff`: the CI gate. Saved runs (summary.json, and the
// per-request requests.csv beside it when there is one), one or several per
// side, compared stage by stage and metric by metric, on wall or thread CPU
// time; a gate fails only when the whole interval of the change lies past its
// threshold, so noise is named as noise instead of failing a build, and a side
// whose own runs disagree is named unstable.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/diff_result.hpp"
#include "inferprof/gate.hpp"

namespace inferprof {

// Reads BASE or NEW: a summary.json or the --out folder holding it. Throws
// Error(bad_input) for a missing or malformed file.
RunData load_run(const std::string& path);

// A speed probe that moved by less than this between the sides is the probe's
// own noise, not the machine's speed: diff does not act on it.
inline constexpr double kMachineSpeedNoise = 0.05;
// Whether a verdict past its gate is explained by the machine's speed: with
// the base figure scaled by `slowdown` (new probe / base probe; throughput
// divided by it), the change would no longer be past the gate.
bool explained_by_machine(const Change& c, double slowdown, const GateSpec& gate, Verdict verdict,
                          bool higher_is_better = false);

// The bootstrap interval of stat(now) - stat(base) for mean, p50, p90 and
// p99 (the maximum has no valid bootstrap interval), and of the relative
// change stat(now) / stat(base) - 1. A side's statistic is the mean over its
// runs of each run's statistic.
struct MetricIntervals {
  std::array<std::pair<double, double>, 4> mean_p50_p90_p99{};
  std::array<std::pair<double, double>, 4> relative{};  // fractions: 0.05 is +5%
};
// Hierarchical bootstrap: each resample draws as many runs as the side has,
// with replacement, then each drawn run's requests with replacement, so the
// variation between runs is inside the interval. One run per side is the
// plain bootstrap over requests. Deterministic (a fixed seed).
MetricIntervals hierarchical_intervals(const std::vector<std::vector<double>>& base_runs,
                                       const std::vector<std::vector<double>>& new_runs, double confidence,
                                       int resamples = 1000);
// Welch's t-interval over the runs' own figures (each run's mean, p50, p90,
// p99), the relative change on the log scale; a side with one run takes the
// other side's variance between runs. A bootstrap over k runs sees (k-1)/k
// of their variance and reaches normal-like quantiles where t with few
// degrees of freedom is wider (five runs a side: t with 4 df is 1.6x the
// bootstrap's reach), so diff widens the bootstrap interval to this one where
// this is wider. nullopt with one run per side.
std::optional<MetricIntervals> run_level_intervals(const std::vector<std::vector<double>>& base_runs,
                                                   const std::vector<std::vector<double>>& new_runs, double confidence);
// One run per side.
MetricIntervals bootstrap_metric_intervals(const std::vector<double>& base, const std::vector<double>& now,
                                           double confidence, int resamples = 1000);

struct DiffConfig {
  std::vector<std::string> base_paths, new_paths;
  std::string gates = std::string(kDefaultGates);
  bool force = false;
  double confidence = 0.95;
  int resamples = 1000;
};

// Loads every run, checks they are comparable (Error(bad_input) naming the
// differences unless config.force), and applies the gates.
DiffResult run_diff(const DiffConfig& config);
// The same on already-loaded runs (for tests).
DiffResult diff_runs(std::vector<RunData> base, std::vector<RunData> now, const DiffConfig& config);
DiffResult diff_runs(RunData base, RunData now, const DiffConfig& config);

}  // namespace inferprof
