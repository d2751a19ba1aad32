// A comparison as CSV (--format csv, and compare.csv): one row per configuration.
#include <algorithm>
#include <cmath>
#include <iterator>

#include "base/text.hpp"
#include "report/render/compare_parts.hpp"

namespace inferprof {
namespace report {
namespace {

void csv_number(fmt::memory_buffer& out, double v, int decimals) {
  out.push_back(',');
  if (std::isfinite(v)) fmt::format_to(std::back_inserter(out), "{:.{}f}", v, decimals);
}

}  // namespace
}  // namespace report

std::string render_compare_csv(const CompareResult& r) {
  using namespace report;
  using namespace report::compare_parts;
  fmt::memory_buffer out;
  out.append(std::string_view(
      "config,repeats,mean_us,p50_us,p99_us,rps,wall_s,speedup,speedup_low,speedup_high,wall_speedup,"
      "wall_speedup_low,wall_speedup_high,noise,l1_hit_ratio,l2_hit_ratio,l3_hit_ratio,l1_bytes,l2_bytes,l3_bytes,"
      "errors,mode,l1_hit_us,l2_hit_us,l3_hit_us,miss_us,verdict,traffic_speedup,traffic_speedup_low,"
      "traffic_speedup_high,cpu_speedup,cpu_speedup_low,cpu_speedup_high,model,profile,rerun_low,rerun_high\n"));
  auto it = std::back_inserter(out);
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const CompareRow& row = r.rows[i];
    append_csv_field(out, row.name);
    const std::size_t repeats =
        row.means_us.empty() ? static_cast<std::size_t>(std::max(r.repeat, 0)) : row.means_us.size();
    fmt::format_to(it, ",{}", repeats);
    csv_number(out, row.mean_us, 3);
    csv_number(out, row.p50_us, 3);
    csv_number(out, row.p99_us, 3);
    csv_number(out, row.rps, 3);
    csv_number(out, row.wall_s, 6);
    for (const Speedup* s : {&row.mean_speedup, &row.wall_speedup}) {
      csv_number(out, s->value, 4);
      csv_number(out, s->low, 4);
      csv_number(out, s->high, 4);
    }
    fmt::format_to(it, ",{}", row.mean_speedup.noise ? "true" : "false");
    // Empty cells for tiers the configuration does not have, and for a
    // ratio without lookups.
    for (std::string_view tier : kTiers) {
      out.push_back(',');
      const CacheTierReport* t = find_tier(row, tier);
      if (t && t->stats.lookups > 0)
        fmt::format_to(it, "{:.6f}", static_cast<double>(t->stats.hits) / static_cast<double>(t->stats.lookups));
    }
    for (std::string_view tier : kTiers) {
      out.push_back(',');
      if (const CacheTierReport* t = find_tier(row, tier)) fmt::format_to(it, "{}", t->stats.bytes);
    }
    // Backend errors of all tiers (each fell through to compute).
    std::uint64_t errors = 0;
    for (const CacheTierReport& t : row.last.caches)
      errors += t.stats.errors;
    fmt::format_to(it, ",{},{}", errors, compare_mode_name(r.mode));
    // Mean µs of the requests each outcome served; empty when it served none.
    for (std::string_view outcome : {"l1_hit", "l2_hit", "l3_hit", "miss"}) {
      if (const OutcomeStats* o = outcome_cost(row, outcome))
        csv_number(out, o->mean_us, 3);
      else
        out.push_back(',');
    }
    fmt::format_to(it, ",{}", verdict_of(r, i));
    csv_number(out, row.traffic_speedup.value, 4);
    csv_number(out, row.traffic_speedup.low, 4);
    csv_number(out, row.traffic_speedup.high, 4);
    if (row.last.total.cpu) {
      csv_number(out, row.cpu_speedup.value, 4);
      csv_number(out, row.cpu_speedup.low, 4);
      csv_number(out, row.cpu_speedup.high, 4);
    } else {
      out.append(std::string_view(",,,"));  // no thread CPU time was read
    }
    out.push_back(',');
    append_csv_field(out, row.last.info.model_path);
    out.push_back(',');
    append_csv_field(out, row.last.info.profile_name);
    if (r.mode == CompareMode::lockstep && i > 0) {  // where a rerun of this compare reads
      csv_number(out, row.rerun_speedup.low, 4);
      csv_number(out, row.rerun_speedup.high, 4);
    } else {
      out.append(std::string_view(",,"));
    }
    out.push_back('\n');
  }
  return fmt::to_string(out);
}

}  // namespace inferprof
