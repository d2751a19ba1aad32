// The policy grid as CSV (policies.csv; --format csv when a simulation has
// only the grid): one row per policy and size.
#include <iterator>

#include "base/text.hpp"
#include "report/render/simulate_parts.hpp"

namespace inferprof {

std::string render_policies_csv(const SimulateResult& r) {
  using namespace report;
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  out.append(std::string_view(
      "tier,policy,size,max_entries,max_bytes,lookups,hits,miss_ratio,requested_bytes,missed_bytes,byte_miss_ratio,"
      "evictions,predicted_mean_us,predicted_speedup,recommended,sample_rate,miss_ratio_error\n"));
  if (!r.grid) return fmt::to_string(out);
  const PolicyGridResult& g = *r.grid;
  for (std::size_t i = 0; i < g.cells.size(); ++i) {
    const GridCell& c = g.cells[i];
    const GridSize& s = g.spec.sizes[c.size];
    fmt::format_to(it, "{},", enum_name(g.spec.tier));
    append_csv_field(out, g.spec.policies[c.policy].label);
    out.push_back(',');
    append_csv_field(out, s.label);
    fmt::format_to(it, ",{},{},{},{},{:.6f},{},{},", s.entries, s.bytes, c.lookups, c.hits, c.miss_ratio,
                   c.requested_bytes, c.missed_bytes);
    if (c.byte_miss_ratio) fmt::format_to(it, "{:.6f}", *c.byte_miss_ratio);
    fmt::format_to(it, ",{},", c.evictions);
    if (c.predicted.available)
      fmt::format_to(it, "{:.3f},{:.4f}", c.predicted.mean_us, c.predicted.speedup);
    else
      out.push_back(',');
    fmt::format_to(it, ",{},{:g},", g.recommendation && g.recommendation->best == i ? "yes" : "", g.sampling.rate);
    if (c.miss_ratio_error) fmt::format_to(it, "{:.6f}", *c.miss_ratio_error);
    out.push_back('\n');
  }
  return fmt::to_string(out);
}

}  // namespace inferprof
