#pragma once
// What the reporters of a diff (diff_<format>.cpp) share.
#include <string>
#include <vector>

#include "inferprof/diff_result.hpp"

namespace inferprof::report::diff_parts {

// A value in the row's unit: "1.234 ms", "1,923.1 req/s", "81.2%".
std::string value_text(const DiffRow& row, double v);
// A change with its sign: "+1.234 ms", "-2.5 pts".
std::string signed_text(const DiffRow& row, double v);
// "+12.3%", "12×" past +1000%, "-" for ratios or a zero base.
std::string pct_text(const DiffRow& row);
// The interval of the relative change: what the gate's percentage is read against.
std::string interval_text(const DiffRow& row);
std::string metric_label(const DiffRow& row);  // "p99", "cpu.mean"
bool several_runs(const DiffResult& r);        // a side has more than one run
// How far apart the runs of each side are: (max - min) / mean.
std::string spread_text(const DiffRow& row);
// "REGRESSION: 1 of 2 gates failed (...)", "ok: 2 gates passed", ...
std::string verdict_line(const DiffResult& r);
// Rows shown to people: every gated row, and the others that are not all zero.
bool shown(const DiffRow& row);
// The lines under the table: how intervals were computed, hidden rows, notes.
std::vector<std::string> footnotes(const DiffResult& r);
// The spread column only when a side has several runs.
std::vector<std::string> header_cells(const DiffResult& r);
std::vector<std::string> row_cells(const DiffResult& r, const DiffRow& row);
// The left-aligned columns of a table of `columns`: the stage and metric, the gate and verdict.
inline std::vector<std::size_t> left_columns(std::size_t columns) {
  return {0, 1, columns - 2, columns - 1};
}

}  // namespace inferprof::report::diff_parts
