// A run as JSON (--format json, and summary.json): the machine-readable
// summary `diff` and dashboards read. Each section is its own function so
// later fields slot in as one more.
#include "base/json.hpp"
#include "base/text.hpp"
#include "report/render/cache_section.hpp"
#include "report/render/gpu_section.hpp"
#include "report/render/update_section.hpp"

namespace inferprof {
namespace report {
namespace {

void write_warmup(JsonWriter& w, const RunInfo& info) {
  const auto& lat = info.warmup_us;
  w.key("warmup").begin_object();
  w.field("iterations", info.warmup);
  w.field("request", info.warmup_from);
  w.key("cold_first_us");
  if (lat.empty())
    w.null();
  else
    w.number(lat[0], 3);
  w.key("mean_us");
  if (lat.size() < 2) {
    w.null();
  } else {
    double sum = 0;
    for (std::size_t i = 1; i < lat.size(); ++i)
      sum += lat[i];
    w.number(sum / static_cast<double>(lat.size() - 1), 3);
  }
  w.key("latencies_us").begin_array(true);
  for (double v : lat)
    w.number(v, 3);
  w.end_array();
  w.end_object();
}

void write_run(JsonWriter& w, const RunInfo& info) {
  w.key("run").begin_object();
  w.field("command", info.command);
  w.field("tool_version", info.tool_version);
  w.field("libtorch_version", info.libtorch_version);
  w.field("hostname", info.hostname);
  w.field("cpu_model", info.cpu_model);
  w.field("cpu_cores", info.cpu_cores);
  w.field("started_at", info.started_at);
  w.field_number("epoch_unix_ms", info.epoch_unix_ms, 3);
  // A merged run keeps the group's count and sharding, with index -1.
  if (info.replica.index >= 0 || info.replica.count > 0)
    w.key("replica")
        .begin_object()
        .field("index", static_cast<std::int64_t>(info.replica.index))
        .field("count", static_cast<std::int64_t>(info.replica.count))
        .field("shard_by", info.replica.shard_by)
        .field("group", info.replica.group)
        .end_object();
  if (info.merged_from > 0) w.field("merged_from", static_cast<std::int64_t>(info.merged_from));
  if (info.speed_before.measured() && info.speed_after.measured()) {
    w.key("speed_probe").begin_object();
    for (const auto& [name, probe] : {std::pair{"before", info.speed_before}, std::pair{"after", info.speed_after}})
      w.key(name)
          .begin_object()
          .field_number("compute_us", probe.compute_us, 1)
          .field_number("memory_us", probe.memory_us, 1)
          .end_object();
    w.end_object();
  }
  w.field("model_path", info.model_path);
  w.field("model_version", info.model_version);
  w.field("model_hash", info.model_hash);
  w.field("model_sha256", info.model_sha256);
  w.field("model_arch", info.model_arch);
  w.field("model_parameters", info.model_parameters);
  w.field("model_bytes", info.model_bytes);
  w.field("profile_name", info.profile_name);
  w.field("profile_source", info.profile_source);
  w.field("trace_path", info.trace_path);
  w.field("trace_bytes", info.trace_bytes);
  w.field("trace_hash", info.trace_hash);
  w.field("device", info.device);
  w.field("copies_applicable", info.copies_applicable);
  w.field("threads", info.threads);
  w.field("concurrency", info.concurrency);
  w.field("mode", info.mode);
  if (!info.driver.empty()) w.field("driver", info.driver);
  w.field_number("speed", info.speed);
  w.field_number("poisson_rps", info.poisson_rps);  // 0: arrivals at the trace's ts_ms
  w.field("limit", info.limit);
  w.field("ops", info.ops);
  w.field("max_batch", static_cast<std::int64_t>(info.max_batch));
  w.field_number("batch_delay_us", info.batch_delay_us, 3);
  w.field_number("load_ms", info.load_ms, 3);
  write_warmup(w, info);
  w.field_number("wall_s", info.wall_s, 6);
  w.key("skipped").begin_object();
  w.field("invalid", info.skipped_invalid);
  w.key("examples").begin_array();
  for (const auto& e : info.skipped_examples)
    w.value(e);
  w.end_array();
  w.end_object();
  w.field_number("peak_rss_mb", info.peak_rss_mb, 3);
  w.key("warnings").begin_array();
  for (const auto& e : info.warnings)
    w.value(e);
  w.end_array();
  w.end_object();
}

void write_stage_fields(JsonWriter& w, const StageStats& s) {
  w.field("count", s.count);
  w.field_number("mean_us", s.mean_us, 3);
  w.field_number("p50_us", s.p50_us, 3);
  w.field_number("p90_us", s.p90_us, 3);
  w.field_number("p99_us", s.p99_us, 3);
  w.field_number("max_us", s.max_us, 3);
  w.field_number("min_us", s.min_us, 3);
  w.field_number("total_us", s.total_us, 3);
  w.field_number("share", s.share, 6);
  if (s.cpu) {  // thread CPU time (absent for queue: waiting uses none)
    w.field_number("cpu_mean_us", s.cpu_mean_us, 3);
    w.field_number("cpu_p50_us", s.cpu_p50_us, 3);
    w.field_number("cpu_p99_us", s.cpu_p99_us, 3);
    w.field_number("off_cpu", s.off_cpu, 6);
  }
}

void write_stage(JsonWriter& w, std::string_view name, const StageStats& s, const std::vector<StagePart>& parts = {}) {
  w.key(name).begin_object();
  if (!s.applicable) {
    w.field("applicable", false);
    w.end_object();
    return;
  }
  write_stage_fields(w, s);
  // The stage's parts (preprocessing ops), each with a stage's fields, under the op's name.
  if (!parts.empty()) {
    w.key("ops").begin_object();
    for (const StagePart& part : parts) {
      w.key(std::string_view(part.name).substr(part.name.find('.') + 1)).begin_object();
      write_stage_fields(w, part.stats);
      w.end_object();
    }
    w.end_object();
  }
  w.end_object();
}

// --max-batch: null without a batcher; batches_by_size[k - 1] holds the batches of k requests.
void write_batching_json(JsonWriter& w, const BatchingStats& b) {
  w.key("batching");
  if (!b.enabled) {
    w.null();
    return;
  }
  w.begin_object();
  w.field("computed", b.computed);
  w.field("batches", b.batches);
  w.field_number("mean_size", b.mean_size(), 4);
  w.key("batches_by_size").begin_array(true);
  for (std::size_t k = 1; k < b.of_size.size(); ++k)
    w.value(b.of_size[k]);
  w.end_array();
  w.end_object();
}

void write_ops(JsonWriter& w, const std::vector<OpStats>& ops) {
  w.key("top_ops").begin_array();
  for (const auto& op : ops) {
    w.begin_object();
    w.field("name", op.name);
    w.field("calls", op.calls);
    w.field_number("self_us", op.self_us, 3);
    w.field_number("total_us", op.total_us, 3);
    w.field_number("share_of_compute", op.share_of_compute, 6);
    w.end_object();
  }
  w.end_array();
}

}  // namespace
}  // namespace report

std::string render_summary_json(const RunSummary& s) {
  report::JsonWriter w;
  w.begin_object();
  w.field("schema", "inferprof.summary/1");
  w.key("tool").begin_object().field("name", "inferprof").field("version", s.info.tool_version).end_object();
  report::write_run(w, s.info);
  w.field("requests", s.requests);
  // CPU sampling (docs/reports.md): the cpu_* figures are over `requests` of them, 1 in `every`.
  w.key("cpu_sample")
      .begin_object()
      .field("every", static_cast<std::uint64_t>(s.info.cpu_sample_every))
      .field("requests", s.cpu_requests)
      .field_number("clock_read_ns", s.info.cpu_clock_read_ns, 1)
      .field("clock", s.info.cpu_clock)
      .end_object();
  // Stopped by SIGINT/SIGTERM: every figure covers the requests that completed.
  w.field("interrupted", s.info.interrupted());
  if (s.info.interrupted()) w.field("interrupted_by", s.info.interrupted_by);
  w.field("failed", s.failed);
  w.key("failed_examples").begin_array();
  for (const auto& e : s.failed_examples)
    w.value(e);
  w.end_array();
  w.field_number("throughput_rps", s.throughput_rps, 3);
  w.field_number("wall_s", s.info.wall_s, 6);
  w.key("stages").begin_object();
  for (std::size_t i = 0; i < kStageCount; ++i)
    report::write_stage(w, kStageNames[i], s.stages[i],
                        i == static_cast<std::size_t>(Stage::preprocess) ? s.preprocess_ops : std::vector<StagePart>{});
  w.end_object();
  report::write_stage(w, "total", s.total);
  report::write_ops(w, s.top_ops);
  report::write_cache_json(w, s);
  report::write_batching_json(w, s.batching);
  report::write_updates_json(w, s);
  report::write_gpu_json(w, s);
  w.key("reports").begin_object();
  w.field("trace_json_requests", s.trace_json_requests);
  w.field("trace_json_max_bytes", s.trace_json_max_bytes);
  w.field("trace_json_truncated", s.trace_json_requests < s.requests);
  w.field("spans", s.spans);
  w.field("csv_rows", s.csv_rows);
  w.end_object();
  w.end_object();
  return w.str();
}

}  // namespace inferprof
