// report.html of a simulation: predicted latency per configuration, what the
// tiers did, the miss-ratio curves and the policy grid with its
// recommendation. Tables are the terminal's cells.
#include "inferprof/simulate_result.hpp"
#include "report/html_page.hpp"
#include "report/render/simulate_parts.hpp"

namespace inferprof {

std::string render_simulate_html(const SimulateResult& r) {
  namespace parts = report::simulate_parts;
  report::html::Page page("inferprof simulate", parts::headline(r));
  for (const std::string& w : r.warnings)
    page.paragraph("warning: " + w);
  if (!r.configurations.empty()) {
    page.section("Predicted latency", r.costs ? "From the costs run's per-outcome costs."
                                              : "Hit ratios only: no costs run was given (--costs).");
    page.table(parts::prediction_cells(r));
    page.table(parts::outcome_cells(r));
    page.section("Tiers");
    page.table(parts::tier_cells(r));
  }
  if (!r.mrc.empty()) {
    page.section("Miss-ratio curves");
    page.svg(render_mrc_svg(r));
    for (const MrcResult& m : r.mrc) {
      page.paragraph(parts::mrc_name(m) + ": " + parts::mrc_note(m));
      page.table(parts::mrc_cells(m, r.costs.has_value()));
    }
  }
  if (r.grid) {
    page.section("Policies and sizes", parts::policy_grid_note(*r.grid));
    const std::string best = parts::recommendation_line(*r.grid);
    if (!best.empty()) page.paragraph(best);
    page.table(parts::policy_grid_cells(*r.grid));
  }
  return page.finish();
}

}  // namespace inferprof
