// report.html of a run: where the time went (stages as stacked bars, with
// their table), the latency CDF, what the caches did and cost, and the flame
// graph with search. The same figures as summary.json, for a person.
#include <fmt/format.h>

#include "base/text.hpp"
#include "inferprof/report.hpp"
#include "report/html_page.hpp"
#include "report/render/cache_section.hpp"

namespace inferprof {
namespace {

using report::group_thousands;
using report::human_duration_us;

std::string percent(double share) {
  return fmt::format("{:.1f}%", 100 * share);
}

std::vector<std::string> stage_row(const std::string& name, const StageStats& s) {
  return {name,
          human_duration_us(s.mean_us),
          human_duration_us(s.p50_us),
          human_duration_us(s.p99_us),
          percent(s.share),
          s.cpu ? human_duration_us(s.cpu_mean_us) : "n/a",
          s.cpu ? percent(s.off_cpu) : "n/a"};
}

// Stages (and, with two or more, the preprocessing ops) as bars and a table.
void add_stages(report::html::Page& page, const RunSummary& s) {
  page.section("Where the time went",
               "Mean per request over all measured requests (a stage that did not run counts 0, so the means add "
               "up to the total); cpu: thread CPU time; off-cpu: the share of the stage spent waiting or "
               "descheduled.");
  std::vector<std::string> names;
  report::html::Bar bar{"mean request", {}};
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < kStageCount; ++i) {
    const StageStats& st = s.stages[i];
    if (!st.applicable || st.count == 0) continue;
    names.emplace_back(kStageNames[i]);
    bar.segments.push_back(st.mean_us);
    rows.push_back(stage_row(std::string(kStageNames[i]), st));
    if (kStageNames[i] == "preprocess" && s.preprocess_ops.size() > 1)
      for (const StagePart& p : s.preprocess_ops)
        rows.push_back(stage_row("  " + p.name, p.stats));
  }
  rows.push_back(stage_row("total", s.total));
  std::vector<report::html::Bar> bars{bar};
  if (s.preprocess_ops.size() > 1) {
    report::html::Bar ops{"preprocess by op", {}};
    for (const StagePart& p : s.preprocess_ops) {
      names.push_back(p.name);
      ops.segments.push_back(p.stats.mean_us);
    }
    // The ops' segments follow the stages' in the legend: the stage bar leaves them empty.
    ops.segments.insert(ops.segments.begin(), bar.segments.size(), 0.0);
    bars.push_back(ops);
  }
  page.svg(report::html::stacked_bars_svg("Stages of a mean request", names, bars, "per request"));
  page.table({"stage", "mean", "p50", "p99", "share", "cpu mean", "off-cpu"}, rows);
}

void add_latency(report::html::Page& page, const RunSummary& s) {
  page.section("Latency", s.latency_sample_us.size() < s.requests
                              ? fmt::format("The CDF is drawn from a uniform sample of {} of the {} requests.",
                                            group_thousands(s.latency_sample_us.size()), group_thousands(s.requests))
                              : std::string("Every measured request, arrival to end."));
  page.svg(report::html::latency_cdf_svg("Latency CDF", {{"all requests", s.latency_sample_us}}));
  page.table({"requests", "failed", "mean", "p50", "p90", "p99", "max", "req/s"},
             {{group_thousands(s.requests), group_thousands(s.failed), human_duration_us(s.total.mean_us),
               human_duration_us(s.total.p50_us), human_duration_us(s.total.p90_us), human_duration_us(s.total.p99_us),
               human_duration_us(s.total.max_us), fmt::format("{:.1f}", s.throughput_rps)}});
}

void add_caches(report::html::Page& page, const RunSummary& s) {
  if (s.caches.empty()) return;
  page.section("Caches", "What each tier did, and what a request cost by what served it (hit against miss).");
  std::vector<std::vector<std::string>> tiers;
  for (const CacheTierReport& t : s.caches) {
    const TierStats& st = t.stats;
    tiers.push_back({std::string(enum_name(t.spec.tier)), report::tier_spec_text(t.spec), t.where,
                     group_thousands(st.lookups), group_thousands(st.hits),
                     st.lookups ? percent(static_cast<double>(st.hits) / static_cast<double>(st.lookups)) : "-",
                     group_thousands(st.evictions), group_thousands(st.errors)});
  }
  page.table({"tier", "policy", "where", "lookups", "hits", "hit ratio", "evictions", "errors"}, tiers);
  std::vector<std::vector<std::string>> costs;
  std::vector<report::html::Bar> bars;
  for (const OutcomeStats& o : s.outcomes) {
    if (o.count == 0) continue;
    costs.push_back({std::string(outcome_name(o.outcome)), group_thousands(o.count), human_duration_us(o.mean_us),
                     human_duration_us(o.p50_us), human_duration_us(o.p99_us)});
    bars.push_back({std::string(outcome_name(o.outcome)), {o.mean_us}});
  }
  if (costs.empty()) return;
  page.svg(
      report::html::stacked_bars_svg("Mean latency by what served the request", {"mean latency"}, bars, "per request"));
  page.table({"served by", "requests", "mean", "p50", "p99"}, costs);
}

}  // namespace

std::string render_run_html(const RunSummary& s, const std::vector<std::pair<std::string, std::uint64_t>>& folded,
                            const std::string& title) {
  const RunInfo& i = s.info;
  report::html::Page page(
      title, fmt::format("{} · {} · trace {} · profile {} · {} on {} ({} cores) · {} · started {}",
                         report::base_name(i.model_path), i.model_arch, report::base_name(i.trace_path), i.profile_name,
                         i.device, i.hostname, i.cpu_cores, i.mode, i.started_at));
  for (const std::string& w : i.warnings)
    page.paragraph("warning: " + w);
  add_latency(page, s);
  add_stages(page, s);
  add_caches(page, s);
  page.section("Flame graph", "Self time by span path, summed over the measured requests (stacks.folded).");
  page.flamegraph(render_flamegraph_svg(folded, title));
  return page.finish();
}

}  // namespace inferprof
