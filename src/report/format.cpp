#include "report/format.hpp"

#include <fmt/format.h>

#include "inferprof/compare_result.hpp"
#include "inferprof/diff_result.hpp"
#include "inferprof/error.hpp"
#include "inferprof/replicas_result.hpp"
#include "inferprof/report.hpp"
#include "inferprof/simulate_result.hpp"
#include "inferprof/sweep_result.hpp"

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
  for (Format f : kFormats)
    if (format_name(f) == name) return f;
  return std::nullopt;
}

void require_format(const std::vector<std::string>& available, Format f, std::string_view what) {
  for (const auto& n : available)
    if (n == format_name(f)) return;
  throw bad_input(fmt::format("--format {}: {} has no {} form; use {}", format_name(f), what, format_name(f),
                              fmt::join(available, ", ")));
}

// The reporters of each result type: their functions are declared in the
// result's public header and defined in src/report/render/<result>_<format>.cpp.
template <>
const Reporters<RunSummary>& reporters<RunSummary>() {
  static const Reporters<RunSummary> r{{Format::table, render_table},
                                       {Format::json, render_summary_json},
                                       {Format::csv, render_stages_csv},
                                       {Format::markdown, render_markdown}};
  return r;
}

template <>
const Reporters<CompareResult>& reporters<CompareResult>() {
  static const Reporters<CompareResult> r{{Format::table, render_compare_table},
                                          {Format::json, render_compare_json},
                                          {Format::csv, render_compare_csv},
                                          {Format::markdown, render_compare_markdown}};
  return r;
}

template <>
const Reporters<SimulateResult>& reporters<SimulateResult>() {
  static const Reporters<SimulateResult> r{{Format::table, render_simulate_table},
                                           {Format::json, render_simulate_json},
                                           {Format::csv, render_simulate_csv},
                                           {Format::markdown, render_simulate_markdown}};
  return r;
}

template <>
const Reporters<SweepResult>& reporters<SweepResult>() {
  static const Reporters<SweepResult> r{{Format::table, render_sweep_table},
                                        {Format::json, render_sweep_json},
                                        {Format::csv, render_sweep_csv},
                                        {Format::markdown, render_sweep_markdown}};
  return r;
}

template <>
const Reporters<ReplicaSummary>& reporters<ReplicaSummary>() {
  static const Reporters<ReplicaSummary> r{{Format::table, render_replicas_table},
                                           {Format::json, render_replicas_json},
                                           {Format::csv, render_replicas_csv},
                                           {Format::markdown, render_replicas_markdown}};
  return r;
}

template <>
const Reporters<DiffResult>& reporters<DiffResult>() {
  // A diff is a table of rows with verdicts: no CSV form (JUnit via --junit).
  static const Reporters<DiffResult> r{
      {Format::table, render_diff_table}, {Format::json, render_diff_json}, {Format::markdown, render_diff_markdown}};
  return r;
}

}  // namespace inferprof::report
