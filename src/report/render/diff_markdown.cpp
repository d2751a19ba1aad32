// A diff as GitHub markdown (--format markdown), for a pull-request comment: the verdict first.
#include "report/render/diff_parts.hpp"
#include "report/text.hpp"

namespace inferprof {

std::string render_diff_markdown(const DiffResult& r) {
  using namespace report::diff_parts;
  using report::markdown_cell;
  std::string out = fmt::format("**inferprof diff: {}**\n\n", markdown_cell(verdict_line(r)));
  auto table = [&](bool gated_only) {
    std::string t = "|", align = "|";
    const auto head = header_cells(r);
    for (std::size_t c = 0; c < head.size(); ++c) {
      t += " " + head[c] + " |";
      align += c < 2 || c >= head.size() - 2 ? ":--|" : "--:|";
    }
    t += "\n" + align + "\n";
    for (const DiffRow& row : r.rows) {
      if (gated_only ? row.gate.empty() : !shown(row)) continue;
      auto cells = row_cells(r, row);
      if (row.verdict == Verdict::regression) cells.back() = "**REGRESSION**";
      t += "|";
      for (const auto& c : cells)
        t += " " + markdown_cell(c) + " |";
      t += "\n";
    }
    return t;
  };
  if (r.gated > 0) out += table(true);
  out += "\n<details><summary>every stage and metric</summary>\n\n" + table(false) + "\n</details>\n\n";
  for (const auto& f : footnotes(r))
    out += "- " + markdown_cell(f) + "\n";
  auto side = [&](const std::vector<RunData>& runs) {
    std::string s;
    for (const auto& d : runs)
      s +=
          fmt::format("{}`{}` ({})", s.empty() ? "" : ", ", markdown_cell(d.summary_path), markdown_cell(d.started_at));
    return s;
  };
  out += fmt::format("\nbase {} · new {}\n", side(r.base), side(r.now));
  return out;
}

}  // namespace inferprof
