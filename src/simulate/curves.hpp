#pragma once
// The machinery behind miss-ratio curves, shared by run_simulate and the
// public helpers (tests, bench).
#include <cstdint>
#include <memory>
#include <vector>

#include "inferprof/simulate.hpp"
#include "inferprof/timing.hpp"

namespace inferprof {
template <class V>
class PolicyCache;

namespace detail {

struct SimValue {};  // the simulator stores nothing: PolicyCache gives it no room

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
// one cache per cell, the cells split over threads.
class GridRun {
 public:
  GridRun(const PolicyGridSpec& spec, unsigned threads);
  void access(const CacheKey& key, Nanos now, std::uint64_t bytes);
  void reset();                            // the warm-up is over
  void invalidate(std::uint64_t leaving);  // a model update (result tiers)
  bool byte_limits() const noexcept;       // some size is in bytes
  PolicyGridResult finish(const std::optional<SimCosts>& costs);

 private:
  void flush();
  PolicyGridSpec spec_;
  CapacitySweep sweep_;
  std::vector<CacheKey> keys_;
  std::vector<Nanos> times_;
  std::vector<std::uint64_t> sizes_;
  bool sized_ = false;
  double seconds_ = 0;
};

}  // namespace detail
}  // namespace inferprof
