// report.html of a sweep: each configuration's latency–throughput curve with
// the objective and the capacities, where the time went at each step, and the
// step table.
#include <fmt/format.h>

#include <algorithm>

#include "report/html_page.hpp"
#include "report/line_plot_svg.hpp"
#include "report/render/sweep_parts.hpp"

namespace inferprof {

namespace {

std::string curves_svg(const SweepResult& r) {
  report::LinePlot plot;
  plot.title = "Latency against served traffic";
  plot.subtitle = r.slo_ms > 0 ? fmt::format("p99 (solid) and p50 (dashed); the objective p99 ≤ {:g} ms", r.slo_ms)
                               : "p99 (solid) and p50 (dashed)";
  plot.x_label = "served requests/s";
  plot.left_label = "latency (ms)";
  double top = r.slo_ms;
  for (const SweepCurve& c : r.curves) {
    report::PlotSeries p99{c.name + " p99", {}, {}}, p50{c.name + " p50", {}, {}};
    p50.dashed = true;
    for (const SweepStep& s : c.steps) {
      p99.x.push_back(s.achieved_rps), p99.y.push_back(s.p99.value_us / 1000);
      p50.x.push_back(s.achieved_rps), p50.y.push_back(s.p50.value_us / 1000);
      top = std::max(top, s.p99.value_us / 1000);
    }
    plot.series.push_back(std::move(p99));
    plot.series.push_back(std::move(p50));
    if (r.slo_ms > 0 && c.capacity_found)
      plot.series.push_back(report::PlotSeries{
          fmt::format("{} capacity {:.1f} req/s", c.name, c.capacity_rps), {c.capacity_rps}, {r.slo_ms}});
  }
  if (r.slo_ms > 0) {
    double lo = 0, hi = 0;
    for (const auto& s : plot.series)
      for (double x : s.x) {
        lo = lo == 0 ? x : std::min(lo, x);
        hi = std::max(hi, x);
      }
    report::PlotSeries slo{fmt::format("objective {:g} ms", r.slo_ms), {lo, hi}, {r.slo_ms, r.slo_ms}};
    slo.dashed = true;
    plot.series.push_back(std::move(slo));
  }
  plot.left_max = top > 0 ? top * 1.1 : 1;
  return report::render_line_plot_svg(plot);
}

std::string stages_svg(const SweepResult& r) {
  std::vector<std::string> names(kStageNames.begin(), kStageNames.end());
  std::vector<report::html::Bar> bars;
  for (const SweepCurve& c : r.curves)
    for (const SweepStep& s : c.steps)
      bars.push_back({c.name + " @ " + report::sweep_parts::load_label(r, s.load),
                      std::vector<double>(s.stage_mean_us.begin(), s.stage_mean_us.end())});
  return report::html::stacked_bars_svg("Mean time per request by stage, at each step", names, bars, "µs");
}

}  // namespace

std::string render_sweep_html(const SweepResult& r) {
  namespace parts = report::sweep_parts;
  report::html::Page page("inferprof sweep", parts::headline(r));
  for (const std::string& w : r.warnings)
    page.paragraph("warning: " + w);
  page.section("Capacity", parts::method_note(r));
  for (const std::string& line : parts::capacity_lines(r))
    page.paragraph(line);
  page.svg(curves_svg(r));
  page.section("Where the time went");
  page.svg(stages_svg(r));
  page.section("Steps");
  page.table(parts::step_cells(r));
  return page.finish();
}

}  // namespace inferprof
