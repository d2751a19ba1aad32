#pragma once
// The GPU block of the reports (a --device cuda run): device, copy bandwidth
// achieved next to this machine's peak, kernels per request, CUPTI's counts.
#include <string>

#include "base/json.hpp"
#include "inferprof/report.hpp"

namespace inferprof::report {

// GB/s (1e9 B/s) of `bytes` moved in `us` microseconds; 0 when either is 0.
double achieved_gbps(std::uint64_t bytes, double us);
// The lines under the stage table ("" on CPU).
std::string gpu_table_lines(const RunSummary& s);
// "gpu": {...} in summary.json (nothing on CPU).
void write_gpu_json(JsonWriter& w, const RunSummary& s);

}  // namespace inferprof::report
