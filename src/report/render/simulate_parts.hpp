#pragma once
// What the reporters of a simulation (simulate_<format>.cpp) share.
#include <cstdint>
#include <string>
#include <vector>

#include "inferprof/simulate_result.hpp"

namespace inferprof::report::simulate_parts {

// part / whole, 0 when whole is 0.
double ratio_value(std::uint64_t part, std::uint64_t whole);
// "l1=lru ttl 30s"
std::string mrc_name(const MrcResult& m);
// The lines above the tables: the trace, the pass, where the costs came from.
std::string headline(const SimulateResult& r);

// A table as rows of cells; the first row is the header.
using Cells = std::vector<std::vector<std::string>>;
// What each tier's lookups and inserts cost in the costs run.
Cells tier_cost_cells(const SimCosts& c);
// Each configuration's tiers: lookups, hits, evictions, what they held.
Cells tier_cells(const SimulateResult& r);
// Each configuration's predicted latency against no cache.
Cells prediction_cells(const SimulateResult& r);
// A request's predicted latency by what served it: its costs outside the
// cache plus the lookups and inserts of the configuration's tiers.
Cells outcome_cells(const SimulateResult& r);
// One miss-ratio curve, a row per capacity.
Cells mrc_cells(const MrcResult& m, bool costs);
// The line above a curve's table: its method, and its error bound when sampled.
std::string mrc_note(const MrcResult& m);

// --policies x --sizes: a row per policy and size.
Cells policy_grid_cells(const PolicyGridResult& g);
// The line above the grid: which tier, how many threads, how long.
std::string policy_grid_note(const PolicyGridResult& g);
// "recommended within 25k: s3fifo at 10k, predicted mean 1.21 ms; 3.1% (37 µs) ahead of arc at 25k";
// empty without a recommendation.
std::string recommendation_line(const PolicyGridResult& g);

}  // namespace inferprof::report::simulate_parts
