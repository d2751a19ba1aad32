// requests.csv: one row per request, streamed by the Collector as requests complete.
#include <iterator>

#include "base/text.hpp"
#include "report/streams.hpp"

namespace inferprof {
namespace report {

namespace {
// Its columns come last, after the ones files from before it had.
constexpr std::size_t kBatchWait = static_cast<std::size_t>(Stage::batch_wait);
}  // namespace

std::string requests_csv_header(bool gpu, const std::vector<std::string>& preprocess_ops) {
  std::string h =
      "seq,id,line,key,worker,arrival_us,start_us,total_us,queue_us,cache_us,load_us,input_us,"
      "preprocess_us,h2d_us,compute_us,d2h_us,overhead_us,cache,ok,error,model_version";
  // GPU runs (copies applicable) add what CUPTI saw; CPU rows keep their shape.
  if (gpu) h += ",kernels,h2d_bytes,d2h_bytes,gpu_idle_us";
  // Thread CPU time, appended so the columns before keep their positions (no queue: it waits).
  h += ",cpu_us";
  for (std::size_t i = 0; i < kStageCount; ++i)
    if (i != static_cast<std::size_t>(Stage::queue) && i != kBatchWait) h += fmt::format(",{}_cpu_us", kStageNames[i]);
  // The preprocess stage's parts, and what decode read (appended, as above).
  for (const std::string& op : preprocess_ops)
    h += fmt::format(",preprocess.{}_us", op);
  for (const std::string& op : preprocess_ops)
    h += fmt::format(",preprocess.{}_cpu_us", op);
  // --max-batch (appended too): the requests in the model run that computed it (0: a result-cache hit), and
  // how long it waited for that run.
  return h + ",image_bytes,image_pixels,batch,batch_wait_us\n";
}

void append_request_row(fmt::memory_buffer& out, const RequestRecord& r, Nanos epoch, bool copies_applicable,
                        std::size_t preprocess_ops) {
  auto it = std::back_inserter(out);
  append_uint(out, r.seq);
  out.push_back(',');
  append_uint(out, r.id);
  out.push_back(',');
  append_uint(out, r.line);
  out.push_back(',');
  append_csv_field(out, r.key);
  out.push_back(',');
  append_uint(out, r.worker);
  out.push_back(',');
  append_us3(out, r.arrival - epoch);
  out.push_back(',');
  append_us3(out, r.start - epoch);
  out.push_back(',');
  append_us3(out, r.total());
  for (std::size_t i = 0; i < kStageCount; ++i) {
    if (i == kBatchWait) continue;  // at the end
    out.push_back(',');
    const bool copy = i == static_cast<std::size_t>(Stage::h2d) || i == static_cast<std::size_t>(Stage::d2h);
    if (copy && !copies_applicable) continue;  // n/a: an empty cell, not 0
    append_us3(out, r.stage[i]);
  }
  out.push_back(',');
  append_csv_field(out, outcome_name(r.cache_outcome));
  out.append(std::string_view(r.ok ? ",true," : ",false,"));
  append_csv_field(out, r.error);
  out.push_back(',');
  append_csv_field(out, r.model_version);
  if (copies_applicable) {
    fmt::format_to(it, ",{},{},{},", r.gpu.kernels, r.gpu.h2d_bytes, r.gpu.d2h_bytes);
    append_us3(out, r.gpu.gpu_idle);
  }
  // Empty cells when the CPU clock was not read, as for n/a copies.
  out.push_back(',');
  if (r.cpu_measured()) append_us3(out, r.cpu_total());
  for (std::size_t i = 0; i < kStageCount; ++i) {
    if (i == static_cast<std::size_t>(Stage::queue) || i == kBatchWait) continue;
    out.push_back(',');
    const bool copy = i == static_cast<std::size_t>(Stage::h2d) || i == static_cast<std::size_t>(Stage::d2h);
    if (!r.cpu_measured() || (copy && !copies_applicable)) continue;
    append_us3(out, r.stage_cpu[i]);
  }
  // A part the request did not run (a cache hit skips preprocessing) is 0, as a stage is.
  auto part = [&](const std::vector<Nanos>& v, std::size_t k) { return k < v.size() ? v[k] : 0; };
  for (std::size_t k = 0; k < preprocess_ops; ++k) {
    out.push_back(',');
    append_us3(out, part(r.preprocess_op, k));
  }
  for (std::size_t k = 0; k < preprocess_ops; ++k) {
    out.push_back(',');
    if (r.cpu_measured()) append_us3(out, part(r.preprocess_op_cpu, k));
  }
  // Empty when nothing was decoded.
  out.push_back(',');
  if (r.image_bytes) append_uint(out, r.image_bytes);
  out.push_back(',');
  if (r.image_pixels) append_uint(out, r.image_pixels);
  out.push_back(',');
  append_uint(out, r.batch);
  out.push_back(',');
  append_us3(out, r.stage[kBatchWait]);
  out.push_back('\n');
}

}  // namespace report

}  // namespace inferprof
