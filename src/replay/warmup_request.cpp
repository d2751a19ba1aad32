// Which request the warm-up replays. It used to be the trace's first, always:
// a trace opening on a 16-megapixel photo warmed up on it five times (~8 s),
// and a trace opening on a tiny input warmed nothing that mattered.
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"
#include "replay/engine.hpp"

namespace inferprof::detail {

namespace {

// Requests looked at for the median: enough to be representative, few enough
// to read in milliseconds.
constexpr std::uint64_t kWarmupScan = 1000;

// How much input a request brings, in bytes: its files' sizes, inline bytes,
// or a seeded tensor's elements (x 4: the dtype only scales every seed alike).
std::uint64_t input_bytes(const InputSpec& spec) {
  switch (spec.kind) {
    case InputSpec::Kind::file:
    case InputSpec::Kind::image:
    case InputSpec::Kind::text_file: {
      struct stat st {};
      return ::stat(spec.file.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
    }
    case InputSpec::Kind::image_base64:
      return spec.base64.size() * 3 / 4;
    case InputSpec::Kind::text:
      return spec.text.size();
    case InputSpec::Kind::data:
      return spec.data.size() * 4;
    case InputSpec::Kind::seed:
      return 4 * static_cast<std::uint64_t>(
                     std::accumulate(spec.shape.begin(), spec.shape.end(), std::int64_t{1}, std::multiplies<>()));
    case InputSpec::Kind::none:
      break;
  }
  return 0;
}

std::uint64_t request_bytes(const TraceRequest& r) {
  std::uint64_t n = input_bytes(r.input);
  for (const InputSpec& spec : r.inputs)
    n += input_bytes(spec);
  return n;
}

}  // namespace

TraceRequest pick_warmup_request(const RunConfig& config, const TraceRequest& first, RunInfo& info) {
  const std::string& wanted = config.replay.warmup_from;
  if (info.warmup == 0) return first;
  TraceReader reader(config.replay.trace_path, TraceReader::Options{true, 1 << 20, config.replay.csv});
  std::vector<TraceRequest> scanned;
  std::uint64_t requests = 0;
  for (TraceRecord rec; reader.next(rec);) {
    if (rec.kind != TraceRecord::Kind::request) continue;
    if (config.replay.limit > 0 && requests >= config.replay.limit) break;
    ++requests;
    if (!wanted.empty()) {
      if (rec.request.key != wanted) continue;
      info.warmup_from = fmt::format("line {} (--warmup-from {})", rec.line, printable(wanted));
      return rec.request;
    }
    scanned.push_back(rec.request);
    if (scanned.size() >= kWarmupScan) break;
  }
  if (!wanted.empty())
    throw bad_input(fmt::format("--warmup-from {}: no request with that key in {}{}", printable(wanted),
                                config.replay.trace_path,
                                config.replay.limit ? fmt::format(" (within --limit {})", config.replay.limit) : ""));
  std::vector<std::pair<std::uint64_t, std::size_t>> sizes;
  for (std::size_t i = 0; i < scanned.size(); ++i)
    sizes.emplace_back(request_bytes(scanned[i]), i);
  std::stable_sort(sizes.begin(), sizes.end());
  if (sizes.empty() || sizes.front().first == sizes.back().first) {
    info.warmup_from = fmt::format("line {} (the first request; inputs alike in size)", first.line);
    return first;
  }
  const TraceRequest& median = scanned[sizes[(sizes.size() - 1) / 2].second];
  info.warmup_from = fmt::format("line {} (the median input size, {} bytes, of the first {} requests)", median.line,
                                 sizes[(sizes.size() - 1) / 2].first, scanned.size());
  return median;
}

}  // namespace inferprof::detail
