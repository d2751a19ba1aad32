// A run as GitHub markdown (--format markdown), e.g. for a CI comment.
#include <algorithm>

#include "base/text.hpp"
#include "report/render/cache_section.hpp"
#include "report/render/run_parts.hpp"
#include "report/render/update_section.hpp"

namespace inferprof {
namespace report {
namespace {

// `cpu`: the run measured thread CPU time, so the row has its two columns.
void stage_row(std::string& out, std::string_view name, const StageStats& s, bool cpu) {
  const std::string_view cpu_blank = cpu ? " | |" : "";
  if (!s.applicable) {
    out += fmt::format("| {} | n/a | | | | | | |{}\n", markdown_cell(name), cpu_blank);
    return;
  }
  out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |", markdown_cell(name), group_thousands(s.count),
                     human_duration_us(s.mean_us), human_duration_us(s.p50_us), human_duration_us(s.p90_us),
                     human_duration_us(s.p99_us), human_duration_us(s.max_us), share_text(s.share));
  if (cpu)
    out += s.cpu ? fmt::format(" {} | {} |", human_duration_us(s.cpu_mean_us), share_text(s.off_cpu)) : " n/a | n/a |";
  out += '\n';
}

}  // namespace
}  // namespace report

std::string render_markdown(const RunSummary& s) {
  using namespace report;
  std::string out = fmt::format("### {}\n\n", markdown_cell(run_headline(s.info)));
  // Every line that holds text of the run's (paths, keys, versions) through the one escaper.
  out += fmt::format("- model load: {}\n", markdown_cell(load_text(s.info)));
  if (!s.info.model_sha256.empty()) out += fmt::format("- model sha256: {}\n", markdown_cell(s.info.model_sha256));
  out += fmt::format("- warm-up: {}\n", markdown_cell(warmup_text(s.info)));
  out += fmt::format("- requests: {}\n", markdown_cell(requests_text(s)));
  if (s.batching.enabled) out += fmt::format("- batching: {}\n", markdown_cell(batching_text(s)));
  out += '\n';
  const bool cpu = s.total.cpu;
  out += cpu ? "| stage | count | mean | p50 | p90 | p99 | max | share | cpu mean | off-cpu |\n"
               "|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
             : "| stage | count | mean | p50 | p90 | p99 | max | share |\n"
               "|:--|--:|--:|--:|--:|--:|--:|--:|\n";
  for (const StageRow& row : visible_stage_rows(s))
    stage_row(out, row.name, *row.stats, cpu);
  stage_row(out, "total", s.total, cpu);

  if (!s.top_ops.empty()) {
    out += "\n| top op | calls | self | self/call | total | share of compute |\n";
    out += "|:--|--:|--:|--:|--:|--:|\n";
    const std::size_t shown = std::min(s.top_ops.size(), kTableOps);
    for (std::size_t i = 0; i < shown; ++i) {
      const OpStats& op = s.top_ops[i];
      const double per_call = op.calls ? op.self_us / static_cast<double>(op.calls) : 0;
      out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", markdown_cell(op.name), group_thousands(op.calls),
                         human_duration_us(op.self_us), human_duration_us(per_call), human_duration_us(op.total_us),
                         share_text(op.share_of_compute));
    }
  }

  out += report::cache_table_lines(s, true);
  out += report::verify_lines(s, true);
  out += report::update_table_lines(s, true);
  const bool notes = !s.info.warnings.empty() || s.info.skipped_invalid > 0 || !s.failed_examples.empty();
  if (notes) out += '\n';
  for (const auto& e : s.failed_examples)
    out += fmt::format("> **failed:** {}\n>\n", markdown_cell(e));
  if (s.info.skipped_invalid > 0)
    out += fmt::format("> skipped {} invalid trace {} (--skip-invalid)\n>\n", group_thousands(s.info.skipped_invalid),
                       s.info.skipped_invalid == 1 ? "line" : "lines");
  for (const auto& w : s.info.warnings)
    out += fmt::format("> **warning:** {}\n>\n", markdown_cell(w));
  // Drop the trailing ">" separator line.
  if (notes && out.size() >= 2 && out.compare(out.size() - 2, 2, ">\n") == 0) out.resize(out.size() - 2);
  return out;
}

}  // namespace inferprof
