// `inferprof sweep` as JSON (--format json, and sweep.json).
#include "base/json.hpp"
#include "inferprof/sweep_result.hpp"
#include "report/render/cache_section.hpp"

namespace inferprof {

namespace {

void write_percentile(report::JsonWriter& w, std::string_view name, const PercentileEstimate& p) {
  w.key(name).begin_object();
  w.field_number("value_us", p.value_us, 3);
  w.field_number("low_us", p.low_us, 3);
  w.field_number("high_us", p.high_us, 3);
  w.end_object();
}

void write_step(report::JsonWriter& w, const SweepStep& s) {
  w.begin_object();
  w.field_number("load", s.load);
  if (s.offered_rps > 0) w.field_number("offered_rps", s.offered_rps, 3);
  w.field_number("achieved_rps", s.achieved_rps, 3);
  w.field("requests", s.requests);
  w.field("failed", s.failed);
  w.field_number("mean_us", s.mean_us, 3);
  write_percentile(w, "p50", s.p50);
  write_percentile(w, "p90", s.p90);
  write_percentile(w, "p99", s.p99);
  w.field_number("queue_share", s.queue_share, 4);
  if (s.cpu) w.field_number("cpu_mean_us", s.cpu_mean_us, 3);
  w.key("stage_mean_us").begin_object();
  for (std::size_t i = 0; i < kStageCount; ++i)
    w.field_number(kStageNames[i], s.stage_mean_us[i], 3);
  w.end_object();
  w.field("saturated", s.saturated);
  w.field("over_slo", s.over_slo);
  w.field("refined", s.refined);
  if (!s.tries_p99_us.empty()) {
    w.key("tries_p99_us").begin_array();
    for (double v : s.tries_p99_us)
      w.number(v, 3);
    w.end_array();
  }
  if (s.model_p99_us > 0) w.field_number("model_p99_us", s.model_p99_us, 3);
  if (s.service_pace > 0) w.field_number("service_pace", s.service_pace, 4);
  w.end_object();
}

}  // namespace

std::string render_sweep_json(const SweepResult& r) {
  report::JsonWriter w;
  w.begin_object();
  w.field("schema", "inferprof.sweep/1");
  w.field("model", r.model_path);
  w.field("trace", r.trace_path);
  w.field("profile", r.profile_name);
  w.field("device", r.device);
  w.field("load", sweep_load_name(r.load));
  w.key("loads").begin_array(true);
  for (double x : r.loads)
    w.number(x);
  w.end_array();
  if (sweep_open_loop(r.load)) w.field("concurrency", r.concurrency);
  if (r.slo_ms > 0) w.field_number("slo_p99_ms", r.slo_ms);
  w.field("trace_requests", r.trace_requests);
  w.field_number("trace_span_s", r.trace_span_s, 3);
  w.field("measure_after", r.measure_after);
  w.field_number("wall_s", r.wall_s, 3);
  w.field_number("replay_s", r.replay_s, 3);
  w.field("interrupted", !r.interrupted_by.empty());
  w.key("configurations").begin_array();
  for (const SweepCurve& c : r.curves) {
    w.begin_object();
    w.field("name", c.name);
    w.field("caches", c.caches.empty() ? c.name : c.caches);
    if (!c.model_path.empty()) w.field("model", c.model_path);
    if (!c.profile.empty()) w.field("profile", c.profile);
    w.field("max_batch", static_cast<std::int64_t>(c.max_batch));
    if (sweep_open_loop(r.load)) w.field("workers", static_cast<std::int64_t>(c.workers));
    w.key("tiers").begin_array(true);
    for (const TierSpec& t : c.tiers)
      w.value(std::string(enum_name(t.tier)) + "=" + report::tier_spec_text(t));
    w.end_array();
    w.field("capacity_found", c.capacity_found);
    if (c.capacity_found) w.field_number("capacity_rps", c.capacity_rps, 3);
    w.field("capacity_at_least", c.capacity_at_edge);
    if (c.modelled) {
      w.key("queueing_model").begin_object();
      w.field("capacity_found", c.model_capacity_found);
      if (c.model_capacity_found) w.field_number("capacity_rps", c.model_capacity_rps, 3);
      w.field("capacity_at_least", c.model_capacity_at_edge);
      // The same at the slowest and fastest pace the steps ran at (0: not met there).
      w.field_number("pace_min", c.model_pace_min, 4);
      w.field_number("pace_max", c.model_pace_max, 4);
      w.field_number("capacity_low_rps", c.model_capacity_low_rps, 3);
      w.field_number("capacity_high_rps", c.model_capacity_high_rps, 3);
      w.field("capacity_low_at_least", c.model_capacity_low_at_edge);
      w.field("capacity_high_at_least", c.model_capacity_high_at_edge);
      w.end_object();
    }
    if (c.knee >= 0) w.field_number("knee_load", c.steps[static_cast<std::size_t>(c.knee)].load);
    w.field("stopped", c.stopped);
    w.key("steps").begin_array();
    for (const SweepStep& s : c.steps)
      write_step(w, s);
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("warnings").begin_array();
  for (const std::string& s : r.warnings)
    w.value(s);
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace inferprof
