// What the reporters of `inferprof simulate` share: the headline and the
// tables (the terminal and the markdown print the same cells).
#include "report/render/simulate_parts.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/text.hpp"
#include "report/render/cache_section.hpp"

namespace inferprof::report::simulate_parts {
namespace {

std::string ratio(std::uint64_t part, std::uint64_t whole) {
  return whole ? fmt::format("{:.2f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "n/a";
}

std::string bytes(std::uint64_t b) {
  return human_bytes(b);
}

std::string speedup(double v) {
  return fmt::format("{:.2f}×", v);
}

std::string cost_cell(const std::optional<double>& us) {
  return us ? human_duration_us(*us) : std::string("n/a");
}

}  // namespace

double ratio_value(std::uint64_t part, std::uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0;
}

std::string mrc_name(const MrcResult& m) {
  return fmt::format("{}={}{}", enum_name(m.spec.tier), policy_name(m.spec.policy),
                     m.spec.ttl_s > 0 ? fmt::format(" ttl {:g}s", m.spec.ttl_s) : std::string());
}

std::string headline(const SimulateResult& r) {
  const double rps = r.seconds > 0 ? static_cast<double>(r.requests) / r.seconds : 0;
  std::string s = fmt::format(
      "inferprof simulate · {} ({}) · {} requests, {} measured after {} warm-up · {} model "
      "updates · simulated in {:.3f} s ({:.2f} M req/s)\n",
      r.trace_path, r.trace_format, group_thousands(r.requests), group_thousands(r.measured), group_thousands(r.warmup),
      group_thousands(r.model_updates), r.seconds, rps / 1e6);
  s += fmt::format("time for TTLs: {} · entry sizes: {}\n",
                   r.timestamps ? "the trace's ts_ms" : "none (no timestamps in the trace)", r.sizes);
  if (r.costs) {
    const SimCosts& c = *r.costs;
    s += fmt::format("costs from {}, outside cache work: miss {} · l3 hit {} · l1/l2 hit {}{}\n", c.source,
                     human_duration_us(c.miss_mean_us), human_duration_us(c.l3_hit_mean_us),
                     human_duration_us(c.hit_mean_us),
                     c.per_request ? fmt::format(" (per-request: {} rows of requests.csv)", group_thousands(c.rows))
                                   : std::string());
    if (!c.spans_source.empty())
      s += fmt::format("tier costs from {} ({} requests), mean per span:\n", c.spans_source,
                       group_thousands(c.span_requests));
  }
  return s;
}

Cells tier_cost_cells(const SimCosts& c) {
  Cells cells = {{"tier", "lookup hit", "lookup miss", "insert", "store (encode+insert)", "spans"}};
  for (int t = 0; t < 3; ++t) {
    const SimTierCosts& k = c.tiers[t];
    cells.push_back({fmt::format("l{}", t + 1), cost_cell(k.lookup_hit_us), cost_cell(k.lookup_miss_us),
                     cost_cell(k.insert_us), t < 2 ? cost_cell(k.store_us) : "-",
                     group_thousands(k.lookups + k.inserts + k.stores)});
  }
  return cells;
}

Cells tier_cells(const SimulateResult& r) {
  Cells cells = {{"config", "tier", "spec", "lookups", "hits", "misses", "hit ratio", "miss ratio", "evictions",
                  "expired", "entries", "bytes"}};
  for (const auto& c : r.configurations)
    for (std::size_t i = 0; i < c.tiers.size(); ++i) {
      const SimTierResult& t = c.tiers[i];
      cells.push_back({i == 0 ? c.name : "", std::string(enum_name(t.spec.tier)), tier_spec_text(t.spec),
                       group_thousands(t.lookups), group_thousands(t.hits), group_thousands(t.misses),
                       ratio(t.hits, t.lookups), ratio(t.misses, t.lookups), group_thousands(t.evictions),
                       group_thousands(t.expirations), group_thousands(t.entries), bytes(t.bytes)});
    }
  return cells;
}

Cells prediction_cells(const SimulateResult& r) {
  Cells cells = {{"config", "l1 hit", "l2 hit", "l3 hit", "compute", "mean", "of which cache", "p99", "speedup"}};
  auto p99 = [](const SimPrediction& p) { return p.p99_us ? human_duration_us(*p.p99_us) : std::string("n/a"); };
  cells.push_back({"none", "-", "-", "-", "100.00%", human_duration_us(r.baseline.mean_us), "-", p99(r.baseline),
                   speedup(1) + " (baseline)"});
  for (const auto& c : r.configurations) {
    const std::uint64_t n = c.served_l1 + c.served_l2 + c.served_l3 + c.served_compute;
    cells.push_back({c.name, ratio(c.served_l1, n), ratio(c.served_l2, n), ratio(c.served_l3, n),
                     ratio(c.served_compute, n), human_duration_us(c.predicted.mean_us),
                     human_duration_us(c.predicted.cache_us), p99(c.predicted), speedup(c.predicted.speedup)});
  }
  return cells;
}

Cells outcome_cells(const SimulateResult& r) {
  Cells cells = {{"config", "served by l1", "by l2", "by l3", "computed"}};
  for (const auto& c : r.configurations) {
    auto has = [&](int t) {
      const auto level = static_cast<CacheLevel>(t);
      return std::any_of(c.tiers.begin(), c.tiers.end(), [&](const SimTierResult& x) { return x.spec.tier == level; });
    };
    std::vector<std::string> row = {c.name};
    for (int o = 0; o < 4; ++o)
      row.push_back(o < 3 && !has(o) ? "-" : human_duration_us(c.predicted.outcome_us[o]));
    cells.push_back(std::move(row));
  }
  return cells;
}

Cells mrc_cells(const MrcResult& m, bool costs) {
  Cells cells = {{"capacity", "hit ratio", "miss ratio"}};
  if (costs) cells[0].push_back("predicted mean");
  for (const auto& p : m.points) {
    cells.push_back(
        {group_thousands(p.capacity), fmt::format("{:.4f}", p.hit_ratio), fmt::format("{:.4f}", 1 - p.hit_ratio)});
    if (costs) cells.back().push_back(p.predicted_mean_us ? human_duration_us(*p.predicted_mean_us) : "n/a");
  }
  return cells;
}

std::string mrc_note(const MrcResult& m) {
  std::string s = fmt::format("miss-ratio curve {} ({}", mrc_name(m), m.method);
  if (m.distinct_keys)
    s += fmt::format("; {} distinct keys{}", group_thousands(m.distinct_keys), m.sample_rate < 1 ? " sampled" : "");
  s += ")";
  if (m.sample_rate < 1)
    s += fmt::format(
        "\n  sampled {} requests at rate {:g}; hit ratios within ±{:.4f} (95%, from the spread of 8 "
        "disjoint sub-samples)",
        group_thousands(m.sampled_requests), m.sample_rate, m.error_bound.value_or(0));
  return s;
}

namespace {

std::string cell_name(const PolicyGridResult& g, const GridCell& c) {
  return fmt::format("{} at {}", g.spec.policies[c.policy].label, g.spec.sizes[c.size].label);
}

std::string score_text(const GridCell& c, bool by_latency) {
  return by_latency ? fmt::format("predicted mean {}", human_duration_us(c.predicted.mean_us))
                    : fmt::format("miss ratio {:.4f}", c.miss_ratio);
}

}  // namespace

Cells policy_grid_cells(const PolicyGridResult& g) {
  const bool costs =
      std::any_of(g.cells.begin(), g.cells.end(), [](const GridCell& c) { return c.predicted.available; });
  const bool sampled = g.sampling.rate < 1;
  Cells cells = {{"policy", "size", "miss ratio", "byte miss ratio", "evictions"}};
  if (sampled) cells[0].insert(cells[0].begin() + 3, "± (95%)");
  if (costs) cells[0].insert(cells[0].end(), {"predicted mean", "speedup"});
  for (const GridCell& c : g.cells) {
    cells.push_back({c.size == 0 ? g.spec.policies[c.policy].label : "", g.spec.sizes[c.size].label,
                     fmt::format("{:.4f}", c.miss_ratio),
                     c.byte_miss_ratio ? fmt::format("{:.4f}", *c.byte_miss_ratio) : "n/a",
                     group_thousands(c.evictions)});
    if (sampled) cells.back().insert(cells.back().begin() + 3, fmt::format("{:.4f}", c.miss_ratio_error.value_or(0)));
    if (costs)
      cells.back().insert(cells.back().end(), {human_duration_us(c.predicted.mean_us), speedup(c.predicted.speedup)});
  }
  return cells;
}

std::string policy_grid_note(const PolicyGridResult& g) {
  std::string s = fmt::format("policies × sizes: {} alone in front of compute, {} caches on {} threads in {:.3f} s",
                              enum_name(g.spec.tier), g.cells.size(), g.threads, g.seconds);
  const GridSampling& k = g.sampling;
  const std::string keys =
      k.automatic ? fmt::format("~{} distinct keys",
                                group_thousands(static_cast<std::uint64_t>(std::llround(k.estimated_keys))))
                  : std::string();
  if (k.rate >= 1)
    return s + (k.automatic ? fmt::format("\n  every request simulated ({}: not sampled)", keys)
                            : std::string("\n  every request simulated (--sample 1)"));
  return s + fmt::format(
                 "\n  SHARDS sample at rate {:g} ({}): {} of {} requests, each size simulated as a cache of "
                 "rate × size; miss ratios within ±{:.4f} (95%, from the spread of 8 disjoint sub-samples; "
                 "--sample 1: exact)",
                 k.rate, k.automatic ? "chosen for " + keys : "--sample", group_thousands(k.sampled),
                 group_thousands(k.requests), k.max_error);
}

std::string recommendation_line(const PolicyGridResult& g) {
  if (!g.recommendation) return "";
  const GridRecommendation& r = *g.recommendation;
  const GridCell& best = g.cells[r.best];
  std::string budget = g.spec.budget ? g.spec.budget->label : "the largest size";
  std::string s =
      fmt::format("recommended within {}: {}, {}", budget, cell_name(g, best), score_text(best, r.by_latency));
  if (r.by_latency) s += fmt::format(" ({} speedup)", speedup(best.predicted.speedup));
  if (!r.runner_up) return s + "; no other policy to compare";
  const std::string margin = r.by_latency ? human_duration_us(r.margin) : fmt::format("{:.4f}", r.margin);
  return s + fmt::format("; {:.1f}% ({}) ahead of the best other policy, {} ({})", r.margin_pct, margin,
                         cell_name(g, g.cells[*r.runner_up]), score_text(g.cells[*r.runner_up], r.by_latency));
}

}  // namespace inferprof::report::simulate_parts
