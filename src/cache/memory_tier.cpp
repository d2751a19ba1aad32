// The in-process tier: PolicyCache behind one mutex. One lock, not shards, so
// at concurrency 1 its hits and evictions are exactly what `inferprof
// simulate` computes for the same trace and spec.
#include <mutex>
#include <vector>

#include "cache/policy_cache.hpp"
#include "cache/spec_check.hpp"
#include "inferprof/cache.hpp"

namespace inferprof {

namespace {

// Values that left the cache during this thread's last call. They are freed
// after the lock is released: the last reference to a large blob may be an
// munmap, which must not serialise every other worker. Cleared, never shrunk,
// so a steady state allocates nothing here.
std::vector<Blob>& retired_blobs() {
  thread_local std::vector<Blob> retired;
  return retired;
}

// Points the cache's retired-value sink at this thread's vector for one call.
class RetireScope {
 public:
  RetireScope(PolicyCache<Blob>& cache, std::vector<Blob>& sink) : cache_(cache) { cache_.retire_into(&sink); }
  ~RetireScope() { cache_.retire_into(nullptr); }
  RetireScope(const RetireScope&) = delete;
  RetireScope& operator=(const RetireScope&) = delete;

 private:
  PolicyCache<Blob>& cache_;
};

class MemoryTier final : public CacheTier {
 public:
  explicit MemoryTier(const TierSpec& spec) : spec_(spec), cache_(spec) {}

  const TierSpec& spec() const override { return spec_; }

  Blob get(const CacheKey& key, Nanos now) override {
    Blob out;
    if (cache_.ttl_ns() == 0) {  // without a TTL a get never removes anything
      std::lock_guard<std::mutex> lock(mutex_);
      const Blob* hit = cache_.get(key, now);
      if (hit != nullptr) out = *hit;
      return out;
    }
    std::vector<Blob>& retired = retired_blobs();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      RetireScope scope(cache_, retired);  // a get may expire its entry
      const Blob* hit = cache_.get(key, now);
      if (hit != nullptr) out = *hit;
    }
    retired.clear();
    return out;
  }

  void put(const CacheKey& key, Blob value, Nanos now) override {
    if (!value) return;
    const std::uint64_t bytes = value->size();
    std::vector<Blob>& retired = retired_blobs();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      RetireScope scope(cache_, retired);
      cache_.put(key, std::move(value), bytes, now);
    }
    retired.clear();
  }

  TierStats stats() override {
    std::lock_guard<std::mutex> lock(mutex_);
    const PolicyCacheCounters& c = cache_.counters();
    TierStats s;
    s.hits = c.hits;
    s.misses = c.misses;
    s.lookups = c.hits + c.misses;
    s.inserts = c.inserts + c.replaces;
    s.evictions = c.evictions;
    s.expirations = c.expirations;
    s.entries = cache_.size();
    s.bytes = cache_.bytes();
    return s;
  }

  void clear() override {
    std::lock_guard<std::mutex> lock(mutex_);
    cache_.clear();
    cache_.reset_counters();
  }

  std::uint64_t invalidate(std::uint32_t version_tag) override {
    std::vector<Blob>& retired = retired_blobs();
    std::uint64_t n = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      RetireScope scope(cache_, retired);
      n = cache_.erase_if([version_tag](const CacheKey& k) { return (k.hi >> 32) == version_tag; });
    }
    retired.clear();  // freed outside the lock
    return n;
  }

 private:
  TierSpec spec_;
  std::mutex mutex_;
  PolicyCache<Blob> cache_;
};

}  // namespace

std::unique_ptr<CacheTier> make_memory_tier(const TierSpec& spec) {
  cache_detail::check_policy_limits(spec, "cache tier " + std::string(enum_name(spec.tier)));
  return std::make_unique<MemoryTier>(spec);
}

}  // namespace inferprof
