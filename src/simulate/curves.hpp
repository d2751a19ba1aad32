#pragma once
// The machinery behind miss-ratio curves, shared by run_simulate and the
// public helpers (tests, bench).
#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "inferprof/simulate.hpp"
#include "inferprof/timing.hpp"

namespace inferprof {
template <class V>
class PolicyCache;

namespace detail {

struct SimValue {};  // the simulator stores nothing: PolicyCache gives it no room

// SHARDS spatial sampling (Waldspurger et al., FAST '15), the one rule the
// one-pass LRU curve and the policy grid share: a key is in the sample when
// the low 24 bits of its hash are below rate x 2^24, so a key is always in or
// always out; bits 24..26 split the sample into eight disjoint sub-samples
// (their spread bounds the sampling error).
struct ShardsSample {
  explicit ShardsSample(double rate_)
      : rate(rate_), threshold(static_cast<std::uint64_t>(std::llround(rate_ * (1 << 24)))) {}
  // One 64-bit identity per key (also what LruStackDistance keys on).
  static std::uint64_t hash(const CacheKey& key) noexcept {
    std::uint64_t h = key.lo ^ (key.hi * 0xD6E8FEB86659FD93ull);
    h ^= h >> 31;
    h *= 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    return h;
  }
  bool keeps(std::uint64_t h) const noexcept { return (h & 0xFFFFFF) < threshold; }
  static std::size_t subsample(std::uint64_t h) noexcept { return static_cast<std::size_t>((h >> 24) & 7); }
  double rate;
  std::uint64_t threshold;
};

// The number of distinct keys from their ShardsSample hashes, in bounded
// memory: exact up to 4,096 keys, then the k-minimum-values estimate (Bar-
// Yossef et al., RANDOM '02), (k - 1) / the k-th smallest hash as a fraction
// of 2^64: about 1.6% standard error.
class DistinctKeys {
 public:
  void add(std::uint64_t h);
  double estimate() const noexcept;

 private:
  static constexpr std::size_t kK = 4096;
  std::set<std::uint64_t> smallest_;  // the k smallest distinct hashes seen
};

// Exact LRU stack distances: a Fenwick tree over last-access times marks the
// one live time of each key, so the distinct keys used since a key's last
// access are one prefix sum away (O(log n) per access).
class LruStackDistance {
 public:
  // 0 for a first access, else the key's stack distance (1: it was the most
  // recent). An LRU cache of C entries hits exactly when 0 < distance <= C.
  std::uint64_t access(std::uint64_t key);
  std::uint64_t distinct() const noexcept { return count_; }

 private:
  // The key -> last-access map: open addressing with linear probing (a slot
  // is empty while its position is 0; positions start at 1), no deletions.
  struct Slot {
    std::uint64_t key = 0;
    std::uint32_t pos = 0;
  };
  Slot& find(std::uint64_t key) {
    std::size_t i = static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
    while (slots_[i].pos != 0 && slots_[i].key != key)
      i = (i + 1) & (slots_.size() - 1);
    return slots_[i];
  }
  void grow();
  void add(std::uint32_t i, int v) {
    for (; i < tree_.size(); i += i & (~i + 1))
      tree_[i] = static_cast<std::uint32_t>(static_cast<int>(tree_[i]) + v);
  }
  std::uint64_t prefix(std::uint32_t i) const {
    std::uint64_t s = 0;
    for (; i > 0; i -= i & (~i + 1))
      s += tree_[i];
    return s;
  }
  void compact();
  std::vector<Slot> slots_ = std::vector<Slot>(1024);
  int shift_ = 64 - 10;
  std::uint64_t count_ = 0;
  std::vector<std::uint32_t> tree_;
  std::uint32_t t_ = 0;
};

// Turns stack distances into hit counts at each capacity; `scale` multiplies
// distances (1 / sampling rate for SHARDS).
struct CurveCounter {
  CurveCounter(std::vector<std::uint64_t> capacities, double scale_)
      : caps(std::move(capacities)), first_hit(caps.size(), 0), scale(scale_) {}
  void record(std::uint64_t distance);
  void reset() {
    std::fill(first_hit.begin(), first_hit.end(), 0);
    requests = 0;
  }
  std::vector<double> hit_ratios() const;
  // SHARDS-adj (Waldspurger et al., FAST '15): a sample that caught more or
  // fewer requests than rate x `all_requests` is corrected at the smallest
  // distance, which removes most of the bias hot keys bring in or leave out.
  std::vector<double> hit_ratios_adjusted(double expected_requests) const;
  std::vector<std::uint64_t> caps;
  std::vector<std::uint64_t> first_hit;
  std::uint64_t requests = 0;
  double scale = 1;
};

// One PolicyCache per spec (a capacity of a curve, a cell of the policy
// grid), fed the same keys; the caches split over threads.
class CapacitySweep {
 public:
  CapacitySweep(Policy policy, double ttl_s, const std::vector<std::uint64_t>& caps, unsigned threads);
  CapacitySweep(const std::vector<TierSpec>& specs, unsigned threads);
  ~CapacitySweep();
  // sizes: each request's entry bytes (nullptr: 0, none known).
  void feed(const CacheKey* keys, const Nanos* now, const std::uint64_t* sizes, std::size_t n);
  void feed(const CacheKey* keys, const Nanos* now, std::size_t n) { feed(keys, now, nullptr, n); }
  void reset_counters();
  // Drops every entry whose key's `hi` is `hi` (a leaving model version).
  void erase_version(std::uint64_t hi);
  std::vector<double> hit_ratios() const;
  const PolicyCache<SimValue>& cache(std::size_t i) const { return *caches_[i]; }
  std::uint64_t requested_bytes(std::size_t i) const { return bytes_[i].requested; }
  std::uint64_t missed_bytes(std::size_t i) const { return bytes_[i].missed; }
  unsigned threads() const noexcept { return threads_; }

 private:
  struct ByteCounts {
    std::uint64_t requested = 0, missed = 0;
  };
  unsigned threads_;
  std::vector<std::unique_ptr<PolicyCache<SimValue>>> caches_;
  std::vector<ByteCounts> bytes_;
};

// The policy grid (--policies x --sizes): accesses are buffered and fed to
// one cache per cell, the cells split over threads. With a sampling rate
// under 1, only the sampled keys' accesses are simulated, by caches of rate x
// each size, and eight more grids (one per disjoint sub-sample, at rate / 8)
// give each cell's error bound.
class GridRun {
 public:
  GridRun(const PolicyGridSpec& spec, unsigned threads, double rate = 1);
  void access(const CacheKey& key, Nanos now, std::uint64_t bytes);
  void reset();                            // the warm-up is over
  void invalidate(std::uint64_t leaving);  // a model update (result tiers)
  bool byte_limits() const noexcept;       // some size is in bytes
  PolicyGridResult finish(const std::optional<SimCosts>& costs);

 private:
  // One grid's caches and the accesses buffered for them.
  struct Stream {
    std::unique_ptr<CapacitySweep> sweep;
    std::vector<CacheKey> keys;
    std::vector<Nanos> times;
    std::vector<std::uint64_t> sizes;
    bool sized = false;
    void push(const CacheKey& key, Nanos now, std::uint64_t bytes) {
      keys.push_back(key);
      times.push_back(now);
      sizes.push_back(bytes);
      sized = sized || bytes != 0;
    }
    void flush();
  };
  void flush();
  GridCell cell(std::size_t i, const std::optional<SimCosts>& costs) const;
  PolicyGridSpec spec_;
  ShardsSample sample_;
  Stream main_;
  std::vector<Stream> subs_;  // with sampling: the eight sub-samples
  std::uint64_t requests_ = 0, sampled_ = 0;
  std::uint64_t bytes_ = 0;  // asked for by all requests
  double seconds_ = 0;
};

}  // namespace detail
}  // namespace inferprof
