// A simulation as CSV (--format csv, and simulate.csv): one row per tier of each configuration
// (or, with only --policies, the policy grid's rows).
#include <iterator>

#include "base/text.hpp"
#include "report/render/cache_section.hpp"
#include "report/render/simulate_parts.hpp"

namespace inferprof {

std::string render_simulate_csv(const SimulateResult& r) {
  using namespace report;
  using namespace report::simulate_parts;
  if (r.configurations.empty() && r.grid) return render_policies_csv(r);
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  out.append(
      std::string_view("config,tier,spec,lookups,hits,misses,hit_ratio,miss_ratio,inserts,evictions,expirations,"
                       "rejected,entries,bytes,predicted_mean_us,predicted_p99_us,predicted_speedup\n"));
  for (const auto& c : r.configurations)
    for (const auto& t : c.tiers) {
      append_csv_field(out, c.name);
      fmt::format_to(it, ",{},", enum_name(t.spec.tier));
      append_csv_field(out, tier_spec_text(t.spec));
      fmt::format_to(it, ",{},{},{},{:.6f},{:.6f},{},{},{},{},{},{},", t.lookups, t.hits, t.misses,
                     ratio_value(t.hits, t.lookups), ratio_value(t.misses, t.lookups), t.inserts, t.evictions,
                     t.expirations, t.rejected, t.entries, t.bytes);
      if (c.predicted.available) {
        fmt::format_to(it, "{:.3f},", c.predicted.mean_us);
        if (c.predicted.p99_us) fmt::format_to(it, "{:.3f}", *c.predicted.p99_us);
        fmt::format_to(it, ",{:.4f}", c.predicted.speedup);
      } else {
        out.append(std::string_view(",,"));
      }
      out.push_back('\n');
    }
  return fmt::to_string(out);
}

}  // namespace inferprof
