#pragma once
// What the reporters of `inferprof sweep` (sweep_<format>.cpp) share: the
// cells of its tables and the sentences under them.
#include <string>
#include <vector>

#include "inferprof/sweep_result.hpp"

namespace inferprof::report::sweep_parts {

// "inferprof sweep · model.pt · trace.jsonl · 2,000 requests · speed 0.5×–4× · p99 ≤ 100 ms"
std::string headline(const SweepResult& r);
// Some curve has a queueing model (SweepCurve::modelled).
bool any_modelled(const SweepResult& r);
// One row per (configuration, step): load, offered and achieved req/s, p50/p90/p99
// with their intervals (and the queueing model's p99 when any_modelled), queue
// share, CPU per request, what the step showed (the last column).
std::vector<std::vector<std::string>> step_cells(const SweepResult& r);
// One sentence per configuration: its capacity, its knee and why it stopped.
std::vector<std::string> capacity_lines(const SweepResult& r);
// What the intervals and the verdicts mean, in one paragraph.
std::string method_note(const SweepResult& r);
// "2×", "concurrency 4"
std::string load_label(const SweepResult& r, double load);

}  // namespace inferprof::report::sweep_parts
