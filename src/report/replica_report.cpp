// `run --replicas N`: the per-replica table, the cross-replica spread and the
// version skew of each update, for people (table, markdown) and machines (json).
#include <fmt/format.h>

#include <iterator>

#include "inferprof/replicas.hpp"
#include "report/json.hpp"
#include "report/text.hpp"

namespace inferprof {

namespace {
std::string ms(double v) {
  return fmt::format("{:.1f} ms", v);
}
}  // namespace

std::string render_replicas_table(const ReplicaSummary& s) {
  using namespace report;
  std::string out =
      fmt::format("inferprof run · {} replicas · split {} · {} requests{}\n\n", s.replicas.size(), s.split,
                  group_thousands(s.requests), s.interrupted_by.empty() ? "" : " · interrupted by " + s.interrupted_by);
  out += pad_right("replica", 9) + pad_left("requests", 10) + pad_left("req/s", 9) + pad_left("mean", 11) +
         pad_left("p50", 11) + pad_left("p99", 11) + pad_left("stale", 7) + pad_left("stalled", 9) + "  status\n";
  for (const ReplicaResult& r : s.replicas)
    out += pad_right(std::to_string(r.index), 9) + pad_left(group_thousands(r.requests), 10) +
           pad_left(fmt::format("{:.0f}", r.throughput_rps), 9) + pad_left(human_duration_us(r.mean_us), 11) +
           pad_left(human_duration_us(r.p50_us), 11) + pad_left(human_duration_us(r.p99_us), 11) +
           pad_left(group_thousands(r.stale_served), 7) + pad_left(group_thousands(r.stalled), 9) + "  " + r.status +
           '\n';
  out += fmt::format("\nspread across replicas: p50 {} · p99 {}\n", human_duration_us(s.p50_spread_us),
                     human_duration_us(s.p99_spread_us));
  if (!s.updates.empty()) {
    out += '\n' + pad_right("update", 12) + pad_left("live on", 9) + pad_left("version skew", 14) +
           pad_left("stale", 8) + pad_left("stalled", 9) + pad_left("stall", 11) + '\n';
    for (const ReplicaUpdate& u : s.updates)
      out += pad_right(u.version, 12) + pad_left(fmt::format("{}/{}", u.replicas_live, s.replicas.size()), 9) +
             pad_left(ms(u.skew_ms), 14) + pad_left(group_thousands(u.stale_served), 8) +
             pad_left(group_thousands(u.stalled), 9) + pad_left(ms(u.stall_ms), 11) + '\n';
  }
  for (const ReplicaResult& r : s.replicas)
    if (!r.log_tail.empty()) out += fmt::format("\nreplica {} ({}), last output:\n{}", r.index, r.status, r.log_tail);
  return out;
}

std::string render_replicas_markdown(const ReplicaSummary& s) {
  using namespace report;
  std::string out =
      fmt::format("**{} replicas**, split {}, {} requests{}\n\n", s.replicas.size(), s.split,
                  group_thousands(s.requests), s.interrupted_by.empty() ? "" : ", interrupted by " + s.interrupted_by);
  out +=
      "| replica | requests | mean | p50 | p99 | stale | stalled | status "
      "|\n|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const ReplicaResult& r : s.replicas)
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", r.index, group_thousands(r.requests),
                       human_duration_us(r.mean_us), human_duration_us(r.p50_us), human_duration_us(r.p99_us),
                       group_thousands(r.stale_served), group_thousands(r.stalled), r.status);
  out += fmt::format("\nSpread across replicas: p50 {}, p99 {}.\n", human_duration_us(s.p50_spread_us),
                     human_duration_us(s.p99_spread_us));
  if (!s.updates.empty()) {
    out += "\n| update | live on | version skew | stale | stalled | stall |\n|---|---:|---:|---:|---:|---:|\n";
    for (const ReplicaUpdate& u : s.updates)
      out += fmt::format("| {} | {}/{} | {} | {} | {} | {} |\n", u.version, u.replicas_live, s.replicas.size(),
                         ms(u.skew_ms), group_thousands(u.stale_served), group_thousands(u.stalled), ms(u.stall_ms));
  }
  return out;
}

// One row per replica, in the units of replicas.json (µs, req/s, ms); the
// update table is in replicas.json.
std::string render_replicas_csv(const ReplicaSummary& s) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "replica,status,requests,throughput_rps,mean_us,p50_us,p99_us,stale_served,stalled,stall_ms\n");
  for (const ReplicaResult& r : s.replicas) {
    fmt::format_to(it, "{},", r.index);
    report::append_csv_field(out, r.status);
    fmt::format_to(it, ",{},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{:.3f}\n", r.requests, r.throughput_rps, r.mean_us,
                   r.p50_us, r.p99_us, r.stale_served, r.stalled, r.stall_ms);
  }
  return fmt::to_string(out);
}

std::string render_replicas_json(const ReplicaSummary& s) {
  report::JsonWriter w;
  w.begin_object();
  w.field("schema", "inferprof.replicas/1");
  w.field("split", s.split);
  w.field("requests", s.requests);
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
    w.field("requests", r.requests);
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
