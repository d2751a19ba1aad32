#pragma once
// What the reporters of a comparison (compare_<format>.cpp) share.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/compare_result.hpp"

namespace inferprof::report::compare_parts {

inline constexpr std::array<std::string_view, 3> kTiers = {"l1", "l2", "l3"};
inline constexpr std::string_view kNoiseNote = "no measurable difference: the 95% interval includes 1.0";

// What configuration `i` is against the baseline, as its interval supports:
// "faster", "slower", "no measurable difference" ("baseline" for the first).
std::string_view verdict_of(const CompareResult& r, std::size_t i);

// The configuration's tier `tier` ("l1"), or nullptr when it has none.
const CacheTierReport* find_tier(const CompareRow& row, std::string_view tier);
// Mean µs of the requests `outcome` served ("l1_hit", ..., "miss"); nullptr: none.
const OutcomeStats* outcome_cost(const CompareRow& row, std::string_view outcome);

// "inferprof compare · model.pt · trace.jsonl · 200 requests · 1 run each"
std::string headline(const CompareResult& r);
// "speedup intervals: lockstep mode, paired bootstrap over 120 requests"
std::string interval_line(const CompareResult& r);
// Why the wall speedups have no interval (one replay each), with its newline.
std::string single_wall_note(const CompareResult& r);
bool any_noise(const CompareResult& r);                 // a speedup's interval includes 1.0
bool degenerate_wall_interval(const CompareResult& r);  // a wall speedup without an interval

// A table as rows of cells; the first row is the header. Column 0 is text
// (left-aligned), the others are numbers (right-aligned) except the two
// speedups, which read better left-aligned ("1.00× (baseline)", "~1.02× [...]").
using Cells = std::vector<std::vector<std::string>>;
inline std::vector<std::size_t> left_columns(const CompareResult& r) {
  return r.show_traffic ? std::vector<std::size_t>{0, 5, 6, 7, 8} : std::vector<std::size_t>{0, 5, 6, 7};
}
// The table of the terminal and of the markdown; `noise_mark` starts a
// speedup whose interval includes 1.0.
Cells table_cells(const CompareResult& r, std::string_view noise_mark);

// "l1=lru:10,000; l2=lfu:1,000,000 redis://host:6379/0"
std::string tiers_text(const CompareRow& row);
// Where a configuration's time went, from what served its requests:
// "81.2% of requests served by L1 at 1.2 µs mean vs 45.3 ms for a miss
// (45.1 ms per request in none)".
// With `by_stage` (configurations that differ by model or profile) and no
// caches on either side: the stages whose mean moved most, "compute 21.4 ms →
// 8.2 ms, ...".
std::string explanation(const CompareRow& row, const CompareRow& base, bool by_stage);

// --gate: a row per gate and configuration (configuration, gate, stage and
// clock, baseline mean, this one's, the change with its interval, the limit,
// the verdict), after a header row; and the line that heads them.
Cells gate_cells(const CompareResult& r);
inline constexpr std::array<std::size_t, 3> kGateLeftColumns = {0, 1, 2};
std::string gate_heading(const CompareResult& r);

// Notes under the table: warnings, degraded tiers, verification. Each is one
// line of text; the caller adds "warning: " or the markdown quote.
struct Notes {
  std::vector<std::string> warnings;
  std::vector<std::string> verify;
};
Notes notes_of(const CompareResult& r);

}  // namespace inferprof::report::compare_parts
