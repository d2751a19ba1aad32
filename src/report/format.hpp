#pragma once
// --format: the one factory from a format to a result type's reporter.
//
// A reporter prints one result type (a run, a comparison, a simulation, a
// sweep, replicas, a diff) in one format; each is a function in its own file,
// src/report/render/<result>_<format>.cpp (docs/development.md). format.cpp
// lists the reporters of each result type; a format a result lacks is an
// error naming those it has, never a silent fallback to the table.
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inferprof {
struct RunSummary;
struct CompareResult;
struct SimulateResult;
struct SweepResult;
struct ReplicaSummary;
struct DiffResult;
}  // namespace inferprof

namespace inferprof::report {

enum class Format { table, json, csv, markdown };
// Every format, in the order --help and errors list them.
inline constexpr Format kFormats[] = {Format::table, Format::json, Format::csv, Format::markdown};

std::string_view format_name(Format f);
std::optional<Format> parse_format(std::string_view name);

// One result type in one format.
template <class Result>
struct Reporter {
  Format format;
  std::string (*render)(const Result&);
};

// The reporters of one result type.
template <class Result>
class Reporters {
 public:
  Reporters(std::initializer_list<Reporter<Result>> list) : list_(list) {}

  // nullptr: `Result` has no reporter for `f`.
  const Reporter<Result>* find(Format f) const {
    for (const Reporter<Result>& r : list_)
      if (r.format == f) return &r;
    return nullptr;
  }
  // The formats `Result` can be printed in, in the order of kFormats.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (Format f : kFormats)
      if (find(f)) out.emplace_back(format_name(f));
    return out;
  }

 private:
  std::vector<Reporter<Result>> list_;
};

// The factory: one specialisation per result type (format.cpp).
template <class Result>
const Reporters<Result>& reporters();
template <>
const Reporters<RunSummary>& reporters<RunSummary>();
template <>
const Reporters<CompareResult>& reporters<CompareResult>();
template <>
const Reporters<SimulateResult>& reporters<SimulateResult>();
template <>
const Reporters<SweepResult>& reporters<SweepResult>();
template <>
const Reporters<ReplicaSummary>& reporters<ReplicaSummary>();
template <>
const Reporters<DiffResult>& reporters<DiffResult>();

// Throws Error(bad_input) when `f` is not among `available`; `what` names the
// result in the message ("the replica table").
void require_format(const std::vector<std::string>& available, Format f, std::string_view what);

template <class Result>
void require_format(Format f, std::string_view what) {
  require_format(reporters<Result>().names(), f, what);
}

template <class Result>
std::string render(Format f, const Result& r, std::string_view what) {
  const Reporter<Result>* reporter = reporters<Result>().find(f);
  if (!reporter) require_format<Result>(f, what);  // throws
  return reporter->render(r);
}

}  // namespace inferprof::report
