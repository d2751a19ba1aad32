// A diff as JUnit XML (--junit FILE), so that CI systems show each gate as a test case.
#include <fmt/format.h>

#include "report/render/diff_parts.hpp"

namespace inferprof {
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
  using namespace report::diff_parts;
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
