// The miss-ratio curves of a simulation as CSV (mrc.csv): one row per capacity of each curve.
#include <iterator>

#include "base/text.hpp"
#include "inferprof/simulate_result.hpp"

namespace inferprof {

std::string render_mrc_csv(const SimulateResult& r) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  out.append(std::string_view("tier,policy,ttl_s,capacity,hit_ratio,miss_ratio,predicted_mean_us,sample_rate\n"));
  for (const auto& m : r.mrc)
    for (const auto& p : m.points) {
      fmt::format_to(it, "{},{},{:g},{},{:.6f},{:.6f},", enum_name(m.spec.tier), policy_name(m.spec.policy),
                     m.spec.ttl_s, p.capacity, p.hit_ratio, 1 - p.hit_ratio);
      if (p.predicted_mean_us) fmt::format_to(it, "{:.3f}", *p.predicted_mean_us);
      fmt::format_to(it, ",{:g}\n", m.sample_rate);
    }
  return fmt::to_string(out);
}

}  // namespace inferprof
