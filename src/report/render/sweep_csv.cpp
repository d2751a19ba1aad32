// `inferprof sweep` as CSV (--format csv, and sweep.csv): one row per
// (configuration, step), times in µs, each stage's mean per request.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "base/text.hpp"
#include "inferprof/sweep_result.hpp"

namespace inferprof {

std::string render_sweep_csv(const SweepResult& r) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(
      it,
      "caches,{},offered_rps,achieved_rps,requests,failed,mean_us,p50_us,p50_low_us,p50_high_us,p90_us,"
      "p90_low_us,p90_high_us,p99_us,p99_low_us,p99_high_us,queue_share,cpu_mean_us,saturated,over_slo,refined",
      sweep_load_name(r.load));
  for (std::string_view stage : kStageNames)
    fmt::format_to(it, ",{}_mean_us", stage);
  fmt::format_to(it, ",model_p99_us,workers,max_batch,tries,service_pace\n");
  for (const SweepCurve& c : r.curves)
    for (const SweepStep& s : c.steps) {
      report::append_csv_field(out, c.name);
      fmt::format_to(it, ",{:g},{:.3f},{:.3f},{},{},{:.3f}", s.load, s.offered_rps, s.achieved_rps, s.requests,
                     s.failed, s.mean_us);
      for (const PercentileEstimate* p : {&s.p50, &s.p90, &s.p99})
        fmt::format_to(it, ",{:.3f},{:.3f},{:.3f}", p->value_us, p->low_us, p->high_us);
      fmt::format_to(it, ",{:.4f},", s.queue_share);
      if (s.cpu) fmt::format_to(it, "{:.3f}", s.cpu_mean_us);
      fmt::format_to(it, ",{},{},{}", s.saturated ? 1 : 0, s.over_slo ? 1 : 0, s.refined ? 1 : 0);
      for (double us : s.stage_mean_us)
        fmt::format_to(it, ",{:.3f}", us);
      fmt::format_to(it, ",");
      if (s.model_p99_us > 0) fmt::format_to(it, "{:.3f}", s.model_p99_us);
      // A concurrency step's workers are its load.
      fmt::format_to(it, ",{:g},{},{},", sweep_open_loop(r.load) ? c.workers : s.load, c.max_batch,
                     std::max<std::size_t>(1, s.tries_p99_us.size()));
      if (s.service_pace > 0) fmt::format_to(it, "{:.4f}", s.service_pace);
      fmt::format_to(it, "\n");
    }
  return fmt::to_string(out);
}

}  // namespace inferprof
