// Comparing two saved runs: are they comparable, what changed, and which
// changes are past their gate and statistically clear.
#include "inferprof/diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "inferprof/compare.hpp"
#include "inferprof/error.hpp"
#include "report/histogram.hpp"

namespace inferprof {
namespace {

constexpr std::array<std::string_view, 5> kLatencyMetrics = {"mean", "p50", "p90", "p99", "max"};

double metric_of(const StageStats& s, std::string_view metric) {
  if (metric == "mean") return s.mean_us;
  if (metric == "p50") return s.p50_us;
  if (metric == "p90") return s.p90_us;
  if (metric == "p99") return s.p99_us;
  return s.max_us;
}

std::string stage_label(std::size_t i) {
  return i < kStageCount ? std::string(kStageNames[i]) : "total";
}

std::string or_unknown(const std::string& s) {
  return s.empty() ? "not recorded" : s;
}

// Differences that make a comparison meaningless without --force: what was
// run (model, trace), where (the kind of machine, not its host name: CI
// runners get a new name every job) and with how much of it.
std::vector<std::string> identity_mismatches(const RunData& b, const RunData& n) {
  std::vector<std::string> out;
  auto differ = [&](std::string_view what, const std::string& x, const std::string& y) {
    if (!x.empty() && !y.empty() && x != y) out.push_back(fmt::format("{} differ: base {} vs new {}", what, x, y));
  };
  // Summaries written before the hashes were recorded: the paths stand in.
  const bool hashes = !b.model_hash.empty() && !n.model_hash.empty() && !b.trace_hash.empty() && !n.trace_hash.empty();
  differ("models", hashes ? b.model_hash : b.model_path, hashes ? n.model_hash : n.model_path);
  differ("traces", hashes ? b.trace_hash : b.trace_path, hashes ? n.trace_hash : n.trace_path);
  if (b.limit != n.limit)
    out.push_back(fmt::format("trace limits differ: base {} vs new {}", b.limit ? std::to_string(b.limit) : "all",
                              n.limit ? std::to_string(n.limit) : "all"));
  differ("machines (CPU)", b.cpu_model, n.cpu_model);
  if (b.cpu_cores && n.cpu_cores && b.cpu_cores != n.cpu_cores)
    out.push_back(fmt::format("machines (cores) differ: base {} vs new {}", b.cpu_cores, n.cpu_cores));
  differ("libtorch versions", b.libtorch_version, n.libtorch_version);
  differ("devices", b.device, n.device);
  if (b.threads != n.threads)
    out.push_back(fmt::format("intra-op threads differ: base {} vs new {}", b.threads, n.threads));
  if (b.concurrency != n.concurrency)
    out.push_back(fmt::format("concurrency differs: base {} vs new {}", b.concurrency, n.concurrency));
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

const GateSpec* gate_for(const std::vector<GateSpec>& gates, const std::string& stage, std::string_view metric) {
  const GateSpec* wildcard = nullptr;
  for (const GateSpec& g : gates) {
    if (g.metric != metric) continue;
    if (g.stage == stage) return &g;  // a named stage overrides "every stage"
    if (g.stage == "*") wildcard = &g;
  }
  return wildcard;
}

void apply(DiffRow& row, const GateSpec* gate, DiffResult& r, bool higher_is_better = false) {
  if (!gate) return;
  row.gate = gate->text;
  row.limit = higher_is_better ? std::abs(row.change.base) * gate->pct / 100.0 : gate_limit(*gate, row.change.base);
  row.verdict = judge(row.change, row.limit, higher_is_better);
  ++r.gated;
  if (row.verdict == Verdict::regression) ++r.regressions;
  if (row.verdict == Verdict::noise) ++r.noise;
  if (row.verdict == Verdict::improved) ++r.improved;
}

std::vector<GateSpec> checked_gates(const DiffConfig& config) {
  if (!(config.confidence > 0.5 && config.confidence < 1))
    throw bad_input(fmt::format("--confidence {} is out of range (expected a level between 0.5 and 1, e.g. 0.95)",
                                config.confidence));
  return parse_gates(config.gates);
}

}  // namespace

MetricIntervals bootstrap_metric_intervals(const std::vector<double>& base, const std::vector<double>& now,
                                           double confidence, int resamples) {
  MetricIntervals out;
  if (base.empty() || now.empty() || resamples < 1) return out;
  Resampler resampler;
  std::array<std::vector<double>, 4> replicates;
  for (auto& v : replicates)
    v.reserve(static_cast<std::size_t>(resamples));
  std::vector<double> b, n;
  // mean, p50, p90, p99 of one resample; the quantiles by successive
  // partial selection, each in the part above the previous one.
  auto stats = [](std::vector<double>& v) {
    std::array<double, 4> s{};
    s[0] = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    auto from = v.begin();
    const std::array<double, 3> qs = {0.50, 0.90, 0.99};
    for (std::size_t k = 0; k < qs.size(); ++k) {
      auto nth = v.begin() + static_cast<std::ptrdiff_t>(report::nearest_rank(qs[k], v.size()) - 1);
      if (nth >= from) std::nth_element(from, nth, v.end());
      s[k + 1] = *nth;
      from = nth;
    }
    return s;
  };
  for (int i = 0; i < resamples; ++i) {
    resampler.draw(base, b);
    resampler.draw(now, n);
    const auto sb = stats(b), sn = stats(n);
    for (std::size_t k = 0; k < 4; ++k)
      replicates[k].push_back(sn[k] - sb[k]);
  }
  for (std::size_t k = 0; k < 4; ++k)
    out.mean_p50_p90_p99[k] = percentile_interval(replicates[k], confidence);
  return out;
}

DiffResult diff_runs(RunData base, RunData now, const DiffConfig& config) {
  DiffResult r;
  r.gates = checked_gates(config);
  r.base_path = base.summary_path;
  r.new_path = now.summary_path;
  r.confidence = config.confidence;
  r.mismatches = identity_mismatches(base, now);
  if (!r.mismatches.empty() && !config.force) {
    std::string why;
    for (const auto& m : r.mismatches)
      why += (why.empty() ? "" : "; ") + m;
    throw bad_input(fmt::format("{} and {} are not comparable: {} (--force compares them anyway)", base.summary_path,
                                now.summary_path, why));
  }
  r.notes = config_notes(base, now);

  const bool have_csv = !base.per_request[kStageCount].empty() && !now.per_request[kStageCount].empty();
  r.intervals = have_csv;
  if (have_csv) {
    r.resamples = config.resamples;
    r.intervals_note = fmt::format(
        "{:.0f}% bootstrap intervals over requests ({} resamples of {} base vs {} new requests from requests.csv{})",
        config.confidence * 100, config.resamples, base.per_request[kStageCount].size(),
        now.per_request[kStageCount].size(),
        base.csv_rows > RunData::kMaxRows || now.csv_rows > RunData::kMaxRows
            ? fmt::format(", evenly thinned to at most {}", RunData::kMaxRows)
            : "");
  } else {
    std::string which = base.csv_path.empty() && now.csv_path.empty() ? "neither run has"
                        : base.csv_path.empty()                       ? "base has no"
                        : now.csv_path.empty()                        ? "new has no"
                                                                      : "a run has an empty";
    r.intervals_note = fmt::format(
        "no confidence intervals: {} requests.csv beside its summary.json, so gates use "
        "the threshold alone",
        which);
  }

  for (std::size_t i = 0; i <= kStageCount; ++i) {
    const StageStats &sb = base.stages[i], &sn = now.stages[i];
    const std::string stage = stage_label(i);
    const bool shown = i == kStageCount || (sb.applicable && sn.applicable && (sb.max_us > 0 || sn.max_us > 0));
    if (!shown) {
      r.hidden.push_back(stage);
      continue;
    }
    MetricIntervals ci;
    if (have_csv)
      ci = bootstrap_metric_intervals(base.per_request[i], now.per_request[i], config.confidence, config.resamples);
    for (std::size_t m = 0; m < kLatencyMetrics.size(); ++m) {
      DiffRow row;
      row.stage = stage;
      row.metric = std::string(kLatencyMetrics[m]);
      row.change = Change{metric_of(sb, row.metric), metric_of(sn, row.metric), std::nullopt};
      if (have_csv && m < 4) row.change.interval = ci.mean_p50_p90_p99[m];
      if (have_csv && m == 4) row.note = "threshold only: a maximum has no bootstrap interval";
      apply(row, gate_for(r.gates, stage, row.metric), r);
      r.rows.push_back(std::move(row));
    }
  }
  for (const GateSpec& g : r.gates)
    if (g.stage != "*" && !g.stage.empty() && std::find(r.hidden.begin(), r.hidden.end(), g.stage) != r.hidden.end())
      r.notes.push_back(fmt::format("gate '{}' not applied: {} is 0 or n/a in both runs", g.text, g.stage));

  DiffRow tp;
  tp.stage = "throughput";
  tp.metric = "req/s";
  tp.unit = "req/s";
  tp.change = Change{base.throughput_rps, now.throughput_rps, std::nullopt};
  tp.note = "threshold only: one figure per run";
  apply(tp, gate_for(r.gates, "", "throughput"), r, true);
  r.rows.push_back(std::move(tp));

  for (const auto& [tier, ratio] : base.hit_ratios)
    for (const auto& [tier2, ratio2] : now.hit_ratios)
      if (tier == tier2) {
        DiffRow row;
        row.stage = tier + " hit ratio";
        row.metric = "ratio";
        row.unit = "ratio";
        row.change = Change{ratio, ratio2, std::nullopt};
        r.rows.push_back(std::move(row));
      }
  r.base = std::move(base);
  r.now = std::move(now);
  return r;
}

DiffResult run_diff(const DiffConfig& config) {
  // The settings first: a typo there should not wait for two large CSVs.
  checked_gates(config);
  RunData base = load_run(config.base_path);
  RunData now = load_run(config.new_path);
  return diff_runs(std::move(base), std::move(now), config);
}

}  // namespace inferprof
