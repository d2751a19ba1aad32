#pragma once
// NAME@VERSION and what a remote keeps about a version: the language the
// model store (inferprof/store.hpp) and the update channel both speak
// (module model_ref, src/model_ref/; OpenSSL for sha256 only there).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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
  // The model bytes, not verified. `size` is what its meta.json states: a
  // remote that would send more stops there (Error(runtime) naming the URL,
  // the size stated and the bytes received), never reading the rest.
  virtual std::string fetch(const ModelRef& ref, std::uint64_t size) = 0;
  virtual std::vector<ModelMeta> list() = 0;                          // sorted by name, then created
  virtual void put(const ModelRef& ref, std::string_view bytes) = 0;  // writes model + meta atomically
  virtual bool remove(const ModelRef& ref) = 0;
};
// Which tier served a fetch.
enum class StoreTier : std::uint8_t { memory, redis, remote };
std::string_view store_tier_name(StoreTier t);

}  // namespace inferprof
