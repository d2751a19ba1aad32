// A diff as GitHub markdown (--format markdown), for a pull-request comment: the verdict first.
#include "base/text.hpp"
#include "report/render/diff_parts.hpp"

namespace inferprof {

std::string render_diff_markdown(const DiffResult& r) {
  using namespace report::diff_parts;
  using report::markdown_cell;
  std::string out = fmt::format("**inferprof diff: {}**\n\n", markdown_cell(verdict_line(r)));
  auto table = [&](bool gated_only) {
    std::vector<std::vector<std::string>> cells{header_cells(r)};
    std::vector<std::pair<std::size_t, std::size_t>> strong;  // the REGRESSION cells, bold
    for (const DiffRow& row : r.rows) {
      if (gated_only ? row.gate.empty() : !shown(row)) continue;
      cells.push_back(row_cells(r, row));
      if (row.verdict == Verdict::regression) {
        cells.back().back() = "REGRESSION";
        strong.emplace_back(cells.size() - 1, cells.back().size() - 1);
      }
    }
    return report::markdown_table(cells, left_columns(cells[0].size()), strong);
  };
  if (r.gated > 0) out += table(true);
  out += "\n<details><summary>every stage and metric</summary>\n\n" + table(false) + "\n</details>\n\n";
  for (const auto& f : footnotes(r))
    out += "- " + markdown_cell(f) + "\n";
  auto side = [&](const std::vector<RunData>& runs) {
    std::string s;
    for (const auto& d : runs)
      s += fmt::format("{}{} ({})", s.empty() ? "" : ", ", markdown_cell(d.summary_path), markdown_cell(d.started_at));
    return s;
  };
  out += fmt::format("\nbase {} · new {}\n", side(r.base), side(r.now));
  return out;
}

}  // namespace inferprof
