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
    case Verdict::unstable:
      return "unstable";
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

// The interval of the relative change: what the gate's percentage is read against.
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

// How far apart the runs of each side are: (max - min) / mean.
std::string spread_text(const DiffRow& row) {
  if (!row.base_spread && !row.new_spread) return "-";
  auto one = [](const std::optional<double>& s) { return s ? fmt::format("{:.1f}%", *s * 100) : std::string("-"); };
  return one(row.base_spread) + " / " + one(row.new_spread);
}

std::string gate_text(const DiffRow& row) {
  if (row.gate.empty()) return "-";
  return fmt::format("{} (±{})", row.gate, value_text(row, row.limit));
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

// The spread column only when a side has several runs.
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

}  // namespace

std::string render_diff_table(const DiffResult& r) {
  std::vector<std::vector<std::string>> lines;
  lines.push_back(header_cells(r));
  for (const DiffRow& row : r.rows)
    if (shown(row)) lines.push_back(row_cells(r, row));
  std::vector<std::size_t> width(lines[0].size(), 0);
  for (const auto& line : lines)
    for (std::size_t c = 0; c < line.size(); ++c)
      width[c] = std::max(width[c], report::display_width(line[c]));
  std::string out = "inferprof diff\n" + side_lines("base", r.base) + side_lines("new ", r.now) + "\n";
  for (const auto& line : lines) {
    std::string text;
    for (std::size_t c = 0; c < line.size(); ++c) {
      const bool left = c < 2 || c >= line.size() - 2;
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

std::string render_diff_json(const DiffResult& r) {
  report::JsonWriter w;
  w.begin_object();
  w.field("schema", "inferprof.diff/1");
  w.field("verdict", r.failed() ? "regression" : r.unstable > 0 ? "unstable" : "ok");
  w.field("exit_code", r.exit_code());
  w.field("base", r.base[0].summary_path);  // the first run of each side
  w.field("new", r.now[0].summary_path);
  for (const auto& [key, runs] : {std::pair{"base_runs", &r.base}, std::pair{"new_runs", &r.now}}) {
    w.key(key).begin_array();
    for (const auto& d : *runs)
      w.value(d.summary_path);
    w.end_array();
  }
  w.field("gates", r.gated);
  w.field("regressions", r.regressions);
  w.field("noise", r.noise);
  w.field("improved", r.improved);
  w.field("unstable", r.unstable);
  w.field_number("confidence", r.confidence);
  w.field("intervals", r.intervals);
  w.field("method", r.method);
  w.field("resamples", r.resamples);
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
    w.field("clock", row.clock);
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
    w.key("interval_pct");
    if (row.relative)
      w.begin_array(true).number(row.relative->first * 100, 3).number(row.relative->second * 100, 3).end_array();
    else
      w.null();
    for (const auto& [key, runs] : {std::pair{"base_runs", &row.base_runs}, std::pair{"new_runs", &row.new_runs}}) {
      w.key(key).begin_array(true);
      for (double v : *runs)
        w.number(v, 6);
      w.end_array();
    }
    for (const auto& [key, spread] :
         {std::pair{"base_spread_pct", &row.base_spread}, std::pair{"new_spread_pct", &row.new_spread}}) {
      w.key(key);
      if (*spread)
        w.number(**spread * 100, 3);
      else
        w.null();
    }
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
  out += fmt::format("  <testsuite name=\"inferprof diff\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
                     r.gated, r.regressions, r.unstable);
  for (const DiffRow& row : r.rows) {
    if (row.gate.empty()) continue;
    const std::string summary = fmt::format(
        "{} {}: base {}, new {}, change {} ({}), {} interval {}, allowed ±{}{}", row.stage, metric_label(row),
        value_text(row, row.change.base), value_text(row, row.change.now), signed_text(row, row.change.delta()),
        pct_text(row), fmt::format("{:.0f}%", r.confidence * 100), interval_text(row), value_text(row, row.limit),
        several_runs(r) ? ", spread of the runs (base / new) " + spread_text(row) : "");
    out += fmt::format("    <testcase classname=\"inferprof.diff\" name=\"{}\">\n",
                       xml_escape(fmt::format("{}.{} ({})", row.stage, metric_label(row), row.gate)));
    if (row.verdict == Verdict::regression) {
      out += fmt::format("      <failure message=\"{}\" type=\"regression\">{}</failure>\n",
                         xml_escape(fmt::format("{} {} regressed {}", row.stage, metric_label(row), pct_text(row))),
                         xml_escape(summary));
    } else if (row.verdict == Verdict::unstable) {
      // Not judged: neither a pass nor a failure.
      out += fmt::format("      <skipped message=\"{}\"/>\n      <system-out>{}</system-out>\n",
                         xml_escape(fmt::format("unstable: the runs of one side differ by more than {}", row.gate)),
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
