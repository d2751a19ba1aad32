#include "report/format.hpp"

#include <fmt/format.h>

#include "inferprof/compare.hpp"
#include "inferprof/diff.hpp"
#include "inferprof/error.hpp"
#include "inferprof/replicas.hpp"
#include "inferprof/report.hpp"
#include "inferprof/simulate.hpp"

namespace inferprof::report {

std::string_view format_name(Format f) {
  switch (f) {
    case Format::table:
      return "table";
    case Format::json:
      return "json";
    case Format::csv:
      return "csv";
    case Format::markdown:
      return "markdown";
  }
  return "?";
}

std::optional<Format> parse_format(std::string_view name) {
  for (Format f : {Format::table, Format::json, Format::csv, Format::markdown})
    if (format_name(f) == name) return f;
  return std::nullopt;
}

void require_format(const std::vector<std::string>& available, Format f, std::string_view what) {
  for (const auto& n : available)
    if (n == format_name(f)) return;
  throw bad_input(fmt::format("--format {}: {} has no {} form; use {}", format_name(f), what, format_name(f),
                              fmt::join(available, ", ")));
}

template <>
const Renderers<RunSummary>& renderers<RunSummary>() {
  static const Renderers<RunSummary> r{render_table, render_summary_json, render_stages_csv, render_markdown};
  return r;
}

template <>
const Renderers<CompareResult>& renderers<CompareResult>() {
  static const Renderers<CompareResult> r{render_compare_table, render_compare_json, render_compare_csv,
                                          render_compare_markdown};
  return r;
}

template <>
const Renderers<SimulateResult>& renderers<SimulateResult>() {
  static const Renderers<SimulateResult> r{render_simulate_table, render_simulate_json, render_simulate_csv,
                                           render_simulate_markdown};
  return r;
}

template <>
const Renderers<ReplicaSummary>& renderers<ReplicaSummary>() {
  static const Renderers<ReplicaSummary> r{render_replicas_table, render_replicas_json, render_replicas_csv,
                                           render_replicas_markdown};
  return r;
}

template <>
const Renderers<DiffResult>& renderers<DiffResult>() {
  // A diff is a table of rows with verdicts: no CSV form (JUnit via --junit).
  static const Renderers<DiffResult> r{render_diff_table, render_diff_json, nullptr, render_diff_markdown};
  return r;
}

}  // namespace inferprof::report
