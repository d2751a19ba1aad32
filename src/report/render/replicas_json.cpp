// `run --replicas N` as JSON (--format json, and replicas.json).
#include "base/json.hpp"
#include "inferprof/replicas_result.hpp"

namespace inferprof {

std::string render_replicas_json(const ReplicaSummary& s) {
  report::JsonWriter w;
  w.begin_object();
  w.field("schema", "inferprof.replicas/1");
  w.field("split", s.split);
  w.field("requests", s.requests);
  if (s.lost >= 0)
    w.field("lost", static_cast<std::uint64_t>(s.lost));
  else
    w.key("lost").null();
  w.field("duplicated", s.duplicated);
  w.field("failed", static_cast<std::uint64_t>(s.failed));
  w.field("interrupted", !s.interrupted_by.empty());
  if (!s.interrupted_by.empty()) w.field("interrupted_by", s.interrupted_by);
  w.field_number("p50_spread_us", s.p50_spread_us, 3);
  w.field_number("p99_spread_us", s.p99_spread_us, 3);
  w.key("replicas").begin_array();
  for (const ReplicaResult& r : s.replicas) {
    w.begin_object();
    w.field("index", r.index);
    w.field("pid", r.pid);  // to find what a replica left (its log, a private folder named by PID)
    w.field("status", r.status);
    w.field("host", r.host);
    w.field("dir", r.dir);
    w.field("requests", r.requests);
    if (r.share >= 0)
      w.field("share", static_cast<std::uint64_t>(r.share));
    else
      w.key("share").null();
    w.field_number("throughput_rps", r.throughput_rps, 3);
    w.field_number("mean_us", r.mean_us, 3);
    w.field_number("p50_us", r.p50_us, 3);
    w.field_number("p99_us", r.p99_us, 3);
    w.field("stale_served", r.stale_served);
    w.field("stalled", r.stalled);
    w.field_number("stall_ms", r.stall_ms, 3);
    w.field("log_tail", r.log_tail);
    w.end_object();
  }
  w.end_array();
  w.key("updates").begin_array();
  for (const ReplicaUpdate& u : s.updates) {
    w.begin_object();
    w.field("version", u.version);
    w.field("replicas_live", u.replicas_live);
    w.field_number("skew_ms", u.skew_ms, 3);
    w.field("stale_served", u.stale_served);
    w.field("stalled", u.stalled);
    w.field_number("stall_ms", u.stall_ms, 3);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace inferprof
