// report.html of a comparison: the speedups with their intervals (the
// verdicts' own), each configuration's latency CDF and stages, what served
// its requests and the gates. Tables are the terminal's cells.
#include <fmt/format.h>

#include "base/text.hpp"
#include "inferprof/compare_result.hpp"
#include "report/html_page.hpp"
#include "report/render/compare_parts.hpp"

namespace inferprof {
namespace {

void add_speedups(report::html::Page& page, const CompareResult& r) {
  page.section("Speedup against " + r.rows.front().name, report::compare_parts::interval_line(r));
  std::vector<report::html::Estimate> rows;
  for (std::size_t c = 1; c < r.rows.size(); ++c) {
    const CompareRow& row = r.rows[c];
    rows.push_back({fmt::format("{} ({})", row.name, report::compare_parts::verdict_of(r, c)), row.mean_speedup.value,
                    row.mean_speedup.low, row.mean_speedup.high});
    if (row.last.total.cpu && row.cpu_speedup.value > 0)
      rows.push_back({row.name + " cpu", row.cpu_speedup.value, row.cpu_speedup.low, row.cpu_speedup.high});
  }
  if (!rows.empty())
    page.svg(report::html::interval_plot_svg("Mean latency speedup, 95% interval (this trace)", rows, 1.0));
  page.table(report::compare_parts::table_cells(r, "~"));
  for (std::size_t c = 1; c < r.rows.size(); ++c) {
    const std::string why = report::compare_parts::explanation(r.rows[c], r.rows[0], r.varies != "caches");
    if (!why.empty()) page.paragraph(r.rows[c].name + ": " + why);
  }
}

void add_latency_and_stages(report::html::Page& page, const CompareResult& r) {
  page.section("Latency", r.repeat > 1 ? "Each configuration's last pass (or repeat)." : "");
  std::vector<std::pair<std::string, std::vector<double>>> samples;
  for (const CompareRow& row : r.rows)
    samples.emplace_back(row.name, row.last.latency_sample_us);
  page.svg(report::html::latency_cdf_svg("Latency CDF per configuration", samples));

  page.section("Where the time went", "Mean per request of each stage (a stage that did not run counts 0).");
  std::vector<std::string> names;
  std::vector<std::size_t> shown;
  for (std::size_t i = 0; i < kStageCount; ++i)
    for (const CompareRow& row : r.rows)
      if (row.last.stages[i].applicable && row.last.stages[i].count > 0) {
        names.emplace_back(kStageNames[i]);
        shown.push_back(i);
        break;
      }
  std::vector<report::html::Bar> bars;
  for (const CompareRow& row : r.rows) {
    report::html::Bar bar{row.name, {}};
    for (std::size_t i : shown)
      bar.segments.push_back(row.last.stages[i].mean_us);
    bars.push_back(std::move(bar));
  }
  page.svg(report::html::stacked_bars_svg("Stages of a mean request", names, bars, "per request"));
}

void add_served_by(report::html::Page& page, const CompareResult& r) {
  std::vector<std::vector<std::string>> rows;
  for (const CompareRow& row : r.rows)
    for (const OutcomeStats& o : row.outcome_costs)
      rows.push_back({row.name, std::string(outcome_name(o.outcome)), report::group_thousands(o.count),
                      report::human_duration_us(o.mean_us)});
  if (rows.empty()) return;
  page.section("What served the requests", "Hit against miss: count and mean latency by what served a request.");
  page.table({"configuration", "served by", "requests", "mean"}, rows);
}

}  // namespace

std::string render_compare_html(const CompareResult& r) {
  report::html::Page page("inferprof compare", report::compare_parts::headline(r));
  for (const std::string& w : report::compare_parts::notes_of(r).warnings)
    page.paragraph("warning: " + w);
  if (r.rows.empty()) return page.finish();
  add_speedups(page, r);
  if (!r.gates.empty()) {
    page.section("Gates", report::compare_parts::gate_heading(r));
    page.table(report::compare_parts::gate_cells(r));
  }
  add_latency_and_stages(page, r);
  add_served_by(page, r);
  return page.finish();
}

}  // namespace inferprof
