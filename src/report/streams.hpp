#pragma once
// Pieces of the Collector that write files: temporary files renamed into place
// on commit, the Chrome trace-event writer and the requests.csv row format.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "inferprof/error.hpp"
#include "inferprof/report.hpp"

namespace inferprof::report {

// "dir/.name.tmp.<pid>", or with unique = true "dir/.name.tmp.<pid>.<n>" so two
// collectors alive in one process never share a temporary file.
std::string temp_path_for(const std::string& dir, const std::string& name, bool unique);
// "cannot write 'PATH': strerror(err)", exit code runtime.
Error write_error(const std::string& path, int err);

// A file written under a temporary name and renamed over `final` on commit.
// Write errors are remembered rather than thrown, because they happen on the
// replay workers' path; commit() reports the first one.
class TempFile {
 public:
  TempFile() = default;
  ~TempFile() { remove(); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void open(const std::string& dir, const std::string& name);  // throws Error
  bool is_open() const noexcept { return file_ != nullptr; }
  void write(std::string_view data) noexcept;
  void close() noexcept;   // flushes; an error is remembered
  void remove() noexcept;  // closes and unlinks the temporary file
  // Renames the temporary file over the final one. Throws Error.
  void rename_into_place();

  int error() const noexcept { return errno_; }
  const std::string& final_path() const noexcept { return final_; }
  const std::string& temp_path() const noexcept { return temp_; }

 private:
  std::FILE* file_ = nullptr;
  std::string temp_;
  std::string final_;
  int errno_ = 0;
  std::vector<char> buffer_;  // stdio buffer: large, so workers seldom wait on write(2)
};

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
  std::vector<Nanos> lane_end_;         // per queue lane: the latest end placed on it
  std::vector<bool> workers_;           // workers that served an included request
  std::vector<std::string> json_names_;  // escaped span names by NameTable id
};

// requests.csv
std::string requests_csv_header(bool gpu);
void append_request_row(fmt::memory_buffer& out, const RequestRecord& r, Nanos epoch, bool copies_applicable);

// Rounds folded-stack values from ns to whole µs with the largest-remainder
// method so they add up to round(total_ns / 1000) exactly; drops values that
// round to 0 and sorts by path.
std::vector<std::pair<std::string, std::uint64_t>> round_folded(
    std::vector<std::pair<std::string, std::int64_t>> ns_values, std::int64_t total_ns);

}  // namespace inferprof::report
