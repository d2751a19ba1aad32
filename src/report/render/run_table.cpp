// A run as the terminal table (--format table): what a person reads after a run.
#include <algorithm>

#include "base/text.hpp"
#include "report/render/cache_section.hpp"
#include "report/render/gpu_section.hpp"
#include "report/render/run_parts.hpp"
#include "report/render/update_section.hpp"

namespace inferprof {
namespace report {
namespace {

constexpr std::size_t kLabel = 16;  // width of "model load", "warm-up", ... labels
constexpr std::size_t kName = 12;
constexpr std::size_t kCount = 8;
constexpr std::size_t kCell = 11;
constexpr std::size_t kShare = 8;
constexpr std::size_t kMaxOpName = 40;

void stage_line(std::string& out, std::string_view name, const StageStats& s, std::size_t width) {
  out += pad_right(name, width);
  if (!s.applicable) {
    out += pad_left("n/a", kCount);
    out += '\n';
    return;
  }
  out += pad_left(group_thousands(s.count), kCount);
  for (double v : {s.mean_us, s.p50_us, s.p90_us, s.p99_us, s.max_us})
    out += pad_left(human_duration_us(v), kCell);
  out += pad_left(share_text(s.share), kShare);
  // Thread CPU time beside the wall figures: mean, and the share off the CPU.
  if (s.cpu) out += pad_left(human_duration_us(s.cpu_mean_us), kCell) + pad_left(share_text(s.off_cpu), kShare + 1);
  out += '\n';
}

void ops_lines(std::string& out, const std::vector<OpStats>& ops) {
  const std::size_t shown = std::min(ops.size(), kTableOps);
  std::size_t width = kName;
  for (std::size_t i = 0; i < shown; ++i)
    width = std::max(width, std::min(display_width(ops[i].name), kMaxOpName));
  width += 2;
  out += '\n';
  out += pad_right("top ops", width) + pad_left("calls", kCount) + pad_left("self", kCell) +
         pad_left("self/call", kCell) + pad_left("total", kCell) + pad_left("compute", kShare + 1) + '\n';
  for (std::size_t i = 0; i < shown; ++i) {
    const OpStats& op = ops[i];
    const double per_call = op.calls ? op.self_us / static_cast<double>(op.calls) : 0;
    out += pad_right(truncate_display(op.name, kMaxOpName), width) + pad_left(group_thousands(op.calls), kCount) +
           pad_left(human_duration_us(op.self_us), kCell) + pad_left(human_duration_us(per_call), kCell) +
           pad_left(human_duration_us(op.total_us), kCell) + pad_left(share_text(op.share_of_compute), kShare + 1) +
           '\n';
  }
}

}  // namespace
}  // namespace report

std::string render_table(const RunSummary& s) {
  using namespace report;
  std::string out = run_headline(s.info) + '\n';
  out += pad_right("model load", kLabel) + load_text(s.info) + '\n';
  if (!s.info.model_sha256.empty()) out += pad_right("model sha256", kLabel) + s.info.model_sha256 + '\n';
  out += pad_right("warm-up", kLabel) + warmup_text(s.info) + '\n';
  out += pad_right("requests", kLabel) + requests_text(s) + '\n';
  if (s.batching.enabled) out += pad_right("batching", kLabel) + batching_text(s) + '\n';
  if (s.total.cpu && s.info.cpu_sample_every > 1)
    out += pad_right("cpu time", kLabel) +
           fmt::format("read on 1 in {} requests ({} of {}; one read costs {:.0f} ns): cpu columns are over those\n",
                       s.info.cpu_sample_every, group_thousands(s.cpu_requests), group_thousands(s.requests),
                       s.info.cpu_clock_read_ns);
  out += '\n';
  // A preprocessing op's row is indented under preprocess; the column widens for a long op name.
  const std::vector<StageRow> rows = visible_stage_rows(s);
  std::size_t width = kName;
  for (const StageRow& row : rows)
    if (!row.op.empty()) width = std::max(width, display_width(row.op) + 3);
  out += pad_right("stage", width) + pad_left("count", kCount);
  for (const char* h : {"mean", "p50", "p90", "p99", "max"})
    out += pad_left(h, kCell);
  out += pad_left("share", kShare);
  if (s.total.cpu) out += pad_left("cpu mean", kCell) + pad_left("off-cpu", kShare + 1);  // measured only
  out += '\n';
  for (const StageRow& row : rows)
    stage_line(out, row.op.empty() ? std::string(row.name) : "  " + std::string(row.op), *row.stats, width);
  stage_line(out, "total", s.total, width);
  if (!s.top_ops.empty()) ops_lines(out, s.top_ops);
  out += cache_table_lines(s, false);
  out += verify_lines(s, false);
  out += update_table_lines(s, false);
  out += gpu_table_lines(s);

  const bool notes = !s.info.warnings.empty() || s.info.skipped_invalid > 0 || !s.failed_examples.empty();
  if (notes) out += '\n';
  for (const auto& e : s.failed_examples)
    out += fmt::format("failed: {}\n", e);
  if (s.info.skipped_invalid > 0) {
    out += fmt::format("skipped {} invalid trace {} (--skip-invalid)\n", group_thousands(s.info.skipped_invalid),
                       s.info.skipped_invalid == 1 ? "line" : "lines");
    for (const auto& e : s.info.skipped_examples)
      out += fmt::format("  {}\n", e);
  }
  for (const auto& w : s.info.warnings)
    out += fmt::format("warning: {}\n", w);
  return out;
}

}  // namespace inferprof
