// trace.json: Chrome trace-event format (Perfetto, chrome://tracing). Events
// are written as requests complete; only the lane bookkeeping stays in memory.
#include <algorithm>
#include <iterator>

#include "base/json.hpp"
#include "base/text.hpp"
#include "report/streams.hpp"

namespace inferprof::report {

const std::string& ChromeTraceWriter::json_name(std::uint32_t id) {
  if (id >= json_names_.size()) json_names_.resize(id + 1);
  std::string& s = json_names_[id];
  if (s.empty()) s = json_string(NameTable::global().name(id));
  return s;
}

std::uint32_t ChromeTraceWriter::queue_lane(Nanos start, Nanos end) {
  // Queue waits overlap the previous request on the same worker, so they get
  // their own tracks; first fit keeps the number of tracks small.
  for (std::size_t k = 0; k < lane_end_.size(); ++k) {
    if (lane_end_[k] <= start) {
      lane_end_[k] = end;
      return static_cast<std::uint32_t>(k);
    }
  }
  if (lane_end_.size() < kMaxQueueLanes) {
    lane_end_.push_back(end);
    return static_cast<std::uint32_t>(lane_end_.size() - 1);
  }
  // Out of lanes: overlap is unavoidable; the lane that frees first overlaps least.
  auto k = static_cast<std::size_t>(std::min_element(lane_end_.begin(), lane_end_.end()) - lane_end_.begin());
  lane_end_[k] = std::max(lane_end_[k], end);
  return static_cast<std::uint32_t>(k);
}

void ChromeTraceWriter::begin_event(fmt::memory_buffer& out) {
  if (!first_) out.append(std::string_view(",\n"));
  first_ = false;
}

void ChromeTraceWriter::append(const RequestRecord& r, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  const std::uint32_t tid = r.worker + 1;
  if (r.worker >= workers_.size()) workers_.resize(r.worker + 1, false);
  workers_[r.worker] = true;

  begin_event(out);
  out.append(std::string_view(R"({"name":"request","cat":"request","ph":"X","ts":)"));
  append_us3(out, r.start - epoch_);
  out.append(std::string_view(R"(,"dur":)"));
  append_us3(out, r.end - r.start);
  out.append(std::string_view(R"(,"pid":1,"tid":)"));
  append_uint(out, tid);
  out.append(std::string_view(R"(,"args":{"id":)"));
  append_uint(out, r.id);
  out.append(std::string_view(R"(,"key":)"));
  append_json_string(out, r.key);
  out.append(std::string_view(R"(,"seq":)"));
  append_uint(out, r.seq);
  out.append(std::string_view(R"(,"queue_us":)"));
  append_us3(out, r.stage[static_cast<std::size_t>(Stage::queue)]);
  out.append(std::string_view(R"(,"total_us":)"));
  append_us3(out, r.total());
  out.append(std::string_view(R"(,"cache":)"));
  append_json_string(out, outcome_name(r.cache_outcome));
  if (!r.ok) {
    out.append(std::string_view(R"(,"ok":false,"error":)"));
    append_json_string(out, r.error);
  }
  out.append(std::string_view("}}"));

  for (const Span& span : r.spans) {
    const bool top = span.parent < 0;
    const bool queue = top && span.name == name_id(Stage::queue);
    const std::uint32_t span_tid = queue ? kQueueTidBase + queue_lane(span.start, span.start + span.dur) : tid;
    begin_event(out);
    out.append(std::string_view(R"({"name":)"));
    out.append(json_name(span.name));
    out.append(std::string_view(queue ? R"(,"cat":"queue")" : top ? R"(,"cat":"stage")" : R"(,"cat":"op")"));
    out.append(std::string_view(R"(,"ph":"X","ts":)"));
    append_us3(out, span.start - epoch_);
    out.append(std::string_view(R"(,"dur":)"));
    append_us3(out, span.dur);
    out.append(std::string_view(R"(,"pid":1,"tid":)"));
    append_uint(out, span_tid);
    if (queue) fmt::format_to(it, R"(,"args":{{"id":{},"worker":{}}})", r.id, r.worker);
    out.push_back('}');
  }
}

std::string ChromeTraceWriter::footer(const RunSummary& s) const {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  bool first = first_;
  auto meta = [&](std::uint32_t tid, std::string_view what, const std::string& args) {
    if (!first) out.append(std::string_view(",\n"));
    first = false;
    fmt::format_to(it, R"({{"name":"{}","ph":"M","pid":1,"tid":{},"args":{}}})", what, tid, args);
  };
  meta(0, "process_name", R"({"name":"inferprof"})");
  for (std::size_t w = 0; w < workers_.size(); ++w) {
    if (!workers_[w]) continue;
    const auto tid = static_cast<std::uint32_t>(w + 1);
    meta(tid, "thread_name", fmt::format(R"({{"name":"worker {}"}})", w));
    meta(tid, "thread_sort_index", fmt::format(R"({{"sort_index":{}}})", tid));
  }
  for (std::size_t k = 0; k < lane_end_.size(); ++k) {
    const auto tid = static_cast<std::uint32_t>(kQueueTidBase + k);
    meta(tid, "thread_name", fmt::format(R"({{"name":"queue {}"}})", k));
    meta(tid, "thread_sort_index", fmt::format(R"({{"sort_index":{}}})", tid));
  }
  out.append(std::string_view("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{"));
  fmt::format_to(it, R"("tool":"inferprof","version":)");
  append_json_string(out, s.info.tool_version);
  out.append(std::string_view(R"(,"command":)"));
  append_json_string(out, s.info.command);
  out.append(std::string_view(R"(,"model":)"));
  append_json_string(out, s.info.model_path);
  out.append(std::string_view(R"(,"started_at":)"));
  append_json_string(out, s.info.started_at);
  fmt::format_to(it, R"(,"requests":{},"trace_json_requests":{},"truncated":{}}}}})", s.requests, s.trace_json_requests,
                 s.trace_json_requests < s.requests ? "true" : "false");
  out.push_back('\n');
  return fmt::to_string(out);
}

}  // namespace inferprof::report
