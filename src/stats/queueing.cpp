// The queueing model sweep's modelled capacity runs (inferprof/stats.hpp).
#include <algorithm>
#include <functional>
#include <queue>
#include <vector>

#include "base/histogram.hpp"
#include "inferprof/stats.hpp"

namespace inferprof {

std::vector<double> fifo_latencies_us(const std::vector<double>& arrivals_us, const std::vector<double>& service_us,
                                      int servers) {
  const std::size_t n = std::min(arrivals_us.size(), service_us.size());
  std::vector<double> latency(n);
  // When each server is next free, earliest on top.
  std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
  for (int k = 0; k < std::max(servers, 1); ++k)
    free_at.push(0);
  for (std::size_t i = 0; i < n; ++i) {
    const double start = std::max(arrivals_us[i], free_at.top());
    free_at.pop();
    const double end = start + service_us[i];
    free_at.push(end);
    latency[i] = end - arrivals_us[i];
  }
  return latency;
}

double nearest_rank_quantile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  const std::size_t k = report::nearest_rank(q, values.size()) - 1;  // the project's one rank rule
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

double median_of(std::vector<double>& values) {
  if (values.empty()) return 0;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  if (values.size() % 2 == 1) return *mid;
  return (*mid + *std::max_element(values.begin(), mid)) / 2;
}

}  // namespace inferprof
