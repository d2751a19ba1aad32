#pragma once
// A ghost list: keys recently evicted, without values, oldest first. It is a
// PolicyCache of empty values with policy fifo (passed in as `Cache`, since
// the policies are members of PolicyCache itself), sized in the same units as
// the policy that owns it: bytes when the cache has a byte limit, else entries.
#include <cstdint>
#include <memory>

#include "cache/policy/common.hpp"

namespace inferprof::policy {

struct GhostMark {};

template <class Cache>
class Ghost {
 public:
  // capacity 0: unbounded (the owner trims it).
  void open(Units units, std::uint64_t capacity) {
    units_ = units;
    cache_ = std::make_unique<Cache>(Policy::fifo, units.by_bytes ? 0 : capacity, units.by_bytes ? capacity : 0, 0);
  }
  bool enabled() const noexcept { return cache_ != nullptr; }
  // Adds a key (the oldest goes when over capacity).
  void add(const CacheKey& key, std::uint64_t bytes) { cache_->put(key, GhostMark{}, bytes, 0); }
  // Whether the key was there; it is not any more.
  bool take(const CacheKey& key) { return cache_->erase(key); }
  bool contains(const CacheKey& key) const { return cache_->contains(key); }
  void drop_oldest() { cache_->evict_one(); }
  std::uint64_t units() const noexcept { return units_.by_bytes ? cache_->bytes() : cache_->size(); }
  void clear() {
    if (cache_) cache_->clear();
  }

 private:
  Units units_;
  std::unique_ptr<Cache> cache_;
};

}  // namespace inferprof::policy
