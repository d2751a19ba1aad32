#pragma once
// `inferprof compare`: the same trace replayed under several configurations
// that differ by caches (each from a cold, empty state), by model or by
// profile, with the speedup of each against the first and its 95% confidence
// interval, so noise is never read as a gain; --gate turns a change past a
// threshold into a failed check, as diff does for saved runs. Two modes:
//   lockstep    one process, one loaded model; request i is served under every
//               configuration in turn (order rotated per request), each with
//               its own caches: drift hits every configuration alike, and the
//               intervals are paired: one for this trace (noise with the trace
//               held fixed; the verdict reads it), one for traffic like it.
//   sequential  whole replays one after another, interleaved when repeated
//               (A B C A B C ...); the interval is a bootstrap over the pooled
//               requests, which cannot see drift between replays.
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inferprof/enum_names.hpp"
#include "inferprof/gate.hpp"
#include "inferprof/replay.hpp"
#include "inferprof/report.hpp"

namespace inferprof {

enum class CompareMode : std::uint8_t { lockstep, sequential };
template <>
struct EnumNames<CompareMode> {
  static constexpr std::array<std::string_view, 2> names{"lockstep", "sequential"};
};
// The report module's spelling of enum_name (header-only: it does not depend on replay).
inline std::string_view compare_mode_name(CompareMode m) {
  return enum_name(m);
}

// Which speedup intervals the table shows: the this-trace one (the verdict's),
// or both it and the traffic-like one (compare.json and compare.csv have both).
enum class CompareIntervals : std::uint8_t { this_trace, both };
template <>
struct EnumNames<CompareIntervals> {
  static constexpr std::array<std::string_view, 2> names{"this-trace", "both"};
};

struct CompareConfig {
  RunConfig base;                           // model, trace, profile and replay settings; base.out_dir unused
  std::vector<std::string> configurations;  // "none", "l1", "l1,l2", ...; the first is the baseline
  // One of the three may list several, the configurations then differ by it
  // (the first is the baseline); the others give one each (empty: the base's).
  std::vector<std::string> models;  // --model: TorchScript files, or NAME@VERSION with --store
  std::vector<Profile> profiles;    // --profile given more than once
  // --gate (lockstep): each gate applied to every configuration against the
  // first, on the mean per request, paired, with the this-trace interval.
  std::vector<GateSpec> gates;
  std::vector<TierSpec> overrides;  // --tier
  std::string redis_url;            // --redis
  int repeat = 1;
  std::string out_dir;           // compare.csv, compare.json, one folder per configuration
  bool flamegraph_diff = false;  // diff-<config>.svg against the baseline
  // nullopt: lockstep for a closed loop with one worker, else sequential.
  // Lockstep with --open-loop or --concurrency > 1 is bad input.
  std::optional<CompareMode> mode;
  CompareIntervals intervals = CompareIntervals::this_trace;
  // --precision PCT (lockstep): passes repeat, each from cold caches, until every
  // configuration's this-trace interval is within +-PCT% of its speedup, or
  // max_time_s has passed; `repeat` is then the least number of passes.
  std::optional<double> precision_pct;
  double max_time_s = 600;
};

// A speedup (baseline / this) with its bootstrap 95% confidence interval.
struct Speedup {
  double value = 1, low = 1, high = 1;
  bool noise = false;  // the interval includes 1.0
};

// What served a request, as this_trace_speedup reads it: "none" (no cache
// tier), "miss", "l1_hit", "l2_hit", "l3_hit".
inline constexpr std::uint8_t kOutcomeNone = 0, kOutcomeMiss = 1, kOutcomeCodes = 5;
std::uint8_t outcome_code(std::string_view outcome);

// How this_trace_speedup grouped the requests.
struct TraceIntervalInfo {
  std::size_t classes = 0;      // input x outcome under both configurations
  std::size_t singletons = 0;   // requests alone in their class: noise from the pooled spread
  bool inputs_ignored = false;  // no input repeated with the same outcomes: classes by outcome alone
  bool borrowed = false;        // some singletons' outcome had too few repeats of its own: noise pooled over all
  std::size_t passes = 0;       // lockstep passes told apart (`pass`); 0 when not given
  bool between_passes = false;  // the passes' own speedups spread wider than the requests' noise: it widened
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

CompareResult run_compare(const CompareConfig& config);

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

// Bootstrap 95% CI of mean(base) / mean(other), resampling requests
// (deterministic seed). Exposed for tests.
Speedup bootstrap_speedup(const std::vector<double>& base, const std::vector<double>& other, int resamples = 2000);

// Paired bootstrap 95% CI of mean(base) / mean(other) when base[i] and
// other[i] are the same request i served under both configurations (lockstep):
// each resample draws request indices once and uses them for both, so drift
// that slows request i under both cancels instead of widening the interval.
// The interval is the percentile one, widened to the ratio's linearised
// t-interval (n - 1 degrees of freedom) where that is wider. With `pace` (one
// value per request, as machine_pace gives), both sides' latencies of request
// i are divided by pace[i] first. base, other and a non-empty pace must have
// the same size (throws std::invalid_argument).
Speedup paired_bootstrap_speedup(const std::vector<double>& base, const std::vector<double>& other,
                                 int resamples = 2000, const std::vector<double>& pace = {});

// The speedup's 95% interval for *this trace* (lockstep): measurement noise
// with the trace held fixed, the question a verdict ("faster", "no measurable
// difference") answers. Request i belongs to a class: its input (`input`, a
// key hash) and what served it under each configuration (outcome_code). Only
// the timing within a class varies: a stratified paired bootstrap redraws each
// class's requests from themselves; a request alone in its class is scaled by
// relative residuals drawn from the classes of the same outcome (a miss pools
// with an uncached request: the same work), or from all when that outcome
// has fewer than five. The interval is the union of that bootstrap's
// percentile interval and the ratio's linearised t-interval on the log scale
// (within-class variances, n - classes degrees of freedom), so no bound is
// ever <= 0. With `pace` both sides are divided by it first (machine_pace).
// With `pass` (request i's lockstep pass) and three or more passes, the
// interval is also widened to the ratio's t-interval with passes as clusters
// (passes - 1 degrees of freedom, log scale): what moves a whole pass (the
// machine's state over its seconds) is noise the request resampling cannot see.
Speedup this_trace_speedup(const std::vector<double>& base, const std::vector<double>& other,
                           const std::vector<std::uint64_t>& input, const std::vector<std::uint8_t>& base_outcome,
                           const std::vector<std::uint8_t>& other_outcome, int resamples = 2000,
                           const std::vector<double>& pace = {}, TraceIntervalInfo* info = nullptr,
                           const std::vector<std::uint32_t>& pass = {});

// The 97.5% quantile of Student's t with `df` degrees of freedom (infinite for 0).
double student_t_975(std::size_t df);

// How slow the machine ran around each request of a lockstep pass, relative to
// the whole pass (1 = its usual speed, 1.2 = 20% slower), read off the
// baseline's own latencies: their median over the `window` requests centred on
// i, divided by the median of those medians. Pairing cancels drift only when
// both sides' requests are alike; a cache's misses cluster early (cold keys),
// so a slow stretch there weighs on the cached side alone. Dividing every pair
// by the pace around it weighs each stretch of the run alike. Meaningful when
// the baseline does the same work for every request (no caches).
constexpr std::size_t kPaceWindow = 31;
std::vector<double> machine_pace(const std::vector<double>& baseline_us, std::size_t window = kPaceWindow);

// The bootstrap machinery compare and diff share: draws with replacement from
// a fixed seed, so the same data always gives the same interval.
class Resampler {
 public:
  explicit Resampler(std::uint64_t seed = 42) : rng_(seed) {}
  // One resample of `from` (same size) into `into`.
  void draw(const std::vector<double>& from, std::vector<double>& into);
  // The mean of one resample of `from`, without materialising it.
  double draw_mean(const std::vector<double>& from);

 private:
  std::mt19937_64 rng_;
};

// The central `confidence` interval of bootstrap replicates (reordered): their
// (1 - c) / 2 and (1 + c) / 2 quantiles. {0, 0} when empty.
std::pair<double, double> percentile_interval(std::vector<double>& replicates, double confidence);

}  // namespace inferprof
