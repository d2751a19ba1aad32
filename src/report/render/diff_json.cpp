// A diff as JSON (--format json), for dashboards.
#include "base/json.hpp"
#include "inferprof/diff_result.hpp"

namespace inferprof {

std::string render_diff_json(const DiffResult& r) {
  report::JsonWriter w;
  w.begin_object();
  w.field("schema", "inferprof.diff/1");
  w.field("verdict", r.failed() ? "regression" : r.unstable > 0 ? "unstable" : "ok");
  w.field("exit_code", r.exit_code());
  w.field("base", r.base[0].summary_path);  // the first run of each side
  w.field("new", r.now[0].summary_path);
  for (const auto& [key, runs] : {std::pair{"base_runs", &r.base}, std::pair{"new_runs", &r.now}}) {
    w.key(key).begin_array();
    for (const auto& d : *runs)
      w.value(d.summary_path);
    w.end_array();
  }
  w.field("gates", r.gated);
  w.field("regressions", r.regressions);
  w.field("noise", r.noise);
  w.field("improved", r.improved);
  w.field("unstable", r.unstable);
  w.field_number("confidence", r.confidence);
  w.field("intervals", r.intervals);
  w.field("method", r.method);
  w.field("resamples", r.resamples);
  w.field("intervals_note", r.intervals_note);
  // The machine's speed on each side (docs/diff-and-ci.md); null when a run has no probe.
  w.key("speed_probe").begin_object();
  for (const auto& [key, value] : {std::pair{"base_us", r.base_probe_us}, std::pair{"new_us", r.new_probe_us},
                                   std::pair{"slowdown", r.machine_slowdown}}) {
    w.key(key);
    if (value)
      w.number(*value, 4);
    else
      w.null();
  }
  w.end_object();
  w.key("forced_mismatches").begin_array();
  for (const auto& m : r.mismatches)
    w.value(m);
  w.end_array();
  w.key("notes").begin_array();
  for (const auto& n : r.notes)
    w.value(n);
  w.end_array();
  w.key("rows").begin_array();
  for (const DiffRow& row : r.rows) {
    w.begin_object();
    w.field("stage", row.stage);
    w.field("clock", row.clock);
    w.field("metric", row.metric);
    w.field("unit", row.unit);
    w.field_number("base", row.change.base, 6);
    w.field_number("new", row.change.now, 6);
    w.field_number("change", row.change.delta(), 6);
    w.key("change_pct");
    if (row.change.base != 0)
      w.number(row.change.pct(), 3);
    else
      w.null();
    w.key("interval");
    if (row.change.interval)
      w.begin_array(true).number(row.change.interval->first, 6).number(row.change.interval->second, 6).end_array();
    else
      w.null();
    w.key("interval_pct");
    if (row.relative)
      w.begin_array(true).number(row.relative->first * 100, 3).number(row.relative->second * 100, 3).end_array();
    else
      w.null();
    for (const auto& [key, runs] : {std::pair{"base_runs", &row.base_runs}, std::pair{"new_runs", &row.new_runs}}) {
      w.key(key).begin_array(true);
      for (double v : *runs)
        w.number(v, 6);
      w.end_array();
    }
    for (const auto& [key, spread] :
         {std::pair{"base_spread_pct", &row.base_spread}, std::pair{"new_spread_pct", &row.new_spread}}) {
      w.key(key);
      if (*spread)
        w.number(**spread * 100, 3);
      else
        w.null();
    }
    w.key("gate");
    if (row.gate.empty())
      w.null();
    else
      w.value(row.gate);
    w.key("limit");
    if (row.gate.empty())
      w.null();
    else
      w.number(row.limit, 6);
    w.field("verdict", row.verdict == Verdict::none ? std::string("none") : std::string(verdict_name(row.verdict)));
    if (!row.note.empty()) w.field("note", row.note);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace inferprof
