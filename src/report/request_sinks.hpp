#pragma once
// Where the Collector streams each request besides aggregating it: one file
// of the report folder each, written as requests arrive into a temporary file
// that the collector's commit renames into place with the others (all or none).
#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/atomic_file.hpp"
#include "inferprof/report.hpp"
#include "report/streams.hpp"

namespace inferprof::report {

class RequestSink {
 public:
  virtual ~RequestSink() = default;
  virtual void set_epoch(Nanos epoch) = 0;
  // On the worker's thread, before the collector's lock: the work that needs
  // no shared state (kept per thread until write).
  virtual void prepare(const RequestRecord&) {}
  // Under the collector's lock, in arrival order, on the thread that prepared
  // it. False: the file does not hold this request (a cap was reached).
  virtual bool write(const RequestRecord& r) = 0;
  // The file's last bytes, then closed: ready to be renamed (Error on a failed write).
  virtual void finish(const RunSummary& summary) = 0;
  virtual TempFile& file() = 0;
};

// requests.csv: one row per request, formatted on the worker's thread.
class RequestsCsvSink final : public RequestSink {
 public:
  RequestsCsvSink(const std::string& dir, const CollectorOptions& options);
  void set_epoch(Nanos epoch) override { epoch_ = epoch; }
  void prepare(const RequestRecord& r) override;
  bool write(const RequestRecord& r) override;
  void finish(const RunSummary& summary) override;
  TempFile& file() override { return file_; }

 private:
  TempFile file_;
  Nanos epoch_;
  bool copies_applicable_;
  std::size_t preprocess_ops_;
};

// trace.json: Chrome trace events of the first requests whose events fit in
// `max_bytes` (0: no cap), so that a viewer can open it; once one does not
// fit, later (smaller) ones are not added either: it holds a contiguous
// prefix of the replay.
class TraceJsonSink final : public RequestSink {
 public:
  TraceJsonSink(const std::string& dir, Nanos epoch, std::uint64_t max_bytes);
  void set_epoch(Nanos epoch) override { trace_.set_epoch(epoch); }
  bool write(const RequestRecord& r) override;
  void finish(const RunSummary& summary) override;
  TempFile& file() override { return file_; }

 private:
  TempFile file_;
  ChromeTraceWriter trace_;
  std::uint64_t max_bytes_;
  std::uint64_t bytes_ = 0;  // events so far
  bool full_ = false;        // the next request's events would pass the cap: no more
  fmt::memory_buffer events_;
};

// The sinks of a collector writing into `dir`: requests.csv, then trace.json.
std::vector<std::unique_ptr<RequestSink>> report_folder_sinks(const std::string& dir, const CollectorOptions& options);

}  // namespace inferprof::report
