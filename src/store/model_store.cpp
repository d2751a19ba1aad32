// The model store: memory -> Redis -> remote, verified against the remote's
// metadata, with the tiers above filled on the way back.
//
// What is verified: every byte that comes from Redis or the remote is hashed
// (sha256) and compared with the remote's meta.json before it is returned or
// cached; the memory tier holds only bytes that passed, so a memory hit is
// not hashed again. A Redis copy that fails (a chunk checksum, or the sha256)
// is counted as corrupt and the remote serves instead, as is a manifest whose
// size is not the metadata's (checked before anything is allocated); remote
// bytes that fail are an error and nothing is cached.
//
// Concurrency: one mutex guards the memory tier, the counters and a map of
// loads in flight. The first fetch of a missing model loads it outside the
// lock; fetches of the same model meanwhile wait for that load instead of
// starting their own, so N replicas' threads cost the remote one transfer.
#include <fmt/format.h>
#include <xxhash.h>

#include <future>
#include <mutex>
#include <unordered_map>

#include "cache/policy_cache.hpp"
#include "inferprof/error.hpp"
#include "store/store_detail.hpp"

namespace inferprof {
namespace {

CacheKey memory_key(const std::string& ref) {
  XXH128_hash_t h = XXH3_128bits(ref.data(), ref.size());
  return CacheKey{h.high64, h.low64};
}

struct Entry {
  std::shared_ptr<const std::string> bytes;
  ModelMeta meta;
};
using EntryPtr = std::shared_ptr<const Entry>;

struct Loaded {
  EntryPtr entry;
  StoreTier tier = StoreTier::remote;
  Nanos fetch_ns = 0, verify_ns = 0;
};

}  // namespace

struct ModelStore::Impl {
  explicit Impl(StoreOptions o)
      : options(std::move(o)),
        remote(open_remote_store(options.remote_url)),
        memory(Policy::lru, options.memory_max_models, options.memory_max_bytes, 0) {
    if (!options.redis_url.empty())
      redis = std::make_unique<store_detail::RedisModelTier>(
          options.redis_url, options.redis_namespace, options.redis_chunk_bytes, options.zstd, options.zstd_level);
  }

  ModelRef resolve(const ModelRef& ref) {
    if (!ref.version.empty()) return ref;
    return ModelRef{ref.name, store_detail::newest_version(*remote, ref.name)};
  }

  // Redis, then the remote; throws on a remote failure or a sha256 mismatch.
  Loaded load(const ModelRef& ref) {
    const std::string name = ref.str();
    ModelMeta meta = remote->meta(ref);
    Loaded out;
    Nanos t0 = now_ns();
    if (redis) {
      auto bytes = std::make_shared<std::string>();
      std::string why;
      auto outcome = redis->get(name, meta.size, bytes.get(), &why);
      Nanos t1 = now_ns();
      if (outcome == store_detail::RedisModelTier::Outcome::hit) {
        bool ok = bytes->size() == meta.size && sha256_hex(*bytes) == meta.sha256;
        Nanos t2 = now_ns();
        if (ok) {
          count([](StoreCounters& c) { ++c.redis_hits; });
          out.entry = std::make_shared<const Entry>(Entry{std::move(bytes), meta});
          out.tier = StoreTier::redis;
          out.fetch_ns = t1 - t0;
          out.verify_ns = t2 - t1;
          return out;
        }
        // An older upload of this version, or damage the checksums missed.
        count([](StoreCounters& c) { ++c.redis_corrupt; });
      } else if (outcome == store_detail::RedisModelTier::Outcome::corrupt) {
        count([](StoreCounters& c) { ++c.redis_corrupt; });
      } else if (outcome == store_detail::RedisModelTier::Outcome::error) {
        count([](StoreCounters& c) { ++c.redis_errors; });
      }
      t0 = now_ns();
    }
    auto bytes = std::make_shared<const std::string>(remote->fetch(ref, meta.size));
    Nanos t1 = now_ns();
    count([](StoreCounters& c) { ++c.remote_fetches; });
    std::string got = sha256_hex(*bytes);
    Nanos t2 = now_ns();
    if (got != meta.sha256 || bytes->size() != meta.size) {
      count([](StoreCounters& c) { ++c.verify_failures; });
      throw runtime_failure(fmt::format(
          "{}: sha256 mismatch: the metadata in {} says {} ({} bytes), the model fetched hashes to {} ({} bytes); "
          "nothing was cached",
          name, remote->url(), meta.sha256, meta.size, got, bytes->size()));
    }
    if (redis) {
      std::string why;
      if (!redis->put(name, *bytes, meta.sha256, &why)) count([](StoreCounters& c) { ++c.redis_errors; });
    }
    out.entry = std::make_shared<const Entry>(Entry{std::move(bytes), std::move(meta)});
    out.tier = StoreTier::remote;
    out.fetch_ns = t1 - t0;
    out.verify_ns = t2 - t1;
    return out;
  }

  template <class Fn>
  void count(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mu);
    fn(counters);
  }

  FetchedModel fetch(const ModelRef& requested) {
    const Nanos start = now_ns();
    ModelRef ref = resolve(requested);
    const std::string name = ref.str();
    const CacheKey key = memory_key(name);
    std::shared_future<Loaded> pending;
    std::promise<Loaded> mine;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (EntryPtr* hit = memory.get(key, now_ns())) {
        ++counters.memory_hits;
        return FetchedModel{ref, (*hit)->bytes, (*hit)->meta, StoreTier::memory, now_ns() - start, 0};
      }
      if (auto it = in_flight.find(name); it != in_flight.end()) {
        pending = it->second;
      } else {
        in_flight.emplace(name, mine.get_future().share());
      }
    }
    if (pending.valid()) {
      // Another thread is loading it: its result (or its error) is ours.
      const Loaded& l = pending.get();
      return FetchedModel{ref, l.entry->bytes, l.entry->meta, l.tier, now_ns() - start, 0};
    }
    Loaded loaded;
    try {
      loaded = load(ref);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      in_flight.erase(name);
      mine.set_exception(std::current_exception());
      throw;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      try {
        // Into memory before leaving in_flight, so no fetch can miss both.
        memory.put(key, loaded.entry, loaded.entry->bytes->size(), now_ns());
      } catch (...) {
        // Not cached (out of memory): the bytes are still good to serve.
      }
      in_flight.erase(name);
    }
    mine.set_value(loaded);
    return FetchedModel{ref, loaded.entry->bytes, loaded.entry->meta, loaded.tier, loaded.fetch_ns, loaded.verify_ns};
  }

  StoreOptions options;
  std::unique_ptr<RemoteStore> remote;
  std::unique_ptr<store_detail::RedisModelTier> redis;
  std::mutex mu;
  PolicyCache<EntryPtr> memory;
  std::unordered_map<std::string, std::shared_future<Loaded>> in_flight;
  StoreCounters counters;
};

ModelStore::ModelStore(StoreOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
ModelStore::~ModelStore() = default;

FetchedModel ModelStore::fetch(const ModelRef& ref) {
  return impl_->fetch(ref);
}

void ModelStore::prefetch(const ModelRef& ref) {
  impl_->fetch(ref);
}

void ModelStore::evict(const ModelRef& ref) {
  if (ref.version.empty()) throw bad_input(fmt::format("model store: evict needs NAME@VERSION, got '{}'", ref.name));
  const std::string name = ref.str();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->memory.erase(memory_key(name));
  }
  std::string why;
  if (impl_->redis && !impl_->redis->evict(name, &why)) impl_->count([](StoreCounters& c) { ++c.redis_errors; });
}

StoreCounters ModelStore::counters() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->counters;
}

RemoteStore& ModelStore::remote() {
  return *impl_->remote;
}

}  // namespace inferprof
