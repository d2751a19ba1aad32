// What the reporters of `inferprof compare` share: the headline, the table's
// cells (the table and the markdown print the same ones), the "where the time
// went" explanation and the notes under the table.
#include "report/render/compare_parts.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>

#include "base/text.hpp"
#include "report/render/cache_section.hpp"

namespace inferprof::report::compare_parts {
namespace {

// Tiers that some configuration uses: the table shows columns only for them.
std::vector<std::string_view> used_tiers(const CompareResult& r) {
  std::vector<std::string_view> used;
  for (std::string_view tier : kTiers)
    for (const CompareRow& row : r.rows)
      if (find_tier(row, tier)) {
        used.push_back(tier);
        break;
      }
  return used;
}

std::string hit_text(const CompareRow& row, std::string_view tier) {
  const CacheTierReport* t = find_tier(row, tier);
  if (!t) return "-";
  if (t->stats.lookups == 0) return "n/a";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(t->stats.hits) / static_cast<double>(t->stats.lookups));
}

std::string bytes_text(const CompareRow& row, std::string_view tier) {
  const CacheTierReport* t = find_tier(row, tier);
  return t ? human_bytes(t->stats.bytes) : "-";
}

bool any_caches(const CompareResult& r) {
  for (const CompareRow& row : r.rows)
    if (!row.tiers.empty() || !row.last.caches.empty()) return true;
  return false;
}

std::string cost_text(const CompareRow& row, std::string_view outcome) {
  const OutcomeStats* o = outcome_cost(row, outcome);
  return o ? human_duration_us(o->mean_us) : "-";
}

std::string times(double v) {
  return std::isfinite(v) ? fmt::format("{:.2f}\u00d7", v) : "n/a";
}

// "3.41× [3.30, 3.52]"; "~" first when the interval includes 1.0. The
// interval is left out when it is a single point (nothing to resample).
std::string speedup_text(const Speedup& s, std::string_view noise_mark) {
  std::string out = s.noise ? std::string(noise_mark) : std::string();
  out += times(s.value);
  if (std::isfinite(s.low) && std::isfinite(s.high) && s.low < s.high)
    out += fmt::format(" [{:.2f}, {:.2f}]", s.low, s.high);
  return out;
}

std::string plural(std::uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", group_thousands(n), n == 1 ? one : many);
}

std::string served_by_name(std::string_view outcome) {
  constexpr std::string_view kHit = "_hit";
  if (outcome.size() > kHit.size() && outcome.substr(outcome.size() - kHit.size()) == kHit) {
    std::string tier(outcome.substr(0, outcome.size() - kHit.size()));
    for (char& c : tier)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return tier;
  }
  return std::string(outcome);
}

std::string share_of(std::uint64_t part, std::uint64_t whole) {
  return fmt::format("{:.1f}%", whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
}

// Lockstep: where a rerun of this compare reads each speedup, beside
// the verdict's narrower interval (a confidence interval covers the truth,
// not another run's point).
std::string rerun_line(const CompareResult& r) {
  if (r.mode != CompareMode::lockstep) return {};
  std::string cells;
  for (std::size_t i = 1; i < r.rows.size(); ++i) {
    const Speedup& s = r.rows[i].rerun_speedup;
    if (!(std::isfinite(s.low) && std::isfinite(s.high) && s.low < s.high)) continue;
    cells += fmt::format("{}{} {:.2f}\u2013{:.2f}\u00d7", cells.empty() ? "" : ", ", r.rows[i].name, s.low, s.high);
  }
  if (cells.empty()) return {};
  return (r.precision_pct ? fmt::format("\na rerun to ±{:g}% reads (95%): ", *r.precision_pct)
                          : std::string("\na rerun with as many passes reads (95%): ")) +
         cells;
}

}  // namespace

const CacheTierReport* find_tier(const CompareRow& row, std::string_view tier) {
  const std::optional<CacheLevel> level = parse_enum<CacheLevel>(tier);
  for (const CacheTierReport& t : row.last.caches)
    if (level && t.spec.tier == *level) return &t;
  return nullptr;
}

const OutcomeStats* outcome_cost(const CompareRow& row, std::string_view outcome) {
  for (const OutcomeStats& o : row.outcome_costs)
    if (outcome_name(o.outcome) == outcome && o.count > 0) return &o;
  return nullptr;
}

std::string interval_line(const CompareResult& r) {
  std::string out = fmt::format("speedup intervals: {} mode, {}", compare_mode_name(r.mode),
                                r.interval.empty() ? std::string("bootstrap over requests") : r.interval);
  if (r.precision_pct)
    out += fmt::format("\nprecision ±{:g}%: {} after {} pass{} (widest ±{:.1f}%: {})", *r.precision_pct,
                       r.precision_reached ? "reached" : "NOT reached (--max-time or 100 passes)", r.repeat,
                       r.repeat == 1 ? "" : "es", 100 * r.widest_half_width, r.widest_config);
  out += rerun_line(r);
  if (!r.traffic_interval.empty())
    out += fmt::format("\n{}: {}", r.show_traffic ? "traffic column" : "also in compare.json (--intervals both)",
                       r.traffic_interval);
  return out;
}

std::string_view verdict_of(const CompareResult& r, std::size_t i) {
  if (i == 0) return "baseline";
  const Speedup& s = r.rows[i].mean_speedup;
  if (s.low > 1.0) return "faster";
  if (s.high < 1.0) return "slower";
  return "no measurable difference";
}

std::string single_wall_note(const CompareResult& r) {
  return r.mode == CompareMode::lockstep
             ? "wall speedup without an interval: one lockstep pass; --repeat 3 or more for one\n"
             : "wall speedup without an interval: one replay per configuration; repeat for one\n";
}

bool any_noise(const CompareResult& r) {
  for (std::size_t i = 1; i < r.rows.size(); ++i)
    if (r.rows[i].mean_speedup.noise || r.rows[i].wall_speedup.noise || r.rows[i].cpu_speedup.noise ||
        (r.show_traffic && r.rows[i].traffic_speedup.noise))
      return true;
  return false;
}

bool degenerate_wall_interval(const CompareResult& r) {
  for (std::size_t i = 1; i < r.rows.size(); ++i)
    if (!(r.rows[i].wall_speedup.low < r.rows[i].wall_speedup.high)) return true;
  return false;
}

std::string headline(const CompareResult& r) {
  std::string out = "inferprof compare";
  if (r.rows.empty())
    return out + " · no configurations" + (r.interrupted_by.empty() ? "" : " completed (interrupted)");
  const RunSummary& s = r.rows[0].last;
  if (r.varies == "model")
    out += fmt::format(" · {} models", r.rows.size());
  else if (!s.info.model_path.empty())
    out += fmt::format(" · {}", base_name(s.info.model_path));
  if (r.varies == "profile") out += fmt::format(" · {} profiles", r.rows.size());
  if (!s.info.trace_path.empty()) out += fmt::format(" · {}", base_name(s.info.trace_path));
  out += fmt::format(" · {}", plural(s.requests, "request", "requests"));
  const auto repeats = static_cast<std::uint64_t>(std::max(r.repeat, 1));
  if (r.mode == CompareMode::lockstep)
    out += repeats > 1 ? fmt::format(" · lockstep, {} repeats", repeats) : std::string(" · lockstep");
  else
    out += repeats > 1 ? fmt::format(" · {} repeats, interleaved", repeats) : std::string(" · 1 run each");
  if (!r.interrupted_by.empty()) out += fmt::format(" · interrupted ({}): completed replays only", r.interrupted_by);
  return out;
}

Cells table_cells(const CompareResult& r, std::string_view noise_mark) {
  const std::vector<std::string_view> tiers = used_tiers(r);
  Cells cells;
  std::vector<std::string> header = {r.varies, "mean", "p50", "p99", "req/s", "speedup (95% CI)"};
  if (r.show_traffic) header.push_back("traffic (95% CI)");
  for (const char* h : {"cpu speedup", "wall speedup", "cpu mean"})
    header.push_back(h);
  for (std::string_view t : tiers)
    header.push_back(fmt::format("{} hit", t));
  for (std::string_view t : tiers)
    header.push_back(fmt::format("{} bytes", t));
  // What a request costs by what served it: a tier's hit against a miss.
  const bool costs = any_caches(r);
  if (costs) {
    for (std::string_view t : tiers)
      header.push_back(fmt::format("{} hit cost", t));
    header.push_back("miss cost");
  }
  cells.push_back(std::move(header));
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const CompareRow& row = r.rows[i];
    std::vector<std::string> line = {row.name, human_duration_us(row.mean_us), human_duration_us(row.p50_us),
                                     human_duration_us(row.p99_us), grouped_fixed(row.rps, 1)};
    if (i == 0) {
      line.push_back(times(1) + " (baseline)");
      if (r.show_traffic) line.push_back(times(1));
      line.push_back(times(1));
      line.push_back(times(1));
    } else {
      line.push_back(speedup_text(row.mean_speedup, noise_mark));
      if (r.show_traffic) line.push_back(speedup_text(row.traffic_speedup, noise_mark));
      line.push_back(row.cpu_speedup.value > 0 && row.last.total.cpu ? speedup_text(row.cpu_speedup, noise_mark)
                                                                     : std::string("n/a"));
      line.push_back(speedup_text(row.wall_speedup, noise_mark));
    }
    // Thread CPU time per request (last repeat): what the work cost, whatever the load.
    line.push_back(row.last.total.cpu ? human_duration_us(row.last.total.cpu_mean_us) : std::string("n/a"));
    for (std::string_view t : tiers)
      line.push_back(hit_text(row, t));
    for (std::string_view t : tiers)
      line.push_back(bytes_text(row, t));
    if (costs) {
      for (std::string_view t : tiers)
        line.push_back(cost_text(row, fmt::format("{}_hit", t)));
      line.push_back(cost_text(row, "miss"));
    }
    cells.push_back(std::move(line));
  }
  return cells;
}

std::string tiers_text(const CompareRow& row) {
  std::vector<std::string> parts;
  for (const CacheTierReport& t : row.last.caches) {
    std::string part = fmt::format("{}={}", enum_name(t.spec.tier), tier_spec_text(t.spec));
    if (t.spec.backend != TierBackend::memory && !t.where.empty()) part += " " + t.where;
    parts.push_back(std::move(part));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string stage_changes(const CompareRow& row, const CompareRow& base) {
  // The stages whose mean moved most, largest first (at most three).
  std::vector<std::pair<double, std::size_t>> moved;
  for (std::size_t k = 0; k < kStageCount; ++k) {
    const double delta = row.last.stages[k].mean_us - base.last.stages[k].mean_us;
    if (row.last.stages[k].mean_us > 0 || base.last.stages[k].mean_us > 0) moved.emplace_back(std::abs(delta), k);
  }
  std::sort(moved.begin(), moved.end(), std::greater<>());
  if (moved.size() > 3) moved.resize(3);
  std::vector<std::string> parts;
  for (const auto& [size, k] : moved)
    parts.push_back(fmt::format("{} {} → {}", kStageNames[k], human_duration_us(base.last.stages[k].mean_us),
                                human_duration_us(row.last.stages[k].mean_us)));
  return fmt::format("{} (mean per request, {} → {})", fmt::join(parts, ", "), base.name, row.name);
}

std::string explanation(const CompareRow& row, const CompareRow& base, bool by_stage) {
  const RunSummary& s = row.last;
  if (by_stage && s.caches.empty() && base.last.caches.empty()) return stage_changes(row, base);
  if (s.caches.empty()) return "no cache tiers: every request computed";
  std::vector<std::string> served;
  const OutcomeStats* miss = nullptr;
  for (const OutcomeStats& o : s.outcomes) {
    if (o.outcome == CacheOutcome::miss) {
      miss = &o;
      continue;
    }
    if (o.count == 0) continue;
    const std::string tier = served_by_name(outcome_name(o.outcome));
    // L3 holds preprocessed inputs: its hits still run the model.
    const std::string what = tier == "L3" ? "L3 (preprocessing skipped)" : tier;
    served.push_back(served.empty() ? fmt::format("{} of requests served by {} at {} mean",
                                                  share_of(o.count, s.requests), what, human_duration_us(o.mean_us))
                                    : fmt::format("{} by {} at {} mean", share_of(o.count, s.requests), what,
                                                  human_duration_us(o.mean_us)));
  }
  std::string out;
  if (served.empty()) {
    out = "no hits: every request computed";
    if (miss && miss->count > 0) out += fmt::format(" at {} mean", human_duration_us(miss->mean_us));
  } else {
    out = fmt::format("{}", fmt::join(served, ", "));
    if (miss && miss->count > 0) out += fmt::format(" vs {} for a miss", human_duration_us(miss->mean_us));
  }
  if (miss && miss->count > 0)
    out += fmt::format(" ({} per request in {})", human_duration_us(base.mean_us), base.name);
  return out;
}

std::string gate_heading(const CompareResult& r) {
  return fmt::format("gates against {} (the change in mean per request, paired; its 95% interval on this trace):",
                     r.rows.empty() ? std::string("the baseline") : r.rows[0].name);
}

Cells gate_cells(const CompareResult& r) {
  Cells cells{{"configuration", "gate", "on", "baseline", "this", "change (95% CI)", "limit", "verdict"}};
  auto pct = [](double delta, double base) { return base > 0 ? fmt::format("{:+.1f}%", 100 * delta / base) : "n/a"; };
  for (const CompareGate& g : r.gates) {
    const Change& c = g.change;
    std::string change = pct(c.delta(), c.base);
    if (c.interval) change += fmt::format(" [{}, {}]", pct(c.interval->first, c.base), pct(c.interval->second, c.base));
    cells.push_back({g.configuration, g.gate, g.stage + (g.clock == "cpu" ? " cpu" : " wall"),
                     human_duration_us(c.base), human_duration_us(c.now), change,
                     fmt::format("{} ({})", pct(g.limit, c.base), human_duration_us(g.limit)),
                     std::string(verdict_name(g.verdict))});
  }
  return cells;
}

Notes notes_of(const CompareResult& r) {
  Notes n;
  auto warn = [&](std::string w) {
    if (std::find(n.warnings.begin(), n.warnings.end(), w) == n.warnings.end()) n.warnings.push_back(std::move(w));
  };
  for (const std::string& w : r.warnings)
    warn(w);
  for (const CompareRow& row : r.rows) {
    // A configuration whose replay was descheduled (run's contention signal).
    for (const std::string& w : row.last.info.warnings)
      if (w.rfind("descheduled", 0) == 0) warn(fmt::format("{}: {}", row.name, w));
    for (const CacheTierReport& t : row.last.caches) {
      const std::string where = t.where.empty() ? std::string(enum_name(t.spec.backend)) : t.where;
      if (t.stats.degraded)
        warn(fmt::format("{} on {} degraded in {}: {}, requests fell through to compute", enum_name(t.spec.tier), where,
                         row.name, plural(t.stats.errors, "error", "errors")));
      else if (t.stats.errors > 0)
        warn(fmt::format("{} on {} in {}: {} (counted as misses)", enum_name(t.spec.tier), where, row.name,
                         plural(t.stats.errors, "backend error", "backend errors")));
    }
    if (row.last.failed > 0)
      warn(fmt::format("{}: {} failed", row.name, plural(row.last.failed, "request", "requests")));
    if (row.outliers_dominate)
      warn(fmt::format("{}: the slowest 1% of requests hold over half the time; its mean follows them (see p50)",
                       row.name));
  }
  for (const CompareRow& row : r.rows) {
    const VerifyReport& v = row.last.verify;
    if (!v.enabled) continue;
    n.verify.push_back(fmt::format("{}: {} recomputed ({:.0f}% sampled): {}, max abs difference {:.3g}", row.name,
                                   plural(v.checked, "cache hit", "cache hits"), v.fraction * 100,
                                   plural(v.mismatches, "mismatch", "mismatches"), v.max_abs_diff));
    for (const std::string& e : v.examples)
      n.verify.push_back(fmt::format("  mismatch: {}", e));
  }
  if (r.verify_mismatches > 0)
    n.verify.push_back(fmt::format("{} in all: cached results differ from computed ones",
                                   plural(r.verify_mismatches, "mismatch", "mismatches")));
  return n;
}

}  // namespace inferprof::report::compare_parts
