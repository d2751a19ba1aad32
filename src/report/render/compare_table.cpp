// A comparison as the terminal table (--format table): hyperfine's `Relative`
// idea, but every speedup with its 95% interval and noise named as noise, then
// where each configuration's time went (what share of requests each tier
// served and at what latency, against a miss), so that a tier's speedup is
// explained, not only shown.
#include <algorithm>

#include "base/text.hpp"
#include "report/render/compare_parts.hpp"

namespace inferprof {

std::string render_compare_table(const CompareResult& r) {
  using namespace report;
  using namespace report::compare_parts;
  std::string out = headline(r) + "\n";
  if (r.rows.empty()) return out;
  out += '\n';
  out += render_grid(table_cells(r, "~"), left_columns(r));

  if (r.rows.size() > 1) out += interval_line(r) + '\n';
  const bool noise = any_noise(r);
  const bool single_wall = r.rows.size() > 1 && degenerate_wall_interval(r);
  if (noise || single_wall) out += '\n';
  if (noise) out += fmt::format("~ {}\n", kNoiseNote);
  if (single_wall) out += single_wall_note(r);

  if (r.rows.size() > 1) {
    out += "\nwhere the time went:\n";
    for (std::size_t i = 1; i < r.rows.size(); ++i) {
      const CompareRow& row = r.rows[i];
      const std::string tiers = tiers_text(row);
      out += fmt::format("  {}{}: {}\n", row.name, tiers.empty() ? "" : " (" + tiers + ")",
                         explanation(row, r.rows[0], r.varies != "caches"));
    }
  }

  if (!r.gates.empty()) {
    const auto left = std::vector<std::size_t>(kGateLeftColumns.begin(), kGateLeftColumns.end());
    out += "\n" + gate_heading(r) + "\n" + render_grid(gate_cells(r), left);
  }

  const Notes n = notes_of(r);
  if (!n.warnings.empty() || !n.verify.empty()) out += '\n';
  for (const auto& w : n.warnings)
    out += fmt::format("warning: {}\n", w);
  for (const auto& v : n.verify)
    out += fmt::format("verify: {}\n", v);
  return out;
}

}  // namespace inferprof
