// A simulation as GitHub markdown (--format markdown).
#include "base/text.hpp"
#include "report/render/simulate_parts.hpp"

namespace inferprof {

std::string render_simulate_markdown(const SimulateResult& r) {
  using namespace report;
  using namespace report::simulate_parts;
  std::string out = "### inferprof simulate\n\n";
  std::string head = headline(r);
  for (std::size_t start = 0, end; start < head.size(); start = end + 1) {
    end = head.find('\n', start);
    out += markdown_cell(head.substr(start, end - start)) + "  \n";
  }
  if (!r.configurations.empty()) out += "\n" + markdown_table(tier_cells(r), {0});
  if (r.costs && !r.costs->spans_source.empty())
    out += "\n**Tier costs**\n\n" + markdown_table(tier_cost_cells(*r.costs), {0});
  if (r.costs && !r.configurations.empty()) {
    out += "\n**Predicted latency**\n\n" + markdown_table(prediction_cells(r), {0});
    out += "\n**Predicted latency by what served the request**\n\n" + markdown_table(outcome_cells(r), {0});
  }
  for (const auto& m : r.mrc)
    out += "\n**" + markdown_cell(mrc_note(m)) + "**\n\n" + markdown_table(mrc_cells(m, r.costs.has_value()), {0});
  if (r.grid) {
    out += "\n**" + markdown_cell(policy_grid_note(*r.grid)) + "**\n\n" +
           markdown_table(policy_grid_cells(*r.grid), {0, 1});
    const std::string rec = recommendation_line(*r.grid);
    if (!rec.empty()) out += "\n" + markdown_cell(rec) + "\n";
  }
  for (const auto& w : r.warnings)
    out += "\n> warning: " + markdown_cell(w) + "\n";
  return out;
}

}  // namespace inferprof
