#pragma once
// What the reporters of a simulation (simulate_<format>.cpp) share.
#include <cstdint>
#include <string>
#include <vector>

#include "inferprof/simulate.hpp"

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

}  // namespace inferprof::report::simulate_parts
