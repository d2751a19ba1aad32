// The miss-ratio curves of a simulation as an SVG line plot (mrc.svg).
#include "base/text.hpp"
#include "report/line_plot_svg.hpp"
#include "report/render/simulate_parts.hpp"

namespace inferprof {

std::string render_mrc_svg(const SimulateResult& r) {
  using namespace report;
  using namespace report::simulate_parts;
  LinePlot plot;
  plot.title = "Miss-ratio curve: hit ratio by cache capacity";
  plot.subtitle = fmt::format("{} · {} requests measured{}", base_name(r.trace_path), group_thousands(r.measured),
                              r.costs ? " · dashed: predicted mean latency (right axis)" : "");
  plot.x_label = "capacity (entries, log scale)";
  plot.left_label = "hit ratio";
  plot.right_label = "predicted mean latency";
  for (const auto& m : r.mrc) {
    PlotSeries hit, lat;
    hit.name = mrc_name(m) + " hit ratio";
    lat.name = mrc_name(m) + " predicted mean";
    lat.right_axis = lat.dashed = true;
    for (const auto& p : m.points) {
      hit.x.push_back(static_cast<double>(p.capacity));
      hit.y.push_back(p.hit_ratio);
      if (p.predicted_mean_us) {
        lat.x.push_back(static_cast<double>(p.capacity));
        lat.y.push_back(*p.predicted_mean_us);
      }
    }
    plot.series.push_back(std::move(hit));
    if (!lat.x.empty()) plot.series.push_back(std::move(lat));
  }
  return render_line_plot_svg(plot);
}

}  // namespace inferprof
