// Comparing saved runs, one or several per side: are they comparable, what
// changed, and which changes are past their gate and statistically clear.
#include "inferprof/diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "base/histogram.hpp"
#include "inferprof/error.hpp"
#include "inferprof/stats.hpp"

namespace inferprof {
namespace {

constexpr std::array<std::string_view, 5> kLatencyMetrics = {"mean", "p50", "p90", "p99", "max"};
// What summary.json records of thread CPU time.
constexpr std::array<std::string_view, 3> kCpuMetrics = {"mean", "p50", "p99"};

double metric_of(const StageStats& s, std::string_view clock, std::string_view metric) {
  if (clock == "cpu") return metric == "mean" ? s.cpu_mean_us : metric == "p50" ? s.cpu_p50_us : s.cpu_p99_us;
  if (metric == "mean") return s.mean_us;
  if (metric == "p50") return s.p50_us;
  if (metric == "p90") return s.p90_us;
  if (metric == "p99") return s.p99_us;
  return s.max_us;
}

// The index of `metric` among the bootstrapped ones (mean, p50, p90, p99); 4 for max.
std::size_t interval_index(std::string_view metric) {
  return static_cast<std::size_t>(std::find(kLatencyMetrics.begin(), kLatencyMetrics.end(), metric) -
                                  kLatencyMetrics.begin());
}

std::string stage_label(std::size_t i) {
  return i < kStageCount ? std::string(kStageNames[i]) : "total";
}

std::string or_unknown(const std::string& s) {
  return s.empty() ? "not recorded" : s;
}

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Differences that make a comparison meaningless without --force: what was
// run (model, trace), where (the kind of machine, not its host name: CI
// runners get a new name every job) and with how much of it. `lb` and `ln`
// name the two runs in the messages.
std::vector<std::string> identity_mismatches(const RunData& b, const RunData& n, const std::string& lb,
                                             const std::string& ln) {
  std::vector<std::string> out;
  auto differ = [&](std::string_view what, const std::string& x, const std::string& y) {
    if (!x.empty() && !y.empty() && x != y) out.push_back(fmt::format("{} differ: {} {} vs {} {}", what, lb, x, ln, y));
  };
  // Summaries written before the hashes were recorded: the paths stand in.
  const bool hashes = !b.model_hash.empty() && !n.model_hash.empty() && !b.trace_hash.empty() && !n.trace_hash.empty();
  differ("models", hashes ? b.model_hash : b.model_path, hashes ? n.model_hash : n.model_path);
  differ("traces", hashes ? b.trace_hash : b.trace_path, hashes ? n.trace_hash : n.trace_path);
  if (b.limit != n.limit)
    out.push_back(fmt::format("trace limits differ: {} {} vs {} {}", lb, b.limit ? std::to_string(b.limit) : "all", ln,
                              n.limit ? std::to_string(n.limit) : "all"));
  differ("machines (CPU)", b.cpu_model, n.cpu_model);
  if (b.cpu_cores && n.cpu_cores && b.cpu_cores != n.cpu_cores)
    out.push_back(fmt::format("machines (cores) differ: {} {} vs {} {}", lb, b.cpu_cores, ln, n.cpu_cores));
  differ("libtorch versions", b.libtorch_version, n.libtorch_version);
  differ("devices", b.device, n.device);
  if (b.threads != n.threads)
    out.push_back(fmt::format("intra-op threads differ: {} {} vs {} {}", lb, b.threads, ln, n.threads));
  if (b.concurrency != n.concurrency)
    out.push_back(fmt::format("concurrency differs: {} {} vs {} {}", lb, b.concurrency, ln, n.concurrency));
  differ("replay modes", b.mode, n.mode);
  return out;
}

// What may legitimately differ between a baseline and a change, but is worth saying.
std::vector<std::string> config_notes(const RunData& b, const RunData& n) {
  std::vector<std::string> out;
  if (b.profile_name != n.profile_name)
    out.push_back(fmt::format("profiles differ: base {} vs new {}", b.profile_name, n.profile_name));
  if (b.model_hash.empty() || n.model_hash.empty() || b.trace_hash.empty() || n.trace_hash.empty())
    out.push_back(
        fmt::format("model/trace hashes not recorded in {} (an older summary.json): models {} vs {}, "
                    "traces {} vs {} compared by path only",
                    b.model_hash.empty() ? "base" : "new", b.model_path, n.model_path, b.trace_path, n.trace_path));
  if (b.cpu_model.empty() || n.cpu_model.empty())
    out.push_back(fmt::format("the machine is not recorded in {}: hosts {} vs {}", b.cpu_model.empty() ? "base" : "new",
                              or_unknown(b.hostname), or_unknown(n.hostname)));
  return out;
}

const GateSpec* gate_for(const std::vector<GateSpec>& gates, const std::string& stage, std::string_view clock,
                         std::string_view metric) {
  const GateSpec* wildcard = nullptr;
  for (const GateSpec& g : gates) {
    if (g.metric != metric || (!g.stage.empty() && g.clock != clock)) continue;
    if (g.stage == stage) return &g;  // a named stage overrides "every stage"
    if (g.stage == "*") wildcard = &g;
  }
  return wildcard;
}

// (max - min) / mean of a side's runs, with two runs or more.
std::optional<double> spread_of(const std::vector<double>& runs) {
  if (runs.size() < 2) return std::nullopt;
  const auto [lo, hi] = std::minmax_element(runs.begin(), runs.end());
  const double mean = mean_of(runs);
  return mean != 0 ? (*hi - *lo) / std::abs(mean) : 0;
}

// A row's figures from the figure of each run of each side.
void set_runs(DiffRow& row, std::vector<double> base_runs, std::vector<double> new_runs) {
  row.base_runs = std::move(base_runs);
  row.new_runs = std::move(new_runs);
  row.change = Change{mean_of(row.base_runs), mean_of(row.new_runs), std::nullopt};
  row.base_spread = spread_of(row.base_runs);
  row.new_spread = spread_of(row.new_runs);
}

// Whether the runs of one side differ among themselves by more than `allowed(mean)`.
template <typename Allowed>
bool disagree(const std::vector<double>& runs, Allowed allowed) {
  if (runs.size() < 2) return false;
  const auto [lo, hi] = std::minmax_element(runs.begin(), runs.end());
  return *hi - *lo > allowed(mean_of(runs));
}

// The mean over a side's runs of each run's probes (before and after) of
// `part`; nullopt if a run has none.
std::optional<double> probe_of(const std::vector<RunData>& runs, double SpeedProbe::*part) {
  double sum = 0;
  for (const RunData& d : runs) {
    if (!d.speed_before.measured() || !d.speed_after.measured()) return std::nullopt;
    sum += (d.speed_before.*part + d.speed_after.*part) / 2;
  }
  return sum / static_cast<double>(runs.size());
}

// What would settle a change past its gate whose interval straddles it: the
// runs per side that bring the interval's half-width (t x the standard error
// of the difference of the sides' means, from the runs' own spread) inside
// the change's distance from the gate.
std::string runs_needed_note(const DiffRow& row, bool higher_is_better) {
  if (row.base_runs.size() < 2 || row.new_runs.size() < 2)
    return "the interval straddles the gate: give 3 or more runs per side (--base DIR... --new DIR...) so the "
           "spread between runs shows how many would settle it";
  auto variance = [](const std::vector<double>& v) {
    const double m = mean_of(v);
    double ss = 0;
    for (double x : v)
      ss += (x - m) * (x - m);
    return ss / static_cast<double>(v.size() - 1);
  };
  const double spread = std::sqrt((variance(row.base_runs) + variance(row.new_runs)) / 2);  // one run's SD
  const double worse = (higher_is_better ? -1.0 : 1.0) * row.change.delta();
  const double gap = std::abs(std::abs(worse) - row.limit);
  const std::size_t have = std::min(row.base_runs.size(), row.new_runs.size());
  if (!(spread > 0))
    return "the interval straddles the gate while the runs agree: more requests per run would settle it";
  constexpr std::size_t kMost = 200;
  for (std::size_t k = 2; k <= kMost; ++k) {
    const double half = student_t_975(2 * k - 2) * spread * std::sqrt(2.0 / static_cast<double>(k));
    if (half < gap)
      return fmt::format(
          "the interval straddles the gate: at the measured spread between runs ({:.1f}% of the mean per run) about "
          "{} runs per side would settle it ({} now), alternated base/new on one machine",
          100 * spread / std::max(std::abs(row.change.base), 1e-12), k, have);
  }
  return fmt::format(
      "the interval straddles the gate: the change lies within {:.2f}% of it, closer than {} runs per side at the "
      "measured spread between runs could tell",
      100 * gap / std::max(std::abs(row.change.base), 1e-12), kMost);
}

void apply(DiffRow& row, const GateSpec* gate, DiffResult& r, bool higher_is_better = false) {
  if (!gate) return;
  auto allowed = [&](double base) {
    return higher_is_better ? std::abs(base) * gate->pct / 100.0 : gate_limit(*gate, base);
  };
  row.gate = gate->text;
  row.limit = allowed(row.change.base);
  row.verdict = judge(row.change, row.limit, higher_is_better);
  // Past the threshold while a side cannot agree with itself by that much.
  // With an interval, the runs' disagreement is inside it (hierarchical
  // bootstrap) and the interval decides: wholly past the gate is a regression
  // however much the runs disagree (a +37% preprocess change read "unstable"
  // at [+16.3%, +68.8%] against 10%), and one that straddles the gate reads
  // unstable rather than noise, since more runs would settle it. Without an
  // interval the change may be the machine's, so it is not judged, unless the
  // sides are apart anyway: every run of one beyond every run of the other by
  // more than the threshold.
  const bool unsure = disagree(row.base_runs, allowed) || disagree(row.new_runs, allowed);
  if (unsure && row.change.interval) {
    if (row.verdict == Verdict::noise) row.verdict = Verdict::unstable;
  } else if (unsure && row.verdict != Verdict::ok) {
    // Each side's lowest and highest run, oriented so that larger is worse.
    auto range = [&](const std::vector<double>& v) {
      const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      return higher_is_better ? std::pair{-*hi, -*lo} : std::pair{*lo, *hi};
    };
    const auto [base_lo, base_hi] = range(row.base_runs);
    const auto [new_lo, new_hi] = range(row.new_runs);
    const bool apart = row.verdict == Verdict::regression ? new_lo - base_hi > row.limit
                       : row.verdict == Verdict::improved ? base_lo - new_hi > row.limit
                                                          : false;
    if (!apart) row.verdict = Verdict::unstable;
  }
  // Past the gate while the machine itself ran that much slower (or faster)
  // on one side: not the code's doing as far as anyone can tell.
  if (r.machine_slowdown &&
      explained_by_machine(row.change, *r.machine_slowdown, *gate, row.verdict, higher_is_better)) {
    row.verdict = Verdict::unstable;
    row.note = fmt::format("the machine ran {:.0f}% {} on the new side (speed probe): within the gate after that",
                           std::abs(*r.machine_slowdown - 1) * 100, *r.machine_slowdown > 1 ? "slower" : "faster");
  }
  if ((row.verdict == Verdict::noise || row.verdict == Verdict::unstable) && row.note.empty())
    row.note = runs_needed_note(row, higher_is_better);
  ++r.gated;
  if (row.verdict == Verdict::regression) ++r.regressions;
  if (row.verdict == Verdict::noise) ++r.noise;
  if (row.verdict == Verdict::improved) ++r.improved;
  if (row.verdict == Verdict::unstable) ++r.unstable;
}

std::vector<GateSpec> checked_gates(const DiffConfig& config) {
  if (!(config.confidence > 0.5 && config.confidence < 1))
    throw bad_input(fmt::format("--confidence {} is out of range (expected a level between 0.5 and 1, e.g. 0.95)",
                                config.confidence));
  return parse_gates(config.gates);
}

std::string run_name(std::string_view side, std::size_t i, std::size_t count) {
  return count > 1 ? fmt::format("{} {}", side, i + 1) : std::string(side);
}

// Every run against the first base run; throws on the first pair that differs unless forced.
std::vector<std::string> check_comparable(const std::vector<RunData>& base, const std::vector<RunData>& now,
                                          bool force) {
  std::vector<std::string> all;
  auto check = [&](const RunData& other, const std::string& label) {
    const std::string first = run_name("base", 0, base.size());
    auto m = identity_mismatches(base[0], other, first, label);
    if (!m.empty() && !force) {
      std::string why;
      for (const auto& x : m)
        why += (why.empty() ? "" : "; ") + x;
      throw bad_input(fmt::format("{} and {} are not comparable: {} (--force compares them anyway)",
                                  base[0].summary_path, other.summary_path, why));
    }
    for (auto& x : m)
      if (std::find(all.begin(), all.end(), x) == all.end()) all.push_back(std::move(x));
  };
  for (std::size_t i = 1; i < base.size(); ++i)
    check(base[i], run_name("base", i, base.size()));
  for (std::size_t i = 0; i < now.size(); ++i)
    check(now[i], run_name("new", i, now.size()));
  return all;
}

std::size_t requests_of(const std::vector<RunData>& runs) {
  std::size_t n = 0;
  for (const auto& r : runs)
    n += r.per_request[kStageCount].size();
  return n;
}

std::string intervals_note(const DiffResult& r, bool thinned) {
  const std::size_t nb = r.base.size(), nn = r.now.size();
  const std::string thin = thinned ? fmt::format(", each run evenly thinned to at most {}", RunData::kMaxRows) : "";
  if (nb == 1 && nn == 1)
    return fmt::format(
        "{:.0f}% bootstrap intervals over requests ({} resamples of {} base vs {} new requests from requests.csv{}); "
        "one run per side: the interval cannot see drift between runs (give several with --base DIR... --new "
        "DIR...)",
        r.confidence * 100, r.resamples, requests_of(r.base), requests_of(r.now), thin);
  std::string out = fmt::format(
      "{:.0f}% hierarchical bootstrap intervals ({} resamples, each drawing {} base and {} new run{} with "
      "replacement, then the requests of each drawn run; {} base vs {} new requests from requests.csv{}), each "
      "widened to Welch's t-interval over the runs' own figures where that is wider (a bootstrap over this few runs "
      "understates their spread): the variation between runs is inside the interval",
      r.confidence * 100, r.resamples, nb, nn, nn == 1 ? "" : "s", requests_of(r.base), requests_of(r.now), thin);
  if (nb == 1 || nn == 1)
    out += fmt::format("; the {} side has one run, so its variation between runs is taken to be the other side's",
                       nb == 1 ? "base" : "new");
  return out;
}

std::string no_intervals_note(const std::vector<RunData>& base, const std::vector<RunData>& now) {
  for (const auto* side : {&base, &now})
    for (const RunData& run : *side)
      if (run.csv_path.empty() || run.per_request[kStageCount].empty())
        return fmt::format(
            "no confidence intervals: {} {} requests.csv beside its summary.json ({}), so gates use the threshold "
            "alone",
            side == &base ? "base" : "new", run.csv_path.empty() ? "has no" : "has an empty", run.summary_path);
  return "";
}

bool all_of_runs(const std::vector<RunData>& base, const std::vector<RunData>& now,
                 const std::function<bool(const RunData&)>& pred) {
  return std::all_of(base.begin(), base.end(), pred) && std::all_of(now.begin(), now.end(), pred);
}

// The figure `value` gives of each run, in order.
template <typename Value>
std::vector<double> figure_per_run(const std::vector<RunData>& runs, Value value) {
  std::vector<double> out;
  for (const RunData& d : runs)
    out.push_back(value(d));
  return out;
}

// The wider of the two at each end.
MetricIntervals widened_to(MetricIntervals ci, const std::optional<MetricIntervals>& other) {
  if (!other) return ci;
  auto widen = [](std::pair<double, double>& a, const std::pair<double, double>& b) {
    a = {std::min(a.first, b.first), std::max(a.second, b.second)};
  };
  for (std::size_t m = 0; m < 4; ++m) {
    widen(ci.mean_p50_p90_p99[m], other->mean_p50_p90_p99[m]);
    widen(ci.relative[m], other->relative[m]);
  }
  return ci;
}

// What rows are made of: a stage, a preprocessing op (a part of the preprocess
// stage) or the request total, as each run holds it.
enum class SeriesKind { stage, part, total };
struct Series {
  std::string name;  // "compute", "preprocess.resize", "total"
  std::function<const StageStats&(const RunData&)> stats;
  std::function<const std::vector<double>&(const RunData&, bool cpu)> requests;  // per-request µs
  SeriesKind kind = SeriesKind::stage;
};

// The wall and cpu rows of one series, gated. Each interval costs a
// bootstrap: wall rows of stages and the total have one, cpu rows of the
// total, and any row of a stage or part a gate names.
void add_series_rows(DiffResult& r, const Series& series, bool have_csv, bool have_cpu_csv, const DiffConfig& config) {
  const bool total = series.kind == SeriesKind::total;
  const bool shown =
      total || (all_of_runs(r.base, r.now, [&](const RunData& d) { return series.stats(d).applicable; }) &&
                !all_of_runs(r.base, r.now, [&](const RunData& d) { return series.stats(d).max_us <= 0; }));
  if (!shown) {
    r.hidden.push_back(series.name);
    return;
  }
  for (const std::string clock : {"wall", "cpu"}) {
    const bool is_cpu = clock == "cpu";
    if (is_cpu && !all_of_runs(r.base, r.now, [&](const RunData& d) { return series.stats(d).cpu; })) continue;
    const bool gated = std::any_of(r.gates.begin(), r.gates.end(), [&](const GateSpec& g) {
      return g.clock == clock && (g.stage == series.name || (g.stage == "*" && series.kind != SeriesKind::part));
    });
    const bool with_ci =
        (is_cpu ? have_cpu_csv : have_csv) && (gated || total || (!is_cpu && series.kind == SeriesKind::stage));
    MetricIntervals ci;
    if (with_ci) {
      auto requests = [&](const std::vector<RunData>& runs) {
        std::vector<std::vector<double>> out;
        for (const RunData& d : runs)
          out.push_back(series.requests(d, is_cpu));
        return out;
      };
      const auto base_requests = requests(r.base), new_requests = requests(r.now);
      ci = widened_to(hierarchical_intervals(base_requests, new_requests, config.confidence, config.resamples),
                      run_level_intervals(base_requests, new_requests, config.confidence));
    }
    for (std::string_view metric :
         is_cpu ? std::vector<std::string_view>(kCpuMetrics.begin(), kCpuMetrics.end())
                : std::vector<std::string_view>(kLatencyMetrics.begin(), kLatencyMetrics.end())) {
      DiffRow row;
      row.stage = series.name;
      row.clock = clock;
      row.metric = std::string(metric);
      auto value = [&](const RunData& d) { return metric_of(series.stats(d), clock, metric); };
      set_runs(row, figure_per_run(r.base, value), figure_per_run(r.now, value));
      const std::size_t m = interval_index(metric);
      if (with_ci && m < 4) {
        row.change.interval = ci.mean_p50_p90_p99[m];
        row.relative = ci.relative[m];
      }
      if (have_csv && m == 4) row.note = "threshold only: a maximum has no bootstrap interval";
      if (is_cpu && have_csv && !have_cpu_csv) row.note = "threshold only: requests.csv has no cpu times";
      if (!with_ci && (is_cpu ? have_cpu_csv : have_csv) && m < 4)
        row.note = series.kind == SeriesKind::part
                       ? "no interval: a preprocessing op's rows get intervals when a gate names it"
                       : "no interval: cpu intervals cover the total and gated stages";
      // "*" gates every stage and the total, not the parts of a stage (its own row already holds them).
      const GateSpec* gate = gate_for(r.gates, series.name, clock, metric);
      if (gate && gate->stage == "*" && series.kind == SeriesKind::part) gate = nullptr;
      apply(row, gate, r);
      r.rows.push_back(std::move(row));
    }
  }
}

const RunData::Part* part_of(const RunData& d, const std::string& name) {
  for (const RunData::Part& p : d.preprocess_ops)
    if (p.name == name) return &p;
  return nullptr;
}

// The preprocessing ops every run has, in the first base run's order (a lone
// op only when a gate names it); a gate naming one that some run lacks is refused.
void add_part_rows(DiffResult& r, bool have_csv, bool have_cpu_csv, const DiffConfig& config) {
  const bool several = r.base.front().preprocess_ops.size() > 1;
  for (const RunData::Part& part : r.base.front().preprocess_ops) {
    if (!all_of_runs(r.base, r.now, [&](const RunData& d) { return part_of(d, part.name) != nullptr; })) continue;
    // A lone op is the preprocess stage itself: its rows would repeat the stage's unless a gate names it.
    const bool named =
        std::any_of(r.gates.begin(), r.gates.end(), [&](const GateSpec& g) { return g.stage == part.name; });
    if (!several && !named) continue;
    add_series_rows(
        r,
        Series{part.name, [name = part.name](const RunData& d) -> const StageStats& { return part_of(d, name)->stats; },
               [name = part.name](const RunData& d, bool cpu) -> const std::vector<double>& {
                 return cpu ? part_of(d, name)->per_request_cpu : part_of(d, name)->per_request;
               },
               SeriesKind::part},
        have_csv, have_cpu_csv, config);
  }
  for (const GateSpec& g : r.gates) {
    if (g.stage.find('.') == std::string::npos) continue;
    if (all_of_runs(r.base, r.now, [&](const RunData& d) { return part_of(d, g.stage) != nullptr; })) continue;
    std::string have;
    for (const RunData::Part& p : r.base.front().preprocess_ops)
      if (all_of_runs(r.base, r.now, [&](const RunData& d) { return part_of(d, p.name) != nullptr; }))
        have += (have.empty() ? "" : ", ") + p.name;
    throw bad_input(fmt::format("--max-regression: gate '{}': not every run has {} (they have {})", g.text, g.stage,
                                have.empty() ? "no preprocessing ops recorded" : have));
  }
}

// CPU gates need every run to have recorded thread CPU time; the default
// gates fall back to wall time for runs from before it was, others are refused.
void gates_without_cpu_time(DiffResult& r, const std::vector<RunData>& base, const std::vector<RunData>& now,
                            const DiffConfig& config) {
  if (std::none_of(r.gates.begin(), r.gates.end(), [](const GateSpec& g) { return g.clock == "cpu"; })) return;
  const RunData* without = nullptr;
  for (const auto* side : {&base, &now})
    for (const RunData& d : *side)
      if (!without && !d.stages[kStageCount].cpu) without = &d;
  if (config.gates != kDefaultGates)
    throw bad_input(fmt::format(
        "{}: no thread CPU time recorded (a summary.json from before inferprof measured it), so cpu gates cannot "
        "apply; gate on wall time instead, e.g. --max-regression {}",
        without->summary_path, kWallDefaultGates));
  r.gates = parse_gates(kWallDefaultGates);
  r.notes.push_back(fmt::format("default gates on wall time ({}): {} recorded no thread CPU time", kWallDefaultGates,
                                without->summary_path));
}

// mean, p50, p90, p99 of v (reordered); the quantiles by successive partial
// selection, each in the part above the previous one.
std::array<double, 4> mean_p50_p90_p99(std::vector<double>& v) {
  std::array<double, 4> s{};
  s[0] = mean_of(v);
  auto from = v.begin();
  const std::array<double, 3> qs = {0.50, 0.90, 0.99};
  for (std::size_t k = 0; k < qs.size(); ++k) {
    auto nth = v.begin() + static_cast<std::ptrdiff_t>(report::nearest_rank(qs[k], v.size()) - 1);
    if (nth >= from) std::nth_element(from, nth, v.end());
    s[k + 1] = *nth;
    from = nth;
  }
  return s;
}

}  // namespace

bool explained_by_machine(const Change& c, double slowdown, const GateSpec& gate, Verdict verdict,
                          bool higher_is_better) {
  if (verdict != Verdict::regression && verdict != Verdict::improved) return false;
  if (!(slowdown > 0) || std::abs(slowdown - 1) < kMachineSpeedNoise) return false;
  // The base figure as the new side's machine would have measured it.
  Change adjusted = c;
  adjusted.base = higher_is_better ? c.base / slowdown : c.base * slowdown;
  if (adjusted.interval) {
    const double shift = adjusted.base - c.base;
    adjusted.interval = std::pair{adjusted.interval->first - shift, adjusted.interval->second - shift};
  }
  const double limit = higher_is_better ? std::abs(adjusted.base) * gate.pct / 100.0 : gate_limit(gate, adjusted.base);
  return judge(adjusted, limit, higher_is_better) != verdict;
}

MetricIntervals hierarchical_intervals(const std::vector<std::vector<double>>& base_runs,
                                       const std::vector<std::vector<double>>& new_runs, double confidence,
                                       int resamples) {
  MetricIntervals out;
  auto usable = [](const std::vector<std::vector<double>>& runs) {
    return !runs.empty() && std::none_of(runs.begin(), runs.end(), [](const auto& r) { return r.empty(); });
  };
  if (!usable(base_runs) || !usable(new_runs) || resamples < 1) return out;
  Resampler resampler;
  std::mt19937_64 pick(7);  // which runs; fixed, like the resampler's seed
  std::array<std::vector<double>, 4> absolute, relative;
  for (auto* set : {&absolute, &relative})
    for (auto& v : *set)
      v.reserve(static_cast<std::size_t>(resamples));
  std::vector<double> drawn;
  // A side's statistic: the mean over as many runs as it has, drawn with
  // replacement, of each one's statistic on a resample of its requests.
  auto side = [&](const std::vector<std::vector<double>>& runs) {
    std::array<double, 4> sum{};
    std::uniform_int_distribution<std::size_t> which(0, runs.size() - 1);
    for (std::size_t k = 0; k < runs.size(); ++k) {
      resampler.draw(runs.size() == 1 ? runs[0] : runs[which(pick)], drawn);
      const auto s = mean_p50_p90_p99(drawn);
      for (std::size_t m = 0; m < 4; ++m)
        sum[m] += s[m] / static_cast<double>(runs.size());
    }
    return sum;
  };
  for (int i = 0; i < resamples; ++i) {
    const auto sb = side(base_runs), sn = side(new_runs);
    for (std::size_t m = 0; m < 4; ++m) {
      absolute[m].push_back(sn[m] - sb[m]);
      relative[m].push_back(sb[m] != 0 ? sn[m] / sb[m] - 1 : 0);
    }
  }
  for (std::size_t m = 0; m < 4; ++m) {
    out.mean_p50_p90_p99[m] = percentile_interval(absolute[m], confidence);
    out.relative[m] = percentile_interval(relative[m], confidence);
  }
  return out;
}

MetricIntervals bootstrap_metric_intervals(const std::vector<double>& base, const std::vector<double>& now,
                                           double confidence, int resamples) {
  return hierarchical_intervals({base}, {now}, confidence, resamples);
}

std::optional<MetricIntervals> run_level_intervals(const std::vector<std::vector<double>>& base_runs,
                                                   const std::vector<std::vector<double>>& new_runs,
                                                   double confidence) {
  const std::size_t kb = base_runs.size(), kn = new_runs.size();
  if (kb == 0 || kn == 0 || (kb < 2 && kn < 2)) return std::nullopt;
  auto figures = [](const std::vector<std::vector<double>>& runs) {
    std::vector<std::array<double, 4>> out;
    for (std::vector<double> r : runs) {
      if (r.empty()) return std::vector<std::array<double, 4>>{};
      out.push_back(mean_p50_p90_p99(r));
    }
    return out;
  };
  const auto fb = figures(base_runs), fn = figures(new_runs);
  if (fb.empty() || fn.empty()) return std::nullopt;
  auto moments = [](const std::vector<std::array<double, 4>>& f, std::size_t m, bool log) {
    double sum = 0, ss = 0;
    for (const auto& s : f)
      sum += log ? std::log(s[m]) : s[m];
    const double mean = sum / static_cast<double>(f.size());
    for (const auto& s : f) {
      const double d = (log ? std::log(s[m]) : s[m]) - mean;
      ss += d * d;
    }
    return std::pair{mean, f.size() > 1 ? ss / static_cast<double>(f.size() - 1) : -1.0};
  };
  const double p = (1 + confidence) / 2;
  // Welch's interval of new - base; a side with one run takes the other's
  // variance between runs (the machine's, not the code's) and its df.
  auto welch = [&](std::pair<double, double> b, std::pair<double, double> n) {
    if (b.second < 0) b.second = n.second;
    if (n.second < 0) n.second = b.second;
    const double eb = b.second / static_cast<double>(kb), en = n.second / static_cast<double>(kn);
    const double se = std::sqrt(eb + en);
    double df = 0;
    if (kb < 2 || kn < 2)
      df = static_cast<double>(std::max(kb, kn) - 1);
    else if (eb + en > 0)
      df = (eb + en) * (eb + en) / (eb * eb / static_cast<double>(kb - 1) + en * en / static_cast<double>(kn - 1));
    const double half = se > 0 ? student_t_quantile(p, df) * se : 0;
    return std::pair{n.first - b.first - half, n.first - b.first + half};
  };
  MetricIntervals out;
  for (std::size_t m = 0; m < 4; ++m) {
    out.mean_p50_p90_p99[m] = welch(moments(fb, m, false), moments(fn, m, false));
    const bool positive = std::all_of(fb.begin(), fb.end(), [&](const auto& s) { return s[m] > 0; }) &&
                          std::all_of(fn.begin(), fn.end(), [&](const auto& s) { return s[m] > 0; });
    if (positive) {
      // On the log scale, so the ratio's interval stays above -100%.
      const auto [lo, hi] = welch(moments(fb, m, true), moments(fn, m, true));
      out.relative[m] = {std::exp(lo) - 1, std::exp(hi) - 1};
    } else {
      const double base = moments(fb, m, false).first;
      out.relative[m] = base != 0 ? std::pair{out.mean_p50_p90_p99[m].first / std::abs(base),
                                              out.mean_p50_p90_p99[m].second / std::abs(base)}
                                  : std::pair{0.0, 0.0};
    }
  }
  return out;
}

DiffResult diff_runs(std::vector<RunData> base, std::vector<RunData> now, const DiffConfig& config) {
  if (base.empty() || now.empty()) throw bad_input("diff: no base or no new run given (expected at least one of each)");
  DiffResult r;
  r.gates = checked_gates(config);
  r.confidence = config.confidence;
  r.mismatches = check_comparable(base, now, config.force);
  r.notes = config_notes(base[0], now[0]);

  const bool cpu = all_of_runs(base, now, [](const RunData& d) { return d.stages[kStageCount].cpu; });
  if (!cpu) gates_without_cpu_time(r, base, now, config);

  const bool have_csv = all_of_runs(base, now, [](const RunData& d) { return !d.per_request[kStageCount].empty(); });
  const bool have_cpu_csv =
      have_csv && all_of_runs(base, now, [](const RunData& d) { return !d.per_request_cpu[kStageCount].empty(); });
  r.intervals = have_csv;
  r.base = std::move(base);
  r.now = std::move(now);
  r.base_probe_us = probe_of(r.base, &SpeedProbe::compute_us);
  r.new_probe_us = probe_of(r.now, &SpeedProbe::compute_us);
  if (r.base_probe_us && r.new_probe_us && *r.base_probe_us > 0) {
    r.machine_slowdown = *r.new_probe_us / *r.base_probe_us;
    // The memory walk moves with other processes' use of the cache: shown, not acted on.
    const double base_memory = *probe_of(r.base, &SpeedProbe::memory_us);
    const double new_memory = *probe_of(r.now, &SpeedProbe::memory_us);
    r.notes.push_back(fmt::format(
        "machine speed probe (fixed work before and after each run, thread CPU): compute base {:.0f} µs, new {:.0f} "
        "µs ({:+.1f}%{}); memory walk {:.0f} vs {:.0f} µs",
        *r.base_probe_us, *r.new_probe_us, (*r.machine_slowdown - 1) * 100,
        std::abs(*r.machine_slowdown - 1) < kMachineSpeedNoise
            ? ", within the probe's noise"
            : ": a gate past its threshold by no more than this reads unstable",
        base_memory, new_memory));
  }
  if (have_csv) {
    r.resamples = config.resamples;
    r.method = r.base.size() == 1 && r.now.size() == 1 ? "request bootstrap" : "hierarchical bootstrap";
    const bool thinned = !all_of_runs(r.base, r.now, [](const RunData& d) { return d.csv_rows <= RunData::kMaxRows; });
    r.intervals_note = intervals_note(r, thinned);
  } else {
    r.method = "none";
    r.intervals_note = no_intervals_note(r.base, r.now);
  }
  if (cpu && have_csv && !have_cpu_csv)
    r.notes.push_back(
        "no intervals on cpu rows: a requests.csv has no cpu_us column, so cpu gates use the threshold alone");

  for (std::size_t i = 0; i <= kStageCount; ++i) {
    const bool total = i == kStageCount;
    add_series_rows(r,
                    Series{stage_label(i), [i](const RunData& d) -> const StageStats& { return d.stages[i]; },
                           [i](const RunData& d, bool cpu) -> const std::vector<double>& {
                             return cpu ? d.per_request_cpu[i] : d.per_request[i];
                           },
                           total ? SeriesKind::total : SeriesKind::stage},
                    have_csv, have_cpu_csv, config);
    if (i == static_cast<std::size_t>(Stage::preprocess)) add_part_rows(r, have_csv, have_cpu_csv, config);
  }
  for (const GateSpec& g : r.gates)
    if (g.stage != "*" && !g.stage.empty() && std::find(r.hidden.begin(), r.hidden.end(), g.stage) != r.hidden.end())
      r.notes.push_back(fmt::format("gate '{}' not applied: {} is 0 or n/a in both runs", g.text, g.stage));

  DiffRow tp;
  tp.stage = "throughput";
  tp.metric = "req/s";
  tp.unit = "req/s";
  auto throughput = [](const RunData& d) { return d.throughput_rps; };
  set_runs(tp, figure_per_run(r.base, throughput), figure_per_run(r.now, throughput));
  tp.note = "threshold only: one figure per run";
  apply(tp, gate_for(r.gates, "", "wall", "throughput"), r, true);
  r.rows.push_back(std::move(tp));

  // Hit ratios of the tiers every run has, averaged over each side's runs.
  auto ratio_of = [](const RunData& d, const std::string& tier) -> std::optional<double> {
    for (const auto& [t, ratio] : d.hit_ratios)
      if (t == tier) return ratio;
    return std::nullopt;
  };
  for (const auto& [tier, unused] : r.base[0].hit_ratios) {
    if (!all_of_runs(r.base, r.now, [&](const RunData& d) { return ratio_of(d, tier).has_value(); })) continue;
    DiffRow row;
    row.stage = tier + " hit ratio";
    row.metric = "ratio";
    row.unit = "ratio";
    auto ratio = [&](const RunData& d) { return *ratio_of(d, tier); };
    set_runs(row, figure_per_run(r.base, ratio), figure_per_run(r.now, ratio));
    r.rows.push_back(std::move(row));
  }
  return r;
}

DiffResult diff_runs(RunData base, RunData now, const DiffConfig& config) {
  std::vector<RunData> b, n;
  b.push_back(std::move(base));
  n.push_back(std::move(now));
  return diff_runs(std::move(b), std::move(n), config);
}

DiffResult run_diff(const DiffConfig& config) {
  // The settings first: a typo there should not wait for large CSVs.
  checked_gates(config);
  if (config.base_paths.empty() || config.new_paths.empty())
    throw bad_input("diff: expected BASE NEW, or --base DIR... --new DIR... (at least one run per side)");
  std::vector<RunData> base, now;
  for (const auto& p : config.base_paths)
    base.push_back(load_run(p));
  for (const auto& p : config.new_paths)
    now.push_back(load_run(p));
  return diff_runs(std::move(base), std::move(now), config);
}

}  // namespace inferprof
