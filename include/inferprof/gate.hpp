#pragma once
// Regression gates, as `diff` and `compare` apply them: the grammar
// ("total.cpu.mean=5%+0.05ms") and the decision on a change with its interval.
// A gate fails only when the whole interval of the change lies past its
// threshold, so noise is named as noise instead of failing a build.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inferprof {

// One gate (diff's --max-regression, compare's --gate): "p99=10%" (every stage and the total),
// "compute.p99=5%" (one stage), "total.cpu.p50=5%" (thread CPU time),
// "total.mean=5%+0.05ms" (with an absolute allowance), "throughput=10%" (a
// drop in requests/s), "preprocess.resize.cpu.p50=5%" (one preprocessing op).
struct GateSpec {
  // A stage name, "total", a preprocessing op ("preprocess.resize"), or "*"
  // (every stage and the total, not the ops); "" for throughput.
  std::string stage;
  std::string clock = "wall";         // "wall" or "cpu" (thread CPU time: mean, p50, p99 only)
  std::string metric;                 // mean, p50, p90, p99, max or throughput
  double pct = 0;                     // allowed change, in percent of the base value
  double floor_us = kDefaultFloorUs;  // plus this much, in µs (latency metrics only)
  bool floor_given = false;
  std::string text;  // as the user wrote it
  static constexpr double kDefaultFloorUs = 10;
};

// What a CI user wants by default: the request total, on thread CPU time,
// which other processes on the machine barely move (wall time grows with every
// time slice they take); stage rows stay informative until a gate names them.
inline constexpr std::string_view kDefaultGates = "total.cpu.mean=5%,total.cpu.p50=5%";
// The defaults for runs that recorded no CPU time (older summaries).
inline constexpr std::string_view kWallDefaultGates = "total.p99=10%,total.mean=5%";
// The exit code of an unstable verdict: no gate failed, but at least one could
// not be judged because the runs of one side disagree beyond its threshold.
inline constexpr int kExitUnstable = 4;

// Parses the gate grammar (comma-separated gates). Throws Error(bad_input)
// naming `option`, the offending item and what was expected.
std::vector<GateSpec> parse_gates(std::string_view text, std::string_view option = "--max-regression");

enum class Verdict { none, ok, regression, improved, noise, unstable };
std::string_view verdict_name(Verdict v);  // "-", "ok", "REGRESSION", "improved", "noise", "unstable"

// A change with its confidence interval (of new - base, in the metric's unit).
struct Change {
  double base = 0, now = 0;
  std::optional<std::pair<double, double>> interval;
  double delta() const { return now - base; }
  double pct() const { return base != 0 ? 100.0 * delta() / base : 0; }  // 0 when base is 0
};

// The gate decision, on its own so tests can drive it with constructed data.
// `limit` is the allowed change in the metric's unit (pct of base + floor);
// for throughput a drop is the regression. With an interval, a regression (an
// improvement) needs the whole interval beyond the limit; a change past the
// limit whose interval is not is noise.
Verdict judge(const Change& c, double limit, bool higher_is_better = false);
// Allowed change of `spec` against `base`.
double gate_limit(const GateSpec& spec, double base);

}  // namespace inferprof
