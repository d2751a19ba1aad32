// A saved run for diff: the shared reader (report/saved_run.hpp), every stage
// statistic required, and the per-request stage times of requests.csv kept
// for the bootstrap intervals.
#include <fmt/format.h>

#include "inferprof/diff.hpp"
#include "inferprof/error.hpp"
#include "report/saved_run.hpp"

namespace inferprof {
namespace {

// The intervals need the shape of the distribution, not every row: evenly
// spaced rows keep the bootstrap's cost bounded on long runs (a wider,
// conservative interval, never a narrower one).
std::vector<double> thinned(const std::vector<double>& from) {
  const std::size_t n = from.size();
  const std::size_t keep = std::min(n, RunData::kMaxRows);
  std::vector<double> out;
  out.reserve(keep);
  for (std::size_t k = 0; k < keep; ++k)
    out.push_back(from[k * n / keep]);
  return out;
}

// Every row of requests.csv, as many as its summary says requests (check_request_rows).
void read_requests(RunData& run, const report::SavedRun& saved) {
  std::vector<std::string> required, parts;
  for (std::size_t i = 0; i < kStageCount; ++i)
    if (i != static_cast<std::size_t>(Stage::batch_wait))  // absent from runs before it was recorded
      required.push_back(fmt::format("{}_us", kStageNames[i]));
  for (const RunData::Part& part : run.preprocess_ops)
    parts.push_back(part.name);
  std::array<std::vector<double>, kStageCount + 1> all, cpu;
  std::vector<std::vector<double>> part_all(parts.size()), part_cpu(parts.size());
  const std::uint64_t rows = report::read_requests_csv(
      run.csv_path, required,
      [&](const report::RequestRow& r) {
        if (!r.ok) return;  // failed requests have no meaningful stage times
        for (std::size_t i = 0; i <= kStageCount; ++i) {
          all[i].push_back(r.us[i]);
          // CPU sampling: the rows whose CPU clock was read (empty cells: not read) are a uniform sample.
          if (r.has_cpu) cpu[i].push_back(r.cpu_us[i]);
        }
        for (std::size_t k = 0; k < parts.size(); ++k) {
          part_all[k].push_back(r.part_us[k]);
          if (r.has_cpu) part_cpu[k].push_back(r.part_cpu_us[k]);
        }
      },
      parts);
  report::check_request_rows(saved, rows);
  run.csv_rows = all[kStageCount].size();
  for (std::size_t s = 0; s <= kStageCount; ++s) {
    run.per_request[s] = thinned(all[s]);
    run.per_request_cpu[s] = thinned(cpu[s]);
  }
  for (std::size_t k = 0; k < parts.size(); ++k) {
    run.preprocess_ops[k].per_request = thinned(part_all[k]);
    run.preprocess_ops[k].per_request_cpu = thinned(part_cpu[k]);
  }
}

}  // namespace

RunData load_run(const std::string& path) {
  report::SavedRun saved = report::read_saved_run(path, report::SummaryCheck::complete);
  RunData run;
  run.summary_path = saved.summary_path;
  run.csv_path = saved.csv_path;
  run.model_hash = saved.model_hash;
  run.trace_hash = saved.trace_hash;
  run.model_path = saved.model_path;
  run.trace_path = saved.trace_path;
  run.hostname = saved.hostname;
  run.cpu_model = saved.cpu_model;
  run.libtorch_version = saved.libtorch_version;
  run.device = saved.device;
  run.profile_name = saved.profile_name;
  run.mode = saved.mode;
  run.started_at = saved.started_at;
  run.cpu_cores = saved.cpu_cores;
  run.threads = saved.threads;
  run.concurrency = saved.concurrency;
  run.limit = saved.limit;
  run.speed_before = saved.speed_before;
  run.speed_after = saved.speed_after;
  run.requests = saved.requests;
  run.throughput_rps = saved.throughput_rps;
  run.stages = saved.stages;
  for (StagePart& part : saved.preprocess_ops)
    run.preprocess_ops.push_back(RunData::Part{std::move(part.name), part.stats, {}, {}});
  for (const auto& t : saved.caches)
    if (t.hit_ratio) run.hit_ratios.emplace_back(enum_name(t.tier), *t.hit_ratio);
  if (!run.csv_path.empty()) read_requests(run, saved);
  return run;
}

}  // namespace inferprof
