// `run --replicas N` as GitHub markdown (--format markdown).
#include "report/render/replicas_parts.hpp"
#include "report/text.hpp"

namespace inferprof {

std::string render_replicas_markdown(const ReplicaSummary& s) {
  using namespace report::replicas_parts;
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

}  // namespace inferprof
