#include "report/render/gpu_section.hpp"

#include <fmt/format.h>

#include "base/text.hpp"

namespace inferprof::report {
namespace {

constexpr std::size_t kLabel = 16;

double per_request(std::uint64_t n, std::uint64_t requests) {
  return requests ? static_cast<double>(n) / static_cast<double>(requests) : 0;
}
const StageStats& stage(const RunSummary& s, Stage st) {
  return s.stages[static_cast<std::size_t>(st)];
}

}  // namespace

double achieved_gbps(std::uint64_t bytes, double us) {
  return bytes > 0 && us > 0 ? static_cast<double>(bytes) / (us * 1e3) : 0;
}

std::string gpu_table_lines(const RunSummary& s) {
  const GpuInfo& g = s.info.gpu;
  if (!g.enabled) return "";
  std::string out = "\n";
  out += pad_right("gpu", kLabel) + g.name;
  if (!g.trace) {
    out += " · --gpu-trace off: no CUPTI, h2d/compute/d2h are host times\n";
    return out;
  }
  out += fmt::format(" · CUPTI: {} activity records, {} dropped, {} not on a request\n", group_thousands(g.records),
                     group_thousands(g.dropped), group_thousands(g.unattributed));
  const char* staged = g.pinned ? "pinned" : "pageable";
  out += pad_right("copies", kLabel) + fmt::format(
                                           "h2d {:.1f} GB/s achieved ({}) vs peak {:.1f} pinned / {:.1f} pageable · "
                                           "d2h {:.1f} GB/s vs peak {:.1f} pinned / {:.1f} pageable\n",
                                           achieved_gbps(s.h2d_bytes, stage(s, Stage::h2d).total_us), staged,
                                           g.peak_h2d_pinned_gbps, g.peak_h2d_pageable_gbps,
                                           achieved_gbps(s.d2h_bytes, stage(s, Stage::d2h).total_us),
                                           g.peak_d2h_pinned_gbps, g.peak_d2h_pageable_gbps);
  out += pad_right("kernels", kLabel) +
         fmt::format("{:.1f} per request · GPU idle inside requests {} mean (overhead;gpu_idle)\n",
                     per_request(s.gpu_kernels, s.requests),
                     human_duration_us(s.requests ? s.gpu_idle_us / static_cast<double>(s.requests) : 0));
  if (g.dropped > 0)
    out += fmt::format("warning: CUPTI dropped {} activity records: the GPU stages undercount\n",
                       group_thousands(g.dropped));
  return out;
}

void write_gpu_json(JsonWriter& w, const RunSummary& s) {
  const GpuInfo& g = s.info.gpu;
  if (!g.enabled) return;
  w.key("gpu").begin_object();
  w.field("name", g.name);
  w.field("pinned", g.pinned);
  w.field("trace", g.trace);
  w.field("activity_records", g.records);
  w.field("dropped_records", g.dropped);
  w.field("unattributed_records", g.unattributed);
  w.field("kernels", s.gpu_kernels);
  w.field_number("kernels_per_request", per_request(s.gpu_kernels, s.requests), 3);
  w.field("h2d_bytes", s.h2d_bytes);
  w.field("d2h_bytes", s.d2h_bytes);
  w.field_number("h2d_gbps", achieved_gbps(s.h2d_bytes, stage(s, Stage::h2d).total_us), 3);
  w.field_number("d2h_gbps", achieved_gbps(s.d2h_bytes, stage(s, Stage::d2h).total_us), 3);
  w.field_number("gpu_idle_us", s.gpu_idle_us, 3);
  w.key("copy_peak_gbps").begin_object();
  w.field_number("h2d_pinned", g.peak_h2d_pinned_gbps, 3);
  w.field_number("h2d_pageable", g.peak_h2d_pageable_gbps, 3);
  w.field_number("d2h_pinned", g.peak_d2h_pinned_gbps, 3);
  w.field_number("d2h_pageable", g.peak_d2h_pageable_gbps, 3);
  w.end_object();
  w.end_object();
}

}  // namespace inferprof::report
