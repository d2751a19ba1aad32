#include "base/histogram.hpp"

#include <algorithm>
#include <cmath>

namespace inferprof::report {

Histogram::Histogram() : buckets_(kBuckets, 0) {
  exact_.reserve(kExact);
}

std::size_t Histogram::index_of(std::int64_t ns) noexcept {
  const auto v = static_cast<std::uint64_t>(ns);
  if (v < kLinear) return static_cast<std::size_t>(v);
  const int msb = 63 - __builtin_clzll(v);
  const int shift = msb - kSubBits;                            // >= 1 here
  const auto mantissa = static_cast<std::size_t>(v >> shift);  // in [kSub, 2 * kSub)
  return kLinear + static_cast<std::size_t>(shift - 1) * kSub + (mantissa - kSub);
}

double Histogram::midpoint(std::size_t index) noexcept {
  if (index < kLinear) return static_cast<double>(index);
  const std::size_t j = index - kLinear;
  const int shift = static_cast<int>(j / kSub) + 1;
  const std::uint64_t lower = static_cast<std::uint64_t>(j % kSub + kSub) << shift;
  const std::uint64_t width = std::uint64_t{1} << shift;
  return static_cast<double>(lower) + static_cast<double>(width - 1) / 2.0;
}

void Histogram::record(std::int64_t ns) noexcept {
  if (count_ == 0) {
    min_ = max_ = ns;
  } else {
    min_ = std::min(min_, ns);
    max_ = std::max(max_, ns);
  }
  ++count_;
  sum_ += ns;
  if (count_ <= kExact) exact_.push_back(ns);
  if (ns < 0)
    ++negative_;
  else
    ++buckets_[index_of(ns)];
}

void Histogram::merge(const Histogram& other) noexcept {
  if (other.count_ == 0) return;
  if (count_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  if (count_ + other.count_ <= kExact) exact_.insert(exact_.end(), other.exact_.begin(), other.exact_.end());
  count_ += other.count_;
  sum_ += other.sum_;
  negative_ += other.negative_;
  for (std::size_t i = 0; i < kBuckets; ++i)
    buckets_[i] += other.buckets_[i];
}

std::uint64_t nearest_rank(double q, std::uint64_t n) noexcept {
  if (n == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The epsilon keeps q * n from landing one rank high when it is an integer
  // that binary floating point cannot quite represent (0.29 * 100).
  auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(n) - 1e-9));
  return std::clamp<std::uint64_t>(rank, 1, n);
}

double Histogram::quantile(double q) const noexcept {
  if (count_ == 0) return 0;
  const std::uint64_t rank = nearest_rank(q, count_);
  if (count_ <= kExact) {
    std::vector<std::int64_t> sorted = exact_;
    const auto nth = sorted.begin() + static_cast<std::ptrdiff_t>(rank - 1);
    std::nth_element(sorted.begin(), nth, sorted.end());
    return static_cast<double>(*nth);
  }
  if (rank <= negative_) return static_cast<double>(min_);
  std::uint64_t seen = negative_;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::clamp(midpoint(i), static_cast<double>(min_), static_cast<double>(max_));
  }
  return static_cast<double>(max_);
}

}  // namespace inferprof::report
