#pragma once
// --format: the one place that maps a format to a result type's renderer.
// Each result type (a run, a comparison, a simulation, replicas, a diff)
// lists the renderers it has; a format it lacks is an error, never a silent
// fallback to the table.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inferprof {
struct RunSummary;
struct CompareResult;
struct SimulateResult;
struct ReplicaSummary;
struct DiffResult;
}  // namespace inferprof

namespace inferprof::report {

enum class Format { table, json, csv, markdown };

std::string_view format_name(Format f);
std::optional<Format> parse_format(std::string_view name);

template <class Result>
struct Renderers {
  using Fn = std::string (*)(const Result&);
  Fn table = nullptr, json = nullptr, csv = nullptr, markdown = nullptr;

  Fn get(Format f) const {
    switch (f) {
      case Format::table:
        return table;
      case Format::json:
        return json;
      case Format::csv:
        return csv;
      case Format::markdown:
        return markdown;
    }
    return nullptr;
  }
  // The formats this result can be printed in, in a fixed order.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (Format f : {Format::table, Format::json, Format::csv, Format::markdown})
      if (get(f)) out.emplace_back(format_name(f));
    return out;
  }
};

// One specialisation per result type (format.cpp).
template <class Result>
const Renderers<Result>& renderers();
template <>
const Renderers<RunSummary>& renderers<RunSummary>();
template <>
const Renderers<CompareResult>& renderers<CompareResult>();
template <>
const Renderers<SimulateResult>& renderers<SimulateResult>();
template <>
const Renderers<ReplicaSummary>& renderers<ReplicaSummary>();
template <>
const Renderers<DiffResult>& renderers<DiffResult>();

// Throws Error(bad_input) when `Result` has no form in `f`; `what` names the
// result in the message ("the replica table").
void require_format(const std::vector<std::string>& available, Format f, std::string_view what);

template <class Result>
void require_format(Format f, std::string_view what) {
  require_format(renderers<Result>().names(), f, what);
}

template <class Result>
std::string render(Format f, const Result& r, std::string_view what) {
  require_format<Result>(f, what);
  return renderers<Result>().get(f)(r);
}

}  // namespace inferprof::report
