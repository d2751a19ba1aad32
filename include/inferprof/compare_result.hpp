#pragma once
// `inferprof compare`'s result (inferprof/compare.hpp runs it), and its
// reporters (src/report/render/compare_<format>.cpp).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inferprof/cache.hpp"
#include "inferprof/enum_names.hpp"
#include "inferprof/gate.hpp"
#include "inferprof/run_result.hpp"
#include "inferprof/stats.hpp"

namespace inferprof {

enum class CompareMode : std::uint8_t { lockstep, sequential };
template <>
struct EnumNames<CompareMode> {
  static constexpr std::array<std::string_view, 2> names{"lockstep", "sequential"};
};
inline std::string_view compare_mode_name(CompareMode m) {
  return enum_name(m);
}

// Where lockstep passes after the first run (compare --pass-process): fresh,
// each in a process of its own; same, all in compare's process.
enum class PassProcess : std::uint8_t { fresh, same };
template <>
struct EnumNames<PassProcess> {
  static constexpr std::array<std::string_view, 2> names{"fresh", "same"};
};

struct CompareRow {
  std::string name;    // the configuration, e.g. "l1,l2", "mobilenet.pt", "resize-512"
  std::string folder;  // its reports' folder under --out: "l1+l2"; "none-2" for a second "none"
  std::vector<TierSpec> tiers;
  RunSummary last;               // the last repeat's full summary (its reports are written)
  std::vector<double> means_us;  // mean latency of each repeat completed (fewer than asked when interrupted)
  std::vector<double> walls_s;   // replay time of each repeat
  double mean_us = 0, p50_us = 0, p99_us = 0, rps = 0, wall_s = 0;  // over repeats (p50/p99: of the last)
  Speedup mean_speedup;                                             // baseline mean latency / this one's
  double unpaced_speedup = 0;  // CompareResult::paced: the same ratio without dividing by the pace
  Speedup wall_speedup;        // baseline replay time / this one's
  // Lockstep: mean_speedup is the this-trace interval (this_trace_speedup), the
  // one its verdict reads; traffic_speedup resamples whole requests (traffic
  // like this trace); cpu_speedup is the same as mean_speedup on thread CPU
  // time (requests whose CPU time was read). Sequential: all three are the
  // request bootstrap (cpu_speedup a point value).
  Speedup traffic_speedup;
  Speedup cpu_speedup;
  Speedup rerun_speedup;             // lockstep: where a rerun of this compare reads (rerun_interval)
  TraceIntervalInfo interval_facts;  // lockstep: how mean_speedup grouped the requests
  bool outliers_dominate = false;    // the slowest 1% of requests hold over half the time
  // What a request costs by what served it: l1_hit, l2_hit, l3_hit, miss
  // (count and mean µs; p50/p99 unset). Lockstep: over every repeat;
  // sequential: the last repeat's. Empty without caches.
  std::vector<OutcomeStats> outcome_costs;
};

// One --gate applied to one configuration against the baseline. The change
// is the paired ratio of means (this-trace interval) applied to the
// baseline's mean, so its point and interval come from one estimate.
struct CompareGate {
  std::string configuration;
  std::string gate;                 // as written
  std::string stage = "total";      // or a stage name
  std::string clock = "wall";       // or "cpu"
  Change change;                    // µs per request; interval of the difference
  double limit = 0;                 // allowed change, µs
  Verdict verdict = Verdict::none;  // ok, regression, improved, or unstable (the interval straddles the limit)
};

struct CompareResult {
  std::string varies = "caches";  // what differs between the configurations: caches, model or profile
  std::vector<CompareRow> rows;   // the configurations with at least one completed replay
  int repeat = 1;
  CompareMode mode = CompareMode::sequential;
  std::uint64_t paired = 0;  // lockstep: the (repeat, request) pairs the interval resamples
  // Lockstep: where the passes after the first ran, and the process of each pass.
  PassProcess pass_process = PassProcess::same;
  std::vector<std::int64_t> pass_pids;
  // Lockstep with an uncached baseline: the speedups divide each request by the
  // machine's pace around it (machine_pace); its lowest and highest value.
  bool paced = false;
  std::size_t pace_window = 0;  // the requests each pace value is the median of
  double pace_min = 1, pace_max = 1;
  std::string interval;          // which interval the speedups show, in words
  std::string traffic_interval;  // the second interval (traffic like this), in words; empty: none
  bool show_traffic = false;     // --intervals both: the table shows the traffic interval too
  // --precision: the target, whether every configuration reached it, and the
  // widest interval's relative half-width (max of high/value - 1 and
  // 1 - low/value) with its configuration, after `repeat` passes.
  std::optional<double> precision_pct;
  bool precision_reached = false;
  double widest_half_width = 0;
  std::string widest_config;
  std::string interrupted_by;        // "SIGINT"/"SIGTERM": stopped early; rows hold what completed
  std::vector<std::string> not_run;  // configurations an interrupt left without a completed replay
  std::vector<std::string> warnings;
  std::vector<std::string> files;
  std::uint64_t verify_mismatches = 0;
  std::vector<CompareGate> gates;  // --gate: per configuration after the first, per gate (and stage for "*")
  int regressions = 0, unstable = 0;
  // 1 on a regression, kExitUnstable when a gate's interval straddles its
  // limit (more passes, --precision, would settle it), else 0.
  int gate_exit_code() const { return regressions > 0 ? 1 : unstable > 0 ? kExitUnstable : 0; }
};

// Reporters (src/report/render/compare_<format>.cpp; --format picks one: report/format.hpp).
std::string render_compare_table(const CompareResult& r);
std::string render_compare_markdown(const CompareResult& r);
std::string render_compare_csv(const CompareResult& r);
std::string render_compare_json(const CompareResult& r);
// report.html: speedups with their intervals, each configuration's latency CDF
// and stages, what served its requests, the gates (compare_html.cpp).
std::string render_compare_html(const CompareResult& r);
// A differential flame graph over the union of both runs' stacks (a frame is as
// wide as the larger of its two per-request times), red where time grew
// against `before`, blue where it shrank (per request, so runs of different
// lengths compare).
std::string render_diff_flamegraph_svg(const std::vector<std::pair<std::string, std::uint64_t>>& before,
                                       std::uint64_t before_requests,
                                       const std::vector<std::pair<std::string, std::uint64_t>>& after,
                                       std::uint64_t after_requests, const std::string& title);

}  // namespace inferprof
