#pragma once
// A log-linear histogram of non-negative nanosecond values (HDR-like): exact
// below 256 ns, then 128 sub-buckets per power of two, so a bucket is at most
// 1/128 of its lower bound wide and a quantile read at the bucket's midpoint is
// within 0.4% of the true value. Memory is fixed (~66 KB) whatever the count.
// The first kExact values are also kept as they are, so short runs (and a
// single request) report exact quantiles rather than bucket midpoints.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace inferprof::report {

// A sum of nanosecond values: 128 bits, so that even 2^64 values of up to 2^63 ns (292 years) each cannot
// overflow it. A saved run's µs cells are at most 1e12 µs (1e15 ns; report/saved_run.hpp), so a merge of any
// number of rows sums exactly.
__extension__ typedef __int128 NanoSum;

class Histogram {
 public:
  static constexpr int kSubBits = 7;
  static constexpr std::size_t kSub = std::size_t{1} << kSubBits;  // 128
  static constexpr std::size_t kLinear = 2 * kSub;                 // 0..255 exact
  // The highest bit of a positive int64 is bit 62; each bit past kSubBits adds kSub buckets.
  static constexpr std::size_t kBuckets = kLinear + (62 - kSubBits) * kSub;
  static constexpr std::size_t kExact = 1024;

  Histogram();

  void record(std::int64_t ns) noexcept;
  void merge(const Histogram& other) noexcept;

  std::uint64_t count() const noexcept { return count_; }
  NanoSum sum() const noexcept { return sum_; }
  std::int64_t min() const noexcept { return count_ ? min_ : 0; }  // exact
  std::int64_t max() const noexcept { return count_ ? max_ : 0; }  // exact
  // Nearest-rank quantile, q in [0, 1]; 0 when empty. Clamped to [min, max].
  double quantile(double q) const noexcept;

  static std::size_t index_of(std::int64_t ns) noexcept;
  // Value reported for a bucket: its midpoint.
  static double midpoint(std::size_t index) noexcept;

 private:
  std::vector<std::uint64_t> buckets_;
  std::vector<std::int64_t> exact_;  // the first kExact values, until count_ passes kExact
  // Negative values (overhead's rounding residue) have no bucket; a quantile
  // falling among them reports the exact minimum.
  std::uint64_t negative_ = 0;
  std::uint64_t count_ = 0;
  NanoSum sum_ = 0;
  std::int64_t min_ = 0;
  std::int64_t max_ = 0;
};

// 1-based rank of the q-quantile among n sorted values (nearest-rank method).
std::uint64_t nearest_rank(double q, std::uint64_t n) noexcept;

}  // namespace inferprof::report
