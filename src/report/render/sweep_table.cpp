// `inferprof sweep` as the terminal table (--format table).
#include <fmt/format.h>

#include "base/text.hpp"
#include "report/render/sweep_parts.hpp"

namespace inferprof {

std::string render_sweep_table(const SweepResult& r) {
  namespace parts = report::sweep_parts;
  const auto cells = parts::step_cells(r);
  std::string out = parts::headline(r) + "\n\n";
  out += report::render_grid(cells, {0, cells.front().size() - 1});
  out += "\ncapacity:\n";
  for (const std::string& line : parts::capacity_lines(r))
    out += "  " + line + '\n';
  out += fmt::format(
      "\n{} steps in {:.1f} s ({:.1f} s replaying); percentile intervals: order statistics of each "
      "step's requests (traffic like this trace)\n",
      [&] {
        std::size_t n = 0;
        for (const SweepCurve& c : r.curves)
          n += c.steps.size();
        return n;
      }(),
      r.wall_s, r.replay_s);
  for (const std::string& w : r.warnings)
    out += "warning: " + w + '\n';
  return out;
}

}  // namespace inferprof
