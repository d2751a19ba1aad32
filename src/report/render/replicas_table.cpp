// `run --replicas N` as the terminal table (--format table): the per-replica
// table, the cross-replica spread and the version skew of each update.
#include <algorithm>

#include "base/text.hpp"
#include "report/render/replicas_parts.hpp"

namespace inferprof {

std::string render_replicas_table(const ReplicaSummary& s) {
  using namespace report::replicas_parts;
  using namespace report;
  std::string out = fmt::format("inferprof run · {} replicas · split {} · {} requests{}{}\n\n", s.replicas.size(),
                                s.split, group_thousands(s.requests), accounting(s),
                                s.interrupted_by.empty() ? "" : " · interrupted by " + s.interrupted_by);
  const bool hosts = std::any_of(s.replicas.begin(), s.replicas.end(), [](const auto& r) { return !r.host.empty(); });
  out += pad_right("replica", 9) + (hosts ? pad_right("host", 14) : "") + pad_left("requests", 10) +
         pad_left("lost", 7) + pad_left("req/s", 9) + pad_left("mean", 11) + pad_left("p50", 11) + pad_left("p99", 11) +
         pad_left("stale", 7) + pad_left("stalled", 9) + "  status\n";
  for (const ReplicaResult& r : s.replicas)
    out += pad_right(std::to_string(r.index), 9) + (hosts ? pad_right(truncate_display(r.host, 13), 14) : "") +
           pad_left(group_thousands(r.requests), 10) + pad_left(lost_of(r), 7) +
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

}  // namespace inferprof
