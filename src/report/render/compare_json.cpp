// A comparison as JSON (--format json, and compare.json).
#include "base/json.hpp"
#include "report/render/cache_section.hpp"
#include "report/render/compare_parts.hpp"

namespace inferprof {
namespace report {
namespace {

void json_speedup(JsonWriter& w, std::string_view key, const Speedup& s) {
  w.key(key).begin_object();
  w.field_number("value", s.value, 4);
  w.field_number("low", s.low, 4);
  w.field_number("high", s.high, 4);
  w.field("noise", s.noise);
  w.end_object();
}

// Configuration i's speedups: this trace (with its verdict and classes), the
// traffic-like and CPU ones, and the wall one.
void json_speedups(JsonWriter& w, const CompareResult& r, std::size_t i) {
  const CompareRow& row = r.rows[i];
  json_speedup(w, "speedup", row.mean_speedup);
  w.field("verdict", std::string(compare_parts::verdict_of(r, i)));
  if (r.paced && row.unpaced_speedup > 0) w.field_number("unpaced_speedup", row.unpaced_speedup, 4);
  json_speedup(w, "traffic_speedup", row.traffic_speedup);
  if (row.last.total.cpu) json_speedup(w, "cpu_speedup", row.cpu_speedup);
  if (r.mode == CompareMode::lockstep && i > 0) {
    w.key("interval_classes").begin_object();
    w.field("classes", static_cast<std::uint64_t>(row.interval_facts.classes));
    w.field("singletons", static_cast<std::uint64_t>(row.interval_facts.singletons));
    w.field("inputs_ignored", row.interval_facts.inputs_ignored);
    w.field("passes", static_cast<std::uint64_t>(row.interval_facts.passes));
    w.field("between_passes", row.interval_facts.between_passes);
    w.field("pass_processes", std::string(enum_name(r.pass_process)));
    w.end_object();
    w.key("rerun").begin_object();  // where a rerun of this compare reads (95%)
    w.field_number("low", row.rerun_speedup.low, 4);
    w.field_number("high", row.rerun_speedup.high, 4);
    w.end_object();
  }
  json_speedup(w, "wall_speedup", row.wall_speedup);
}

// Configuration i's figures (its caches, served_by and verify follow).
void json_configuration(JsonWriter& w, const CompareResult& r, std::size_t i) {
  const CompareRow& row = r.rows[i];
  w.field("name", row.name);
  w.field("folder", row.folder);
  w.field("model", row.last.info.model_path);
  w.field("model_sha256", row.last.info.model_sha256);
  w.field("profile", row.last.info.profile_name);
  w.key("tiers").begin_array();
  for (const TierSpec& t : row.tiers) {
    // Never the location: a Redis URL may hold a password. caches[].where says where.
    w.begin_object();
    w.field("tier", enum_name(t.tier));
    w.field("policy", std::string(policy_name(t.policy)));
    w.field("max_entries", t.max_entries);
    w.field("max_bytes", t.max_bytes);
    w.field_number("ttl_s", t.ttl_s);
    w.field("backend", enum_name(t.backend));
    w.field("spec", tier_spec_text(t));
    w.end_object();
  }
  w.end_array();
  w.field("requests", row.last.requests);
  w.field("failed", row.last.failed);
  w.field_number("mean_us", row.mean_us, 3);
  if (row.last.total.cpu) w.field_number("cpu_mean_us", row.last.total.cpu_mean_us, 3);
  w.field_number("p50_us", row.p50_us, 3);
  w.field_number("p99_us", row.p99_us, 3);
  w.field_number("rps", row.rps, 3);
  w.field_number("wall_s", row.wall_s, 6);
  w.key("means_us").begin_array(true);
  for (double v : row.means_us)
    w.number(v, 3);
  w.end_array();
  w.key("walls_s").begin_array(true);
  for (double v : row.walls_s)
    w.number(v, 6);
  w.end_array();
  json_speedups(w, r, i);
  w.field("outliers_dominate", row.outliers_dominate);
  // Mean µs of the requests each outcome served: a tier's hit cost against the miss cost.
  w.key("outcome_costs").begin_object();
  for (const OutcomeStats& o : row.outcome_costs) {
    w.key(outcome_name(o.outcome)).begin_object();
    w.field("count", o.count);
    w.field_number("mean_us", o.mean_us, 3);
    w.end_object();
  }
  w.end_object();
}

// --gate: each gate on each configuration against the baseline.
void json_gates(JsonWriter& w, const CompareResult& r) {
  w.key("gates").begin_array();
  for (const CompareGate& g : r.gates) {
    w.begin_object();
    w.field("configuration", g.configuration);
    w.field("gate", g.gate);
    w.field("stage", g.stage);
    w.field("clock", g.clock);
    w.field_number("base_us", g.change.base, 3);
    w.field_number("now_us", g.change.now, 3);
    if (g.change.interval) {
      w.field_number("delta_low_us", g.change.interval->first, 3);
      w.field_number("delta_high_us", g.change.interval->second, 3);
    }
    w.field_number("limit_us", g.limit, 3);
    w.field("verdict", std::string(verdict_name(g.verdict)));
    w.end_object();
  }
  w.end_array();
}

}  // namespace
}  // namespace report

std::string render_compare_json(const CompareResult& r) {
  using namespace report;
  using namespace report::compare_parts;
  JsonWriter w;
  w.begin_object();
  w.field("schema", "inferprof.compare/1");
  w.field("repeat", r.repeat);
  w.field("mode", std::string(compare_mode_name(r.mode)));
  w.field("interval", r.interval);
  if (!r.traffic_interval.empty()) w.field("traffic_interval", r.traffic_interval);
  if (r.precision_pct) {
    w.key("precision").begin_object();
    w.field_number("target_pct", *r.precision_pct, 3);
    w.field("reached", r.precision_reached);
    w.field("passes", r.repeat);
    w.field_number("widest_half_width_pct", 100 * r.widest_half_width, 3);
    w.field("widest", r.widest_config);
    w.end_object();
  }
  if (r.mode == CompareMode::lockstep) {
    w.field("paired_requests", r.paired);
    // Where the passes ran: each pass's process (--pass-process fresh: one each).
    w.field("pass_processes", std::string(enum_name(r.pass_process)));
    w.key("pass_pids").begin_array(true);
    for (const std::int64_t pid : r.pass_pids)
      w.value(pid);
    w.end_array();
  }
  if (r.paced) {
    w.key("pace").begin_object();
    w.field("window", static_cast<std::uint64_t>(r.pace_window));
    w.field_number("min", r.pace_min, 4);
    w.field_number("max", r.pace_max, 4);
    w.end_object();
  }
  w.field("varies", r.varies);
  w.field("baseline", r.rows.empty() ? std::string() : r.rows[0].name);
  w.key("configurations").begin_array();
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const CompareRow& row = r.rows[i];
    w.begin_object();
    json_configuration(w, r, i);
    write_cache_json(w, row.last);  // "caches", "served_by", "verify"
    w.end_object();
  }
  w.end_array();
  w.key("warnings").begin_array();
  for (const std::string& warning : notes_of(r).warnings)
    w.value(warning);
  w.end_array();
  w.field("verify_mismatches", r.verify_mismatches);
  json_gates(w, r);  // --gate: each gate on each configuration
  w.field("gate_exit_code", r.gate_exit_code());
  // An interrupt keeps the configurations that completed; the others are named.
  w.field("interrupted", !r.interrupted_by.empty());
  if (!r.interrupted_by.empty()) w.field("interrupted_by", r.interrupted_by);
  w.key("not_run").begin_array();
  for (const std::string& name : r.not_run)
    w.value(name);
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace inferprof
