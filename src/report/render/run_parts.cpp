#include "report/render/run_parts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "base/text.hpp"

namespace inferprof::report {

namespace {
std::string plural(std::uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", group_thousands(n), n == 1 ? one : many);
}
}  // namespace

std::string run_headline(const RunInfo& info) {
  std::string out = fmt::format("inferprof {}", info.command);
  if (!info.model_path.empty()) {
    out += fmt::format(" · {}", base_name(info.model_path));
    std::vector<std::string> details;
    if (!info.model_arch.empty()) details.push_back(info.model_arch);
    if (info.model_parameters > 0)
      details.push_back(plural(static_cast<std::uint64_t>(info.model_parameters), "param", "params"));
    if (info.model_bytes > 0) details.push_back(human_bytes(info.model_bytes));
    if (!details.empty()) out += fmt::format(" ({})", fmt::join(details, ", "));
  }
  if (!info.profile_name.empty()) out += fmt::format(" · profile {}", info.profile_name);
  if (!info.device.empty()) out += fmt::format(" · {}", info.device);
  out += fmt::format(" · {}", plural(static_cast<std::uint64_t>(std::max(info.threads, 0)), "thread", "threads"));
  std::string mode = info.mode;
  for (char& c : mode)
    if (c == '-') c = ' ';
  if (info.mode == "open-loop" && info.poisson_rps > 0)
    mode += fmt::format(", Poisson arrivals at {:g} req/s", info.poisson_rps);
  else if (info.mode == "open-loop" && info.speed != 1.0)
    mode += fmt::format(" at {}x speed", info.speed);
  out += fmt::format(" · {}, {}", mode,
                     plural(static_cast<std::uint64_t>(std::max(info.concurrency, 0)), "worker", "workers"));
  if (info.max_batch > 1)
    out += fmt::format(" · batches of up to {}, delay {}", info.max_batch, human_duration_us(info.batch_delay_us));
  if (info.merged_from > 0) out += fmt::format(" · {} replicas merged", info.merged_from);
  return out;
}

std::string batching_text(const RunSummary& s) {
  const BatchingStats& b = s.batching;
  if (!b.enabled) return {};
  std::string out = fmt::format("{} computed in {} ({:.2f} per batch)", plural(b.computed, "request", "requests"),
                                plural(b.batches, "batch", "batches"), b.mean_size());
  std::vector<std::string> sizes;
  for (std::size_t k = 1; k < b.of_size.size(); ++k)
    if (b.of_size[k] > 0) sizes.push_back(fmt::format("{}: {}", k, group_thousands(b.of_size[k])));
  constexpr std::size_t kShown = 16;  // the largest sizes, where the batches are once the batcher fills them
  if (sizes.size() > kShown) sizes.erase(sizes.begin(), sizes.end() - kShown), sizes.insert(sizes.begin(), "…");
  if (!sizes.empty()) out += fmt::format(" · batches by size {}", fmt::join(sizes, ", "));
  return out;
}

std::string load_text(const RunInfo& info) {
  std::string out = human_duration_us(info.load_ms * 1e3);
  if (info.model_served_by != "file")
    out += fmt::format(" ({} from the store's {} tier)", info.model_path, info.model_served_by);
  return out;
}

std::string warmup_text(const RunInfo& info) {
  const auto& w = info.warmup_us;
  if (w.empty()) return "none (the first requests include cold-start costs)";
  if (w.size() == 1)
    return fmt::format("1 iteration: {} (cold){}", human_duration_us(w[0]),
                       info.warmup_from.empty() ? "" : " · on " + info.warmup_from);
  double rest = 0;
  for (std::size_t i = 1; i < w.size(); ++i)
    rest += w[i];
  rest /= static_cast<double>(w.size() - 1);
  return fmt::format("{} iterations: first {} (cold), then mean {}{}", group_thousands(w.size()),
                     human_duration_us(w[0]), human_duration_us(rest),
                     info.warmup_from.empty() ? "" : " · on " + info.warmup_from);
}

std::string requests_text(const RunSummary& s) {
  std::string out = fmt::format("{} in {:.2f} s · {} req/s", group_thousands(s.requests), s.info.wall_s,
                                grouped_fixed(s.throughput_rps, 1));
  if (s.failed > 0) out += fmt::format(" · {} failed", group_thousands(s.failed));
  if (s.info.interrupted())
    out += fmt::format(" · interrupted by {}: the requests that completed", s.info.interrupted_by);
  return out;
}

std::vector<StageRow> visible_stage_rows(const RunSummary& s) {
  std::vector<StageRow> rows;
  for (std::size_t i = 0; i < kStageCount; ++i) {
    const bool optional = i == static_cast<std::size_t>(Stage::cache) || i == static_cast<std::size_t>(Stage::load);
    if (optional && s.stages[i].count == 0) continue;
    if (i == static_cast<std::size_t>(Stage::batch_wait) && !s.stages[i].applicable) continue;  // no batcher
    rows.push_back(StageRow{kStageNames[i], &s.stages[i], {}});
    // A lone op is the stage itself: its row would repeat the stage's.
    if (i != static_cast<std::size_t>(Stage::preprocess) || s.preprocess_ops.size() < 2) continue;
    for (const StagePart& part : s.preprocess_ops) {
      const std::string_view name = part.name;
      rows.push_back(StageRow{name, &part.stats, name.substr(name.find('.') + 1)});
    }
  }
  return rows;
}

}  // namespace inferprof::report
