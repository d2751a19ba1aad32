#include "report/request_sinks.hpp"

#include <string_view>

namespace inferprof::report {
namespace {

fmt::memory_buffer& csv_row() {
  thread_local fmt::memory_buffer row;
  return row;
}

}  // namespace

RequestsCsvSink::RequestsCsvSink(const std::string& dir, const CollectorOptions& options)
    : epoch_(options.epoch),
      copies_applicable_(options.copies_applicable),
      preprocess_ops_(options.preprocess_ops.size()) {
  file_.open(dir, "requests.csv");
  file_.write(requests_csv_header(options.copies_applicable, options.preprocess_ops));
}

void RequestsCsvSink::prepare(const RequestRecord& r) {
  fmt::memory_buffer& row = csv_row();
  row.clear();
  append_request_row(row, r, epoch_, copies_applicable_, preprocess_ops_);
}

bool RequestsCsvSink::write(const RequestRecord&) {
  const fmt::memory_buffer& row = csv_row();
  file_.write(std::string_view(row.data(), row.size()));
  return true;
}

void RequestsCsvSink::finish(const RunSummary&) {
  file_.close();
  if (file_.error() != 0) throw write_error(file_.final_path(), file_.error());
}

TraceJsonSink::TraceJsonSink(const std::string& dir, Nanos epoch, std::uint64_t max_bytes)
    : trace_(epoch), max_bytes_(max_bytes) {
  file_.open(dir, "trace.json");
  file_.write(ChromeTraceWriter::header());
}

bool TraceJsonSink::write(const RequestRecord& r) {
  if (full_) return false;
  events_.clear();
  trace_.append(r, events_);
  if (max_bytes_ != 0 && bytes_ + events_.size() > max_bytes_) {
    full_ = true;
    return false;
  }
  file_.write(std::string_view(events_.data(), events_.size()));
  bytes_ += events_.size();
  return true;
}

void TraceJsonSink::finish(const RunSummary& summary) {
  file_.write(trace_.footer(summary));
  file_.close();
  if (file_.error() != 0) throw write_error(file_.final_path(), file_.error());
}

std::vector<std::unique_ptr<RequestSink>> report_folder_sinks(const std::string& dir, const CollectorOptions& options) {
  std::vector<std::unique_ptr<RequestSink>> sinks;
  sinks.push_back(std::make_unique<TraceJsonSink>(dir, options.epoch, options.trace_json_max_bytes));
  sinks.push_back(std::make_unique<RequestsCsvSink>(dir, options));
  return sinks;
}

}  // namespace inferprof::report
