// The bootstrap machinery compare and diff share (declared in compare.hpp),
// in the base layer so that diff does not depend on replay.
#include <algorithm>
#include <random>

#include "inferprof/compare.hpp"

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

}  // namespace inferprof
