// The reports of `inferprof diff`: a table for the CI log, markdown for a
// pull-request comment (verdict first), JSON for dashboards, JUnit XML so CI
// systems show each gate as a test case.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "inferprof/diff.hpp"
#include "report/json.hpp"
#include "report/text.hpp"

namespace inferprof {

// A verdict's name is presentation: it lives with the renderers.
std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::ok:
      return "ok";
    case Verdict::regression:
      return "REGRESSION";
    case Verdict::improved:
      return "improved";
    case Verdict::noise:
      return "noise";
    case Verdict::none:
      break;
  }
  return "-";
}

namespace {

using report::human_duration_us;

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
  if (!row.change.interval) return "-";
  return fmt::format("[{}, {}]", signed_text(row, row.change.interval->first),
                     signed_text(row, row.change.interval->second));
}

std::string gate_text(const DiffRow& row) {
  if (row.gate.empty()) return "-";
  return fmt::format("{} (±{})", row.gate, value_text(row, row.limit));
}

std::string verdict_line(const DiffResult& r) {
  if (r.regressions > 0)
    return fmt::format("REGRESSION: {} of {} gates failed (past the threshold and statistically clear)", r.regressions,
                       r.gated);
  std::string out = fmt::format("ok: {} gate{} passed", r.gated, r.gated == 1 ? "" : "s");
  if (r.noise > 0) out += fmt::format(", {} past the threshold but within noise", r.noise);
  if (r.improved > 0) out += fmt::format(", {} improved", r.improved);
  return out;
}

std::string run_line(std::string_view label, const RunData& d) {
  return fmt::format("{}: {} · {} requests · {} · {}", label, d.summary_path, report::group_thousands(d.requests),
                     d.started_at.empty() ? "?" : d.started_at, d.hostname.empty() ? "?" : d.hostname);
}

// Rows shown to people: every gated row, and the others that are not all zero.
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
    out.push_back("noise: past the threshold, but the interval of the change includes 0 — not counted as a regression");
  for (const auto& m : r.mismatches)
    out.push_back(fmt::format("warning (--force): {}", m));
  for (const auto& n : r.notes)
    out.push_back(fmt::format("note: {}", n));
  return out;
}

std::vector<std::string> row_cells(const DiffRow& row) {
  return {row.stage,
          row.metric,
          value_text(row, row.change.base),
          value_text(row, row.change.now),
          signed_text(row, row.change.delta()),
          pct_text(row),
          interval_text(row),
          gate_text(row),
          std::string(verdict_name(row.verdict))};
}

}  // namespace

std::string render_diff_table(const DiffResult& r) {
  std::vector<std::vector<std::string>> lines;
  lines.push_back({"stage", "metric", "base", "new", "change", "%", fmt::format("{:.0f}% interval", r.confidence * 100),
                   "gate", "verdict"});
  for (const DiffRow& row : r.rows)
    if (shown(row)) lines.push_back(row_cells(row));
  std::vector<std::size_t> width(lines[0].size(), 0);
  for (const auto& line : lines)
    for (std::size_t c = 0; c < line.size(); ++c)
      width[c] = std::max(width[c], report::display_width(line[c]));
  std::string out = fmt::format("inferprof diff\n  {}\n  {}\n\n", run_line("base", r.base), run_line("new ", r.now));
  for (const auto& line : lines) {
    std::string text;
    for (std::size_t c = 0; c < line.size(); ++c) {
      const bool left = c < 2 || c >= 7;
      if (c > 0) text += "  ";
      text += left ? report::pad_right(line[c], width[c]) : report::pad_left(line[c], width[c]);
    }
    while (!text.empty() && text.back() == ' ')
      text.pop_back();
    out += text + "\n";
  }
  out += "\n";
  for (const auto& f : footnotes(r))
    out += f + "\n";
  out += "\n" + verdict_line(r) + "\n";
  return out;
}

std::string render_diff_markdown(const DiffResult& r) {
  using report::markdown_cell;
  std::string out = fmt::format("**inferprof diff: {}**\n\n", markdown_cell(verdict_line(r)));
  auto table = [&](bool gated_only) {
    std::string t = fmt::format("| stage | metric | base | new | change | % | {:.0f}% interval | gate | verdict |\n",
                                r.confidence * 100);
    t += "|:--|:--|--:|--:|--:|--:|--:|:--|:--|\n";
    for (const DiffRow& row : r.rows) {
      if (gated_only ? row.gate.empty() : !shown(row)) continue;
      auto cells = row_cells(row);
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
  out +=
      fmt::format("\nbase `{}` ({}) · new `{}` ({})\n", markdown_cell(r.base.summary_path),
                  markdown_cell(r.base.started_at), markdown_cell(r.now.summary_path), markdown_cell(r.now.started_at));
  return out;
}

std::string render_diff_json(const DiffResult& r) {
  report::JsonWriter w;
  w.begin_object();
  w.field("schema", "inferprof.diff/1");
  w.field("verdict", r.failed() ? "regression" : "ok");
  w.field("base", r.base.summary_path);
  w.field("new", r.now.summary_path);
  w.field("gates", r.gated);
  w.field("regressions", r.regressions);
  w.field("noise", r.noise);
  w.field("improved", r.improved);
  w.field_number("confidence", r.confidence);
  w.field("intervals", r.intervals);
  w.field("intervals_note", r.intervals_note);
  w.key("forced_mismatches").begin_array();
  for (const auto& m : r.mismatches)
    w.value(m);
  w.end_array();
  w.key("notes").begin_array();
  for (const auto& n : r.notes)
    w.value(n);
  w.end_array();
  w.key("rows").begin_array();
  for (const DiffRow& row : r.rows) {
    w.begin_object();
    w.field("stage", row.stage);
    w.field("metric", row.metric);
    w.field("unit", row.unit);
    w.field_number("base", row.change.base, 6);
    w.field_number("new", row.change.now, 6);
    w.field_number("change", row.change.delta(), 6);
    w.key("change_pct");
    if (row.change.base != 0)
      w.number(row.change.pct(), 3);
    else
      w.null();
    w.key("interval");
    if (row.change.interval)
      w.begin_array(true).number(row.change.interval->first, 6).number(row.change.interval->second, 6).end_array();
    else
      w.null();
    w.key("gate");
    if (row.gate.empty())
      w.null();
    else
      w.value(row.gate);
    w.key("limit");
    if (row.gate.empty())
      w.null();
    else
      w.number(row.limit, 6);
    w.field("verdict", row.verdict == Verdict::none ? std::string("none") : std::string(verdict_name(row.verdict)));
    if (!row.note.empty()) w.field("note", row.note);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

namespace {
std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}
}  // namespace

std::string render_diff_junit(const DiffResult& r) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"inferprof diff\" tests=\"{}\" failures=\"{}\">\n", r.gated, r.regressions);
  out += fmt::format("  <testsuite name=\"inferprof diff\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\">\n",
                     r.gated, r.regressions);
  for (const DiffRow& row : r.rows) {
    if (row.gate.empty()) continue;
    const std::string summary = fmt::format(
        "{} {}: base {}, new {}, change {} ({}), {} interval {}, allowed ±{}", row.stage, row.metric,
        value_text(row, row.change.base), value_text(row, row.change.now), signed_text(row, row.change.delta()),
        pct_text(row), fmt::format("{:.0f}%", r.confidence * 100), interval_text(row), value_text(row, row.limit));
    out += fmt::format("    <testcase classname=\"inferprof.diff\" name=\"{}\">\n",
                       xml_escape(fmt::format("{}.{} ({})", row.stage, row.metric, row.gate)));
    if (row.verdict == Verdict::regression) {
      out += fmt::format("      <failure message=\"{}\" type=\"regression\">{}</failure>\n",
                         xml_escape(fmt::format("{} {} regressed {}", row.stage, row.metric, pct_text(row))),
                         xml_escape(summary));
    } else {
      std::string note = std::string(verdict_name(row.verdict)) + ": " + summary;
      if (row.verdict == Verdict::noise) note = "noise: past the threshold but not statistically clear; " + summary;
      if (!row.change.interval) note += "; " + (row.note.empty() ? r.intervals_note : row.note);
      out += fmt::format("      <system-out>{}</system-out>\n", xml_escape(note));
    }
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace inferprof
