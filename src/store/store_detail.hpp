#pragma once
// Internal to the store module: the metadata's JSON, the two remotes'
// factories, and the Redis tier of the model store.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/cache.hpp"
#include "inferprof/store.hpp"
#include "model_ref/model_ref.hpp"

namespace inferprof::store_detail {

std::unique_ptr<RemoteStore> make_file_store(const std::string& url, const std::string& root);
std::unique_ptr<RemoteStore> make_http_store(const std::string& url);

// Model bytes in Redis, over the cache's BlobBackend: a manifest (size, chunk
// size and count, sha256, zstd flag, per-chunk XXH3-64 of the stored bytes,
// itself checksummed) and the chunks, each under a key derived with XXH3 from
// name@version and the chunk index. Chunks are written first and the manifest
// last, so a reader never finds a manifest whose chunks were never written.
class RedisModelTier {
 public:
  enum class Outcome { hit, miss, error, corrupt };
  RedisModelTier(const std::string& url, const std::string& name_space, std::uint64_t chunk_bytes, bool zstd,
                 int zstd_level);
  // Over any backend (the fuzz target's, in memory).
  RedisModelTier(std::unique_ptr<BlobBackend> backend, std::uint64_t chunk_bytes, bool zstd, int zstd_level);
  // `why` says what went wrong for error and corrupt. A manifest claiming other
  // than `expected_size` bytes (the remote's metadata) is corrupt.
  Outcome get(const std::string& ref, std::uint64_t expected_size, std::string* bytes, std::string* why);
  // false (with `why`) when Redis failed.
  bool put(const std::string& ref, std::string_view bytes, const std::string& sha256, std::string* why);
  // Overwrites the manifest and chunks with empty values that expire at once
  // (BlobBackend has no delete). false when Redis failed.
  bool evict(const std::string& ref, std::string* why);
  std::string describe() const { return backend_->describe(); }

 private:
  std::unique_ptr<BlobBackend> backend_;
  std::uint64_t chunk_bytes_;
  bool zstd_;
  int zstd_level_;
};

// For the fuzz target: `input` read as what a Redis holding one model would
// serve, a manifest followed by its chunks' bytes (each as long as its
// manifest entry says), through RedisModelTier::get with the remote's size the
// manifest's own (1 when it claims over 1 MiB). `reseal` recomputes the chunk
// and manifest checksums first, so that mutated inputs reach past them.
RedisModelTier::Outcome read_stored_model(std::string_view input, bool reseal, std::string* bytes, std::string* why);

}  // namespace inferprof::store_detail
