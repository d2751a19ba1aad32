// A run as CSV (--format csv, and stages.csv): one row per stage, then the total.
#include <iterator>

#include "base/text.hpp"
#include "inferprof/report.hpp"

namespace inferprof {
namespace report {
namespace {
void append_stage_row(fmt::memory_buffer& out, std::string_view name, const StageStats& s) {
  auto it = std::back_inserter(out);
  if (!s.applicable) {
    fmt::format_to(it, "{},,,,,,,,,,,\n", name);
    return;
  }
  fmt::format_to(it, "{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.6f}", name, s.count, s.mean_us, s.p50_us, s.p90_us,
                 s.p99_us, s.max_us, s.share);
  if (s.cpu)
    fmt::format_to(it, ",{:.3f},{:.3f},{:.3f},{:.6f}\n", s.cpu_mean_us, s.cpu_p50_us, s.cpu_p99_us, s.off_cpu);
  else
    out.append(std::string_view(",,,,\n"));
}
}  // namespace
}  // namespace report

std::string render_stages_csv(const RunSummary& s) {
  fmt::memory_buffer out;
  out.append(
      std::string_view("stage,count,mean_us,p50_us,p90_us,p99_us,max_us,share,cpu_mean_us,cpu_p50_us,"
                       "cpu_p99_us,off_cpu\n"));
  // A preprocessing op's row ("preprocess.resize") follows its stage's: part of it, not added to the total.
  for (std::size_t i = 0; i < kStageCount; ++i) {
    report::append_stage_row(out, kStageNames[i], s.stages[i]);
    if (i == static_cast<std::size_t>(Stage::preprocess))
      for (const StagePart& part : s.preprocess_ops)
        report::append_stage_row(out, part.name, part.stats);
  }
  report::append_stage_row(out, "total", s.total);
  return fmt::to_string(out);
}

}  // namespace inferprof
