// `run --replicas N` as GitHub markdown (--format markdown).
#include "base/text.hpp"
#include "report/render/replicas_parts.hpp"

namespace inferprof {

std::string render_replicas_markdown(const ReplicaSummary& s) {
  using namespace report::replicas_parts;
  using namespace report;
  std::string out = fmt::format("**{} replicas**, split {}, {} requests{}{}\n\n", s.replicas.size(),
                                markdown_cell(s.split), group_thousands(s.requests), markdown_cell(accounting(s)),
                                s.interrupted_by.empty() ? "" : ", interrupted by " + markdown_cell(s.interrupted_by));
  std::vector<std::vector<std::string>> replicas{
      {"replica", "host", "requests", "lost", "mean", "p50", "p99", "stale", "stalled", "status"}};
  for (const ReplicaResult& r : s.replicas)
    replicas.push_back({std::to_string(r.index), r.host, group_thousands(r.requests), lost_of(r),
                        human_duration_us(r.mean_us), human_duration_us(r.p50_us), human_duration_us(r.p99_us),
                        group_thousands(r.stale_served), group_thousands(r.stalled), r.status});
  out += markdown_table(replicas, {1, 9});
  out += fmt::format("\nSpread across replicas: p50 {}, p99 {}.\n", human_duration_us(s.p50_spread_us),
                     human_duration_us(s.p99_spread_us));
  if (!s.updates.empty()) {
    std::vector<std::vector<std::string>> updates{{"update", "live on", "version skew", "stale", "stalled", "stall"}};
    for (const ReplicaUpdate& u : s.updates)
      updates.push_back({u.version, fmt::format("{}/{}", u.replicas_live, s.replicas.size()), ms(u.skew_ms),
                         group_thousands(u.stale_served), group_thousands(u.stalled), ms(u.stall_ms)});
    out += "\n" + markdown_table(updates, {0});
  }
  return out;
}

}  // namespace inferprof
