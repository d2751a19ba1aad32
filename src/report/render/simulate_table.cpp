// A simulation as the terminal table (--format table).
#include "base/text.hpp"
#include "report/render/simulate_parts.hpp"

namespace inferprof {

std::string render_simulate_table(const SimulateResult& r) {
  using namespace report;
  using namespace report::simulate_parts;
  std::string out = headline(r);
  if (r.costs && !r.costs->spans_source.empty()) out += render_grid(tier_cost_cells(*r.costs), {0});
  if (!r.configurations.empty()) out += "\n" + render_grid(tier_cells(r), {0, 1, 2});
  if (r.costs && !r.configurations.empty()) {
    out += "\npredicted latency (share of measured requests served by each tier):\n" +
           render_grid(prediction_cells(r), {0, 8});
    out += "\npredicted latency of a request by what served it (lookups and inserts included):\n" +
           render_grid(outcome_cells(r), {0});
  }
  for (const auto& m : r.mrc)
    out += "\n" + mrc_note(m) + "\n" + render_grid(mrc_cells(m, r.costs.has_value()), {});
  if (r.grid) {
    out += "\n" + policy_grid_note(*r.grid) + "\n" + render_grid(policy_grid_cells(*r.grid), {0, 1});
    const std::string rec = recommendation_line(*r.grid);
    if (!rec.empty()) out += rec + "\n";
  }
  if (r.costs)
    for (const auto& n : r.costs->notes)
      out += "\nnote: " + n;
  for (const auto& w : r.warnings)
    out += "\nwarning: " + w;
  if ((r.costs && !r.costs->notes.empty()) || !r.warnings.empty()) out += "\n";
  return out;
}

}  // namespace inferprof
