// `run --replicas N` as CSV (--format csv).
#include <fmt/format.h>

#include <iterator>

#include "base/text.hpp"
#include "inferprof/replicas_result.hpp"

namespace inferprof {

// One row per replica, in the units of replicas.json (µs, req/s, ms); the
// update table is in replicas.json.
std::string render_replicas_csv(const ReplicaSummary& s) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  // host and share appended, so the columns before keep their positions (share empty: unknown).
  fmt::format_to(
      it, "replica,status,requests,throughput_rps,mean_us,p50_us,p99_us,stale_served,stalled,stall_ms,host,share\n");
  for (const ReplicaResult& r : s.replicas) {
    fmt::format_to(it, "{},", r.index);
    report::append_csv_field(out, r.status);
    fmt::format_to(it, ",{},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{:.3f},", r.requests, r.throughput_rps, r.mean_us,
                   r.p50_us, r.p99_us, r.stale_served, r.stalled, r.stall_ms);
    report::append_csv_field(out, r.host);
    out.push_back(',');
    if (r.share >= 0) fmt::format_to(it, "{}", r.share);
    out.push_back('\n');
  }
  return fmt::to_string(out);
}

}  // namespace inferprof
