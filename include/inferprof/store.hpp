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

#include "inferprof/timing.hpp"

namespace inferprof {

// "resnet@v2" -> {name "resnet", version "v2"}; "resnet" -> version empty
// (the current one). Names and versions: [A-Za-z0-9._-]+, not "." or "..".
struct ModelRef {
  std::string name;
  std::string version;      // empty: "whatever is current"
  std::string str() const;  // "name@version" or "name"
};
// Throws Error(bad_input) starting with `what`: "--model foo@: expected NAME@VERSION ...".
ModelRef parse_model_ref(std::string_view text, std::string_view what);

// What the remote keeps next to each model (ROOT/name/version/meta.json).
struct ModelMeta {
  std::string name, version;
  std::uint64_t size = 0;
  std::string sha256;   // 64 lowercase hex digits
  std::string created;  // ISO 8601 UTC, "2026-11-30T01:02:03Z"
};

std::string sha256_hex(std::string_view bytes);

// A remote store: the source of truth. file:// supports put/remove; http(s)://
// is read-only (GET ROOT/name/version/model.pt and meta.json).
class RemoteStore {
 public:
  virtual ~RemoteStore() = default;
  virtual std::string url() const = 0;
  // Throws Error(bad_input) "URL: no model NAME@VERSION" when absent,
  // Error(runtime) for I/O or HTTP errors (with the status code).
  virtual ModelMeta meta(const ModelRef& ref) = 0;
  virtual std::string fetch(const ModelRef& ref) = 0;                 // the model bytes, not verified
  virtual std::vector<ModelMeta> list() = 0;                          // sorted by name, then created
  virtual void put(const ModelRef& ref, std::string_view bytes) = 0;  // writes model + meta atomically
  virtual bool remove(const ModelRef& ref) = 0;
};
// "file:///srv/models", "/srv/models" (a plain folder), "http://127.0.0.1:8000/models".
// Throws Error(bad_input) for an unsupported scheme.
std::unique_ptr<RemoteStore> open_remote_store(const std::string& url);

// Which tier served a fetch.
enum class StoreTier : std::uint8_t { memory, redis, remote };
std::string_view store_tier_name(StoreTier t);

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

// Redis pub/sub for model updates between replicas: publish on one connection,
// a background thread subscribed on another calls `on_update` per message.
class UpdateChannel {
 public:
  using Handler = std::function<void(const ModelRef&)>;
  // Throws Error(runtime) when Redis cannot be reached.
  UpdateChannel(const std::string& redis_url, std::string channel, Handler on_update);
  ~UpdateChannel();  // unsubscribes and joins
  UpdateChannel(const UpdateChannel&) = delete;
  UpdateChannel& operator=(const UpdateChannel&) = delete;
  void publish(const ModelRef& ref);
  // Blocks until the subscription is live (so no message published after it is missed).
  void wait_subscribed();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferprof
