#pragma once
// The versioned model store (docs/model-store.md): models
// addressed as name@version, served from memory -> Redis -> a remote store
// (file:// folder or http(s):// URL), with sha256 verification against the
// remote's metadata. No libtorch here: the store deals in bytes; the pipeline
// deserialises. hiredis only in the Redis tier, libcurl only in the HTTP
// remote, OpenSSL only where sha256 is computed.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/model_ref.hpp"
#include "inferprof/timing.hpp"
#include "inferprof/update_channel.hpp"

namespace inferprof {

// "file:///srv/models", "/srv/models" (a plain folder), "http://127.0.0.1:8000/models".
// Throws Error(bad_input) for an unsupported scheme.
std::unique_ptr<RemoteStore> open_remote_store(const std::string& url);

struct StoreOptions {
  std::string remote_url;  // required
  std::uint64_t memory_max_models = 4;
  std::uint64_t memory_max_bytes = 0;  // 0: no byte limit
  std::string redis_url;               // empty: no Redis tier
  std::string redis_namespace = "inferprof:models";
  std::uint64_t redis_chunk_bytes = 4 << 20;
  bool zstd = false;  // compress chunks in Redis
  int zstd_level = 3;
};

struct StoreCounters {
  std::uint64_t memory_hits = 0, redis_hits = 0, remote_fetches = 0;
  std::uint64_t redis_errors = 0;     // Redis down or erroring: fell back to the remote
  std::uint64_t redis_corrupt = 0;    // a chunk missing or failing its checksum: fell back
  std::uint64_t verify_failures = 0;  // sha256 mismatches (each also threw)
};

struct FetchedModel {
  ModelRef ref;  // version resolved
  std::shared_ptr<const std::string> bytes;
  ModelMeta meta;
  StoreTier tier = StoreTier::remote;
  Nanos fetch_ns = 0, verify_ns = 0;  // for the load stage's child spans
};

// memory -> Redis -> remote, filling the tiers above on the way back. Thread-safe.
class ModelStore {
 public:
  explicit ModelStore(StoreOptions options);
  ~ModelStore();
  ModelStore(const ModelStore&) = delete;
  ModelStore& operator=(const ModelStore&) = delete;

  // Fetches and verifies (sha256 against meta; a mismatch throws
  // Error(runtime) "NAME@VERSION: sha256 mismatch ..." and nothing is cached).
  // An empty version resolves to the newest by `created` in the remote.
  FetchedModel fetch(const ModelRef& ref);
  // Brings the model into memory (and Redis) without returning it: `preload`.
  void prefetch(const ModelRef& ref);
  // Drops a version from memory and Redis (after an update made it old).
  void evict(const ModelRef& ref);
  StoreCounters counters() const;
  RemoteStore& remote();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferprof
