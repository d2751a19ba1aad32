// `inferprof sweep` as GitHub markdown (--format markdown).
#include "base/text.hpp"
#include "report/render/sweep_parts.hpp"

namespace inferprof {

std::string render_sweep_markdown(const SweepResult& r) {
  namespace parts = report::sweep_parts;
  const auto cells = parts::step_cells(r);
  std::string out = "**" + report::markdown_cell(parts::headline(r)) + "**\n\n";
  out += report::markdown_table(cells, {0, cells.front().size() - 1});
  out += "\n";
  for (const std::string& line : parts::capacity_lines(r))
    out += "- " + report::markdown_cell(line) + '\n';
  out += "\n" + parts::method_note(r) + '\n';
  for (const std::string& w : r.warnings)
    out += "\n> warning: " + report::markdown_cell(w) + '\n';
  return out;
}

}  // namespace inferprof
