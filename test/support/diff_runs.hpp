#pragma once
// Constructed saved runs for the diff tests: deterministic request latencies
// and a RunData built from them as load_run would.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "inferprof/diff.hpp"

namespace inferprof::testing {

// Deterministic values spread around `center` (±spread), like request latencies.
inline std::vector<double> spread_values(std::size_t n, double center, double spread, std::uint32_t seed) {
  std::vector<double> v;
  std::uint32_t x = seed;
  for (std::size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v.push_back(center + spread * ((static_cast<double>(x >> 8) / static_cast<double>(1u << 24)) * 2 - 1));
  }
  return v;
}

inline double nearest_rank_of(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()) - 1e-9));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

// A run whose only non-zero stage is compute, equal to the request total;
// with `cpu`, the thread CPU time of the same requests.
inline RunData run_of(const std::vector<double>& totals, const std::string& model = "xxh3:00000000000000aa",
                      const std::vector<double>& cpu = {}) {
  RunData r;
  r.summary_path = "run/summary.json";
  r.csv_path = "run/requests.csv";
  r.model_hash = model;
  r.trace_hash = "xxh3:00000000000000bb";
  r.cpu_model = "Test CPU";
  r.cpu_cores = 2;
  r.threads = 1;
  r.concurrency = 1;
  r.device = "cpu";
  r.mode = "closed-loop";
  r.requests = totals.size();
  r.csv_rows = totals.size();
  auto mean = [](const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  };
  r.throughput_rps = 1e6 / mean(totals);
  for (std::size_t s : {static_cast<std::size_t>(Stage::compute), kStageCount}) {
    StageStats& st = r.stages[s];
    st.count = totals.size();
    st.mean_us = mean(totals);
    st.p50_us = nearest_rank_of(totals, 0.5);
    st.p90_us = nearest_rank_of(totals, 0.9);
    st.p99_us = nearest_rank_of(totals, 0.99);
    st.max_us = *std::max_element(totals.begin(), totals.end());
    if (!cpu.empty()) {
      st.cpu = true;
      st.cpu_mean_us = mean(cpu);
      st.cpu_p50_us = nearest_rank_of(cpu, 0.5);
      st.cpu_p99_us = nearest_rank_of(cpu, 0.99);
    }
  }
  for (std::size_t s = 0; s <= kStageCount; ++s) {
    const bool real = s == static_cast<std::size_t>(Stage::compute) || s == kStageCount;
    r.per_request[s] = real ? totals : std::vector<double>(totals.size(), 0.0);
    if (!cpu.empty()) r.per_request_cpu[s] = real ? cpu : std::vector<double>(cpu.size(), 0.0);
  }
  return r;
}

}  // namespace inferprof::testing
