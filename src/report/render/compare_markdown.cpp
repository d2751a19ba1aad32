// A comparison as GitHub markdown (--format markdown): the table's cells and notes.
#include "base/text.hpp"
#include "report/render/compare_parts.hpp"

namespace inferprof {

std::string render_compare_markdown(const CompareResult& r) {
  using namespace report;
  using namespace report::compare_parts;
  std::string out = fmt::format("### {}\n", markdown_cell(headline(r)));
  if (r.rows.empty()) return out;
  out += '\n';
  // A lone '~' can start strikethrough on GitHub: markdown_cell escapes it, as every cell's text.
  out += markdown_table(table_cells(r, "~"), left_columns(r));
  if (r.rows.size() > 1) out += '\n' + markdown_cell(interval_line(r)) + '\n';
  const bool noise = any_noise(r);
  const bool single_wall = r.rows.size() > 1 && degenerate_wall_interval(r);
  if (noise || single_wall) out += '\n';
  if (noise) out += fmt::format("\\~ {}\n", kNoiseNote);
  if (noise && single_wall) out += '\n';
  if (single_wall) out += single_wall_note(r);
  if (r.rows.size() > 1) {
    out += "\n**Where the time went**\n\n";
    for (std::size_t i = 1; i < r.rows.size(); ++i) {
      const CompareRow& row = r.rows[i];
      const std::string tiers = tiers_text(row);
      out += fmt::format("- **{}**{}: {}\n", markdown_cell(row.name),
                         tiers.empty() ? "" : " (" + markdown_cell(tiers) + ")",
                         markdown_cell(explanation(row, r.rows[0], r.varies != "caches")));
    }
  }
  if (!r.gates.empty()) {
    const auto left = std::vector<std::size_t>(kGateLeftColumns.begin(), kGateLeftColumns.end());
    out += "\n**" + markdown_cell(gate_heading(r)) + "**\n\n" + markdown_table(gate_cells(r), left);
  }
  const Notes n = notes_of(r);
  std::vector<std::string> quoted;
  for (const auto& w : n.warnings)
    quoted.push_back(fmt::format("> **warning:** {}\n", markdown_cell(w)));
  for (const auto& v : n.verify)
    quoted.push_back(fmt::format("> **verify:** {}\n", markdown_cell(v)));
  if (!quoted.empty()) out += '\n';
  for (std::size_t i = 0; i < quoted.size(); ++i)
    out += (i ? ">\n" : "") + quoted[i];
  return out;
}

}  // namespace inferprof
