// Quantile intervals from order statistics (inferprof/stats.hpp).
#include <algorithm>
#include <cmath>

#include "inferprof/stats.hpp"

namespace inferprof {

QuantileInterval quantile_interval(const std::vector<double>& sorted, double q, double confidence) {
  QuantileInterval out;
  if (sorted.empty()) return out;
  const double n = static_cast<double>(sorted.size());
  const auto at = [&](double rank) {  // 1-based rank, clamped to the sample
    const double r = std::clamp(rank, 1.0, n);
    return sorted[static_cast<std::size_t>(r) - 1];
  };
  out.value = at(std::ceil(q * n));
  // z for the two-sided `confidence` (0.95: 1.96), from the normal's inverse by bisection on erf.
  double lo = 0, hi = 10;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (std::erf(mid / std::sqrt(2.0)) < confidence ? lo : hi) = mid;
  }
  const double spread = lo * std::sqrt(n * q * (1 - q));
  out.low = at(std::floor(n * q - spread));
  out.high = at(std::ceil(n * q + spread) + 1);
  return out;
}

}  // namespace inferprof
