// A diff as the terminal table (--format table), for the CI log.
#include <algorithm>

#include "base/text.hpp"
#include "report/render/diff_parts.hpp"

namespace inferprof {
namespace {

std::string run_line(std::string_view label, const RunData& d) {
  return fmt::format("{}: {} · {} requests · {} · {}", label, d.summary_path, report::group_thousands(d.requests),
                     d.started_at.empty() ? "?" : d.started_at, d.hostname.empty() ? "?" : d.hostname);
}

// One line for a side of one run; a count, then a line per run, for several.
std::string side_lines(std::string_view label, const std::vector<RunData>& runs) {
  if (runs.size() == 1) return "  " + run_line(label, runs[0]) + "\n";
  std::uint64_t requests = 0;
  for (const auto& d : runs)
    requests += d.requests;
  std::string out = fmt::format("  {}: {} runs · {} requests\n", label, runs.size(), report::group_thousands(requests));
  for (std::size_t i = 0; i < runs.size(); ++i)
    out += "    " + run_line(fmt::format("{}", i + 1), runs[i]) + "\n";
  return out;
}

}  // namespace

std::string render_diff_table(const DiffResult& r) {
  using namespace report::diff_parts;
  std::vector<std::vector<std::string>> lines;
  lines.push_back(header_cells(r));
  for (const DiffRow& row : r.rows)
    if (shown(row)) lines.push_back(row_cells(r, row));
  std::string out = "inferprof diff\n" + side_lines("base", r.base) + side_lines("new ", r.now) + "\n";
  out += report::render_grid(lines, left_columns(lines[0].size())) + "\n";
  for (const auto& f : footnotes(r))
    out += f + "\n";
  out += "\n" + verdict_line(r) + "\n";
  return out;
}

}  // namespace inferprof
