#pragma once
// Pieces of the Collector that write files: the Chrome trace-event writer and
// the requests.csv row format (temporary files: report/atomic_file.hpp).
#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/atomic_file.hpp"
#include "base/histogram.hpp"
#include "inferprof/error.hpp"
#include "inferprof/report.hpp"

namespace inferprof::report {

// Chrome trace-event JSON, one event per line, written as requests arrive.
class ChromeTraceWriter {
 public:
  static constexpr std::size_t kMaxQueueLanes = 64;
  static constexpr std::uint32_t kQueueTidBase = 1000;

  explicit ChromeTraceWriter(Nanos epoch) : epoch_(epoch) {}
  void set_epoch(Nanos epoch) { epoch_ = epoch; }

  static std::string_view header() { return "{\"traceEvents\":[\n"; }
  // Appends one "X" event for the request root and one per span.
  void append(const RequestRecord& r, fmt::memory_buffer& out);
  // Metadata events, the closing bracket and otherData.
  std::string footer(const RunSummary& s) const;

 private:
  std::uint32_t queue_lane(Nanos start, Nanos end);
  const std::string& json_name(std::uint32_t id);
  void begin_event(fmt::memory_buffer& out);

  Nanos epoch_;
  bool first_ = true;
  std::vector<Nanos> lane_end_;          // per queue lane: the latest end placed on it
  std::vector<bool> workers_;            // workers that served an included request
  std::vector<std::string> json_names_;  // escaped span names by NameTable id
};

// requests.csv
// `preprocess_ops`: the preprocess stage's parts (CollectorOptions), each a
// wall and a CPU column after the stages' (preprocess.resize_us, ..._cpu_us).
std::string requests_csv_header(bool gpu, const std::vector<std::string>& preprocess_ops = {});
void append_request_row(fmt::memory_buffer& out, const RequestRecord& r, Nanos epoch, bool copies_applicable,
                        std::size_t preprocess_ops = 0);

// Rounds folded-stack values from ns to whole µs with the largest-remainder
// method so they add up to round(total_ns / 1000) exactly; drops values that
// round to 0 and sorts by path.
std::vector<std::pair<std::string, std::uint64_t>> round_folded(std::vector<std::pair<std::string, NanoSum>> ns_values,
                                                                NanoSum total_ns);

}  // namespace inferprof::report
