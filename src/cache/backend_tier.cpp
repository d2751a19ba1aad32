// A tier over a shared byte store (Redis, LMDB). The store applies its own
// limits and expiry; this layer counts, verifies what comes back, and turns
// every backend failure into a miss or a skipped insert so a dead server
// slows the run down (everything is computed) but never fails it.
#include <atomic>
#include <string>

#include "cache/spec_check.hpp"
#include "inferprof/cache.hpp"

namespace inferprof {

namespace {

class BackendTier final : public CacheTier {
 public:
  BackendTier(const TierSpec& spec, std::unique_ptr<BlobBackend> backend) : spec_(spec), backend_(std::move(backend)) {}

  const TierSpec& spec() const override { return spec_; }

  Blob get(const CacheKey& key, Nanos /*now*/) override {
    std::optional<std::string> value;
    try {
      value = backend_->get(key);
    } catch (const BackendError&) {
      // A server that failed may come back: the next call tries again.
      failed();
      miss();
      return nullptr;
    }
    if (!value) {
      miss();
      return nullptr;
    }
    // Verified here, before any caller sees it: a value damaged in the store
    // or on the way is a miss, never a wrong result.
    if (!decode_tensors(*value)) {
      corrupt_.fetch_add(1, std::memory_order_relaxed);
      errors_.fetch_add(1, std::memory_order_relaxed);
      miss();
      return nullptr;
    }
    hits_.fetch_add(1, std::memory_order_relaxed);
    return std::make_shared<const std::string>(std::move(*value));
  }

  void put(const CacheKey& key, Blob value, Nanos /*now*/) override {
    if (!value) return;
    try {
      backend_->put(key, *value, spec_.ttl_s);
      inserts_.fetch_add(1, std::memory_order_relaxed);
    } catch (const BackendError&) {
      failed();
    }
  }

  TierStats stats() override {
    TierStats s;
    s.hits = hits_.load(std::memory_order_relaxed);
    s.misses = misses_.load(std::memory_order_relaxed);
    s.lookups = s.hits + s.misses;  // from the same two reads: always consistent
    s.inserts = inserts_.load(std::memory_order_relaxed);
    s.errors = errors_.load(std::memory_order_relaxed);
    s.corrupt = corrupt_.load(std::memory_order_relaxed);
    s.degraded = degraded_.load(std::memory_order_relaxed);
    try {
      s.entries = backend_->entries();
      s.bytes = backend_->bytes();
    } catch (const BackendError&) {
      s.entries = 0;
      s.bytes = 0;
    }
    return s;
  }

  std::uint64_t invalidate(std::uint32_t version_tag) override {
    try {
      return backend_->erase_version(version_tag);
    } catch (const BackendError&) {
      failed();
      return 0;
    }
  }

  void clear() override {
    hits_ = 0;
    misses_ = 0;
    inserts_ = 0;
    errors_ = 0;
    corrupt_ = 0;
    degraded_ = false;
    try {
      backend_->clear();
    } catch (const BackendError&) {
      failed();
    }
  }

 private:
  void miss() { misses_.fetch_add(1, std::memory_order_relaxed); }
  void failed() {
    errors_.fetch_add(1, std::memory_order_relaxed);
    degraded_.store(true, std::memory_order_relaxed);
  }

  TierSpec spec_;
  std::unique_ptr<BlobBackend> backend_;
  std::atomic<std::uint64_t> hits_{0}, misses_{0}, inserts_{0}, errors_{0}, corrupt_{0};
  std::atomic<bool> degraded_{false};
};

}  // namespace

std::unique_ptr<CacheTier> make_backend_tier(const TierSpec& spec, std::unique_ptr<BlobBackend> backend) {
  cache_detail::check_policy_limits(spec, "cache tier " + std::string(enum_name(spec.tier)));
  if (!backend) throw std::invalid_argument("make_backend_tier: no backend");
  return std::make_unique<BackendTier>(spec, std::move(backend));
}

}  // namespace inferprof
