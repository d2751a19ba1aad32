#pragma once
// Aggregating request records into a run's result (inferprof/run_result.hpp),
// and writing it out: the terminal table, summary.json, requests.csv,
// stages.csv, stacks.folded, flamegraph.svg and trace.json. Nothing here knows
// about CLI11 or libtorch.
#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "inferprof/run_result.hpp"
#include "inferprof/timing.hpp"

namespace inferprof {

struct CollectorOptions {
  std::string out_dir;  // empty: aggregate only, write no files
  // trace.json keeps the first requests whose events fit in this many bytes,
  // so that a viewer can open it; the summary says how many it holds. 0 = no cap.
  std::uint64_t trace_json_max_bytes = 100'000'000;
  bool copies_applicable = false;
  Nanos epoch = 0;  // now_ns() at replay start; trace.json timestamps are relative to it
  // The preprocess stage's parts (Profile::preprocess_op_names(); the
  // records' preprocess_op index into it): each gets a row and columns.
  std::vector<std::string> preprocess_ops;
  // Requests whose seq is below this are served (they fill the caches, they
  // queue) but not measured: sweep --measure-after.
  std::uint64_t measure_from = 0;
  // Keep each request's arrival and service time (RunSummary::queue_samples):
  // 16 bytes a request, so only where a queueing model needs them (sweep).
  bool queue_samples = false;
};

// The files Collector::commit writes into its out_dir.
inline constexpr const char* kRunReportFiles[] = {"summary.json",   "requests.csv", "stages.csv", "stacks.folded",
                                                  "flamegraph.svg", "trace.json",   "report.html"};

// Aggregates request records as they complete: histograms per stage,
// folded-stack totals per span path, op statistics; streams requests.csv rows
// and trace.json events to temporary files in out_dir. Memory is bounded by
// the number of distinct span paths, not by the number of requests.
class Collector {
 public:
  explicit Collector(CollectorOptions options);
  ~Collector();  // removes any temporary file not committed
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  void add(const RequestRecord& record);  // thread-safe
  // The earliest arrival among the measured requests (0: none yet): with
  // measure_from, where the measured replay's wall time starts.
  Nanos first_measured_arrival() const;
  // Timestamps in the reports are relative to this; set before the first add().
  void set_epoch(Nanos epoch);

  RunSummary summarize(const RunInfo& info) const;
  // Folded stacks "request;compute;aten::linear" -> µs of self time, with
  // values rounded so that they sum exactly to round(total request µs).
  std::vector<std::pair<std::string, std::uint64_t>> folded() const;

  // Writes the six files of docs/reports.md into out_dir, each to a temp file then
  // renamed, so each is complete or absent. Throws Error on I/O failure
  // (after removing what it wrote).
  void commit(const RunSummary& summary);
  // Drops the temporary files (a run that failed leaves nothing behind).
  void discard() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reporters for stdout (--format) and for the report files (src/report/render/run_<format>.cpp),
// and the flame graph's (src/report/folded.cpp, flamegraph_svg.cpp).
std::string render_table(const RunSummary& s);  // for people, with units
std::string render_summary_json(const RunSummary& s);
std::string render_stages_csv(const RunSummary& s);
std::string render_markdown(const RunSummary& s);
std::string render_folded(const std::vector<std::pair<std::string, std::uint64_t>>& folded);
// report.html: one self-contained page (no network) with the latency CDF,
// stages as stacked bars, the caches' hit and miss costs and the flame graph of
// `folded` with a search box (run_html.cpp).
std::string render_run_html(const RunSummary& s, const std::vector<std::pair<std::string, std::uint64_t>>& folded,
                            const std::string& title);
// A self-contained SVG flame graph (hover titles with µs and percent).
std::string render_flamegraph_svg(const std::vector<std::pair<std::string, std::uint64_t>>& folded,
                                  const std::string& title);

}  // namespace inferprof
