// What the reporters of `inferprof diff` share: each row's cells, the
// verdict line and the footnotes; and a verdict's name.
#include "report/render/diff_parts.hpp"

#include <fmt/format.h>

#include "base/text.hpp"

namespace inferprof {

namespace report::diff_parts {
namespace {

std::string gate_text(const DiffRow& row) {
  if (row.gate.empty()) return "-";
  return fmt::format("{} (±{})", row.gate, value_text(row, row.limit));
}

}  // namespace

std::string value_text(const DiffRow& row, double v) {
  if (row.unit == "req/s") return fmt::format("{} req/s", report::grouped_fixed(v, 1));
  if (row.unit == "ratio") return fmt::format("{:.1f}%", v * 100);
  return human_duration_us(v);
}

std::string signed_text(const DiffRow& row, double v) {
  std::string s = row.unit == "ratio" ? fmt::format("{:.1f} pts", v * 100) : value_text(row, v);
  return v > 0 ? "+" + s : s;
}

std::string pct_text(const DiffRow& row) {
  if (row.unit == "ratio" || row.change.base == 0) return "-";
  // Past +1000% a ratio reads better than a percentage.
  if (row.change.pct() >= 1000 && row.change.base > 0)
    return fmt::format("{:.0f}\u00d7", row.change.now / row.change.base);
  return fmt::format("{:+.1f}%", row.change.pct());
}

std::string interval_text(const DiffRow& row) {
  if (!row.relative) return "-";
  return fmt::format("[{:+.1f}%, {:+.1f}%]", row.relative->first * 100, row.relative->second * 100);
}

std::string metric_label(const DiffRow& row) {
  return row.clock == "cpu" ? "cpu." + row.metric : row.metric;
}

bool several_runs(const DiffResult& r) {
  return r.base.size() > 1 || r.now.size() > 1;
}

std::string spread_text(const DiffRow& row) {
  if (!row.base_spread && !row.new_spread) return "-";
  auto one = [](const std::optional<double>& s) { return s ? fmt::format("{:.1f}%", *s * 100) : std::string("-"); };
  return one(row.base_spread) + " / " + one(row.new_spread);
}

std::string verdict_line(const DiffResult& r) {
  if (r.regressions > 0)
    return fmt::format("REGRESSION: {} of {} gates failed (the whole interval of the change past the threshold)",
                       r.regressions, r.gated);
  if (r.unstable > 0)
    return fmt::format(
        "UNSTABLE: {} of {} gates not judged: the runs of one side differ among themselves by more than the "
        "threshold (exit {}; rerun on a quieter machine, or with more runs)",
        r.unstable, r.gated, kExitUnstable);
  std::string out = fmt::format("ok: {} gate{} passed", r.gated, r.gated == 1 ? "" : "s");
  if (r.noise > 0) out += fmt::format(", {} past the threshold but within noise", r.noise);
  if (r.improved > 0) out += fmt::format(", {} improved", r.improved);
  return out;
}

bool shown(const DiffRow& row) {
  return !row.gate.empty() || row.change.base != 0 || row.change.now != 0;
}

std::vector<std::string> footnotes(const DiffResult& r) {
  std::vector<std::string> out;
  out.push_back(r.intervals_note);
  if (!r.hidden.empty()) {
    std::string h;
    for (const auto& s : r.hidden)
      h += (h.empty() ? "" : ", ") + s;
    out.push_back(fmt::format("not shown (0 or n/a in both runs): {}", h));
  }
  if (r.noise > 0)
    out.push_back(
        "noise: past the threshold, but the interval of the change is not wholly past it — not counted as a "
        "regression");
  if (r.unstable > 0)
    out.push_back(
        "unstable: past the threshold while the runs of one side spread (max - min over their mean) wider than the "
        "threshold, and the two sides' runs are not apart by more than it — the change cannot be told from the "
        "machine's own variation");
  for (const auto& m : r.mismatches)
    out.push_back(fmt::format("warning (--force): {}", m));
  for (const auto& n : r.notes)
    out.push_back(fmt::format("note: {}", n));
  return out;
}

std::vector<std::string> header_cells(const DiffResult& r) {
  std::vector<std::string> h = {
      "stage", "metric", "base", "new", "change", "%", fmt::format("{:.0f}% interval", r.confidence * 100)};
  if (several_runs(r)) h.push_back("spread b / n");
  h.insert(h.end(), {"gate", "verdict"});
  return h;
}

std::vector<std::string> row_cells(const DiffResult& r, const DiffRow& row) {
  std::vector<std::string> c = {row.stage,
                                metric_label(row),
                                value_text(row, row.change.base),
                                value_text(row, row.change.now),
                                signed_text(row, row.change.delta()),
                                pct_text(row),
                                interval_text(row)};
  if (several_runs(r)) c.push_back(spread_text(row));
  c.insert(c.end(), {gate_text(row), std::string(verdict_name(row.verdict))});
  return c;
}

}  // namespace report::diff_parts
}  // namespace inferprof
