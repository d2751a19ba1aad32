#pragma once
// What a run's table and markdown share: the description lines and the stage rows.
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/run_result.hpp"

namespace inferprof::report {

// The description lines the table and the markdown share.
std::string run_headline(const RunInfo& info);   // "inferprof run · model.pt (...) · ..."
std::string load_text(const RunInfo& info);      // "12.31 ms"
std::string warmup_text(const RunInfo& info);    // "3 iterations: first ... (cold), then mean ..."
std::string requests_text(const RunSummary& s);  // "1,000 in 0.52 s · 1,923.1 req/s"
// --max-batch: "2,000 requests computed in 412 batches (4.85 per batch) · batches by size 1: 3, ..."; "" without.
std::string batching_text(const RunSummary& s);

// The stage rows shown to people: queue..overhead always; cache and load only
// when some request spent time there; batch_wait only with a batcher.
struct StageRow {
  std::string_view name;  // "compute", or a part's "preprocess.resize"
  const StageStats* stats;
  std::string_view op;  // a part's op ("resize"), shown indented under its stage; "" for a stage
};
std::vector<StageRow> visible_stage_rows(const RunSummary& s);
}  // namespace inferprof::report
