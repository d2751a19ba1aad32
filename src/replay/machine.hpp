#pragma once
// Facts about the machine a run measured on, kept out of the engine: the
// report's hostname, CPU model, core count, start time and peak RSS.
#include "inferprof/report.hpp"

namespace inferprof::detail {

// hostname, cpu_model, cpu_cores and started_at.
void record_machine_facts(RunInfo& info);
// The process's peak resident set so far, in MB.
double peak_rss_mb();

}  // namespace inferprof::detail
