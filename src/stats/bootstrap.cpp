// The bootstrap machinery compare and diff share (inferprof/stats.hpp): draws,
// percentile intervals and Student t quantiles.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <random>

#include "inferprof/stats.hpp"

namespace inferprof {

void Resampler::draw(const std::vector<double>& from, std::vector<double>& into) {
  into.resize(from.size());
  if (from.empty()) return;
  std::uniform_int_distribution<std::size_t> pick(0, from.size() - 1);
  for (double& v : into)
    v = from[pick(rng_)];
}

double Resampler::draw_mean(const std::vector<double>& from) {
  if (from.empty()) return 0;
  std::uniform_int_distribution<std::size_t> pick(0, from.size() - 1);
  double sum = 0;
  for (std::size_t i = 0; i < from.size(); ++i)
    sum += from[pick(rng_)];
  return sum / static_cast<double>(from.size());
}

std::pair<double, double> percentile_interval(std::vector<double>& replicates, double confidence) {
  if (replicates.empty()) return {0, 0};
  std::sort(replicates.begin(), replicates.end());
  auto at = [&](double q) {
    auto idx = static_cast<std::size_t>(q * static_cast<double>(replicates.size() - 1));
    return replicates[idx];
  };
  return {at((1 - confidence) / 2), at((1 + confidence) / 2)};
}

// A table up to 29, then the Cornish-Fisher expansion around the normal's (error < 1e-3).
double student_t_975(std::size_t df) {
  static constexpr double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045};
  if (df == 0) return std::numeric_limits<double>::infinity();
  if (df <= std::size(kTable)) return kTable[df - 1];
  const double z = 1.959964, v = static_cast<double>(df), z3 = z * z * z, z5 = z3 * z * z;
  return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v);
}

// P(0 < T < x) by Simpson's rule on the density, in u = atan(t / sqrt(df)),
// where it is cos(u)^(df - 1) times a constant: smooth and bounded on
// [0, pi/2) for df >= 1, so a few hundred steps are exact to ~1e-9.
namespace {
double t_half_mass(double x, double df) {
  const double c = std::exp(std::lgamma((df + 1) / 2) - std::lgamma(df / 2) - std::lgamma(0.5));
  const double top = std::atan(x / std::sqrt(df));
  constexpr int kSteps = 400;  // even
  const double h = top / kSteps;
  double sum = 0;
  for (int i = 0; i <= kSteps; ++i) {
    const double f = std::pow(std::cos(i * h), df - 1);
    sum += f * (i == 0 || i == kSteps ? 1 : i % 2 ? 4 : 2);
  }
  return c * sum * h / 3;
}
}  // namespace

double student_t_quantile(double p, double df) {
  if (!(df > 0)) return std::numeric_limits<double>::infinity();
  if (p <= 0.5) return p == 0.5 ? 0 : -student_t_quantile(1 - p, df);
  if (p >= 1) return std::numeric_limits<double>::infinity();
  // Bisection on the monotone half mass; the t quantile lies below the
  // Cauchy's (df = 1) for every df >= 1, and df < 1 is widened to 1.
  const double want = p - 0.5, nu = std::max(df, 1.0);
  double lo = 0, hi = std::tan(3.14159265358979323846 * want) + 1;
  for (int i = 0; i < 100 && hi - lo > 1e-9 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (t_half_mass(mid, nu) < want ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace inferprof
