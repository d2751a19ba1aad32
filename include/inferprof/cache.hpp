#pragma once
// Cache tiers (docs/caches.md): keys, tier specs, the binary tensor
// value format, the in-process tier and the remote backends (Redis, LMDB).
// No libtorch here: values are opaque byte strings; the pipeline converts.
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/enum_names.hpp"
#include "inferprof/timing.hpp"
#include "inferprof/trace.hpp"

namespace inferprof {

// 128-bit XXH3 of the parts that identify a value.
struct CacheKey {
  std::uint64_t hi = 0, lo = 0;
  bool operator==(const CacheKey& o) const noexcept { return hi == o.hi && lo == o.lo; }
  bool operator!=(const CacheKey& o) const noexcept { return !(*this == o); }
};
struct CacheKeyHash {
  std::size_t operator()(const CacheKey& k) const noexcept {
    return static_cast<std::size_t>(k.lo ^ (k.hi * 0x9E3779B97F4A7C15ull));
  }
};
// L1/L2: model version + input key. A new version changes every key. The top
// 32 bits of `hi` are version_tag(model_version), so a tier can drop one
// version's results (invalidate) without a list of its keys; the other 96 bits
// are the hash of both.
CacheKey result_key(std::string_view model_version, std::string_view input_key);
std::uint32_t version_tag(std::string_view model_version);
// L3: preprocessing config + input key. A changed profile changes every key.
CacheKey preprocessed_key(std::string_view preprocess_fingerprint, std::string_view input_key);
std::string to_hex(const CacheKey& key);  // 32 lowercase hex digits

// Eviction policies; src/cache/policy/<name>.hpp states each one's semantics.
enum class Policy : std::uint8_t { lru, lfu, fifo, ttl, clock, sieve, s3fifo, arc, wtinylfu, twoq, slru };
std::string_view policy_name(Policy p);
std::optional<Policy> parse_policy(std::string_view name);
template <>
struct EnumNames<Policy> {
  static constexpr std::array<std::string_view, 11> names{"lru",    "lfu", "fifo",     "ttl", "clock", "sieve",
                                                          "s3fifo", "arc", "wtinylfu", "2q",  "slru"};
};

// The parameters some policies take, written after the name in a spec:
// "s3fifo(small=0.2,threshold=1)". Defaults are libCacheSim's.
struct PolicyParams {
  double small = 0.10;            // s3fifo: the small FIFO's share of the capacity, in [0, 1)
  double ghost = 0.90;            // s3fifo: the ghost's size as a share of the capacity, in [0, 4]
  unsigned threshold = 2;         // s3fifo: uses in small that move an entry to main, 1..255
  unsigned bits = 1;              // clock: bits of the use counter, 1..8
  double window = 0.01;           // wtinylfu: the window LRU's share of the capacity, in [0, 1)
  double protected_share = 0.80;  // wtinylfu: protected's share of the main SLRU, in [0, 1]
  double in_share = 0.25;         // 2q: the A1in FIFO's share of the capacity, in [0, 1)
  double out_share = 0.50;        // 2q: the A1out ghost's size as a share of the capacity, in [0, 4]
  unsigned segments = 4;          // slru: LRU segments, 1..16
  bool operator==(const PolicyParams& o) const noexcept {
    return small == o.small && ghost == o.ghost && threshold == o.threshold && bits == o.bits && window == o.window &&
           protected_share == o.protected_share && in_share == o.in_share && out_share == o.out_share &&
           segments == o.segments;
  }
};
// "NAME" or "NAME(KEY=VALUE,...)" with the keys `policy` takes. `what` starts
// every message. Throws Error(bad_input).
Policy parse_policy_spec(std::string_view text, PolicyParams& params, std::string_view what);
// The spelling parse_policy_spec reads back: "s3fifo(small=0.2)"; the
// parameters left at their defaults are omitted.
std::string policy_label(Policy p, const PolicyParams& params);

// One tier's configuration, from the profile's [cache.l1] ... or the command line.
// The tiers a request walks, in order: L1 and L2 hold results, L3 preprocessed inputs.
enum class CacheLevel : std::uint8_t { l1, l2, l3 };
template <>
struct EnumNames<CacheLevel> {
  static constexpr std::array<std::string_view, 3> names{"l1", "l2", "l3"};
};
// Where a tier's entries live: this process, a Redis server, an LMDB folder.
enum class TierBackend : std::uint8_t { memory, redis, lmdb };
template <>
struct EnumNames<TierBackend> {
  static constexpr std::array<std::string_view, 3> names{"memory", "redis", "lmdb"};
};

struct TierSpec {
  CacheLevel tier = CacheLevel::l1;
  Policy policy = Policy::lru;
  PolicyParams params;
  std::uint64_t max_entries = 0;  // 0: no count limit
  std::uint64_t max_bytes = 0;    // 0: no byte limit
  double ttl_s = 0;               // > 0: entries expire (policy ttl needs it; others may use it too)
  TierBackend backend = TierBackend::memory;
  std::string location;  // redis URL, or LMDB folder
};
// Tier spec grammar (the text after "--tier l1=", or a profile's policy string):
//
//   SPEC     := POLICY ":" CAPACITY [ ":" TTL ]
//   POLICY   := NAME [ "(" KEY "=" VALUE { "," KEY "=" VALUE } ")" ]
//   NAME     := lru | lfu | fifo | ttl | clock | sieve | s3fifo | arc | wtinylfu | 2q | slru
//   KEY      clock: bits; s3fifo: small, ghost, threshold; wtinylfu: window, protected;
//            2q: in, out; slru: segments
//   CAPACITY := LIMIT [ "," LIMIT ]     at most one entry count and one byte size;
//                                       with both, entries are evicted until both hold
//   LIMIT    := COUNT                   entries, a positive integer: 10000
//             | SIZE                    bytes, a positive integer and a unit: 64MB
//   SIZE     units: B, KB, MB, GB, TB (powers of 1024; KiB, MiB, GiB, TiB mean the
//              same; any letter case)
//   TTL      := NUMBER UNIT             ms, s, m or h: 500ms, 30s, 1.5m, 2h
//
// e.g. "lru:10000", "lfu:1000000", "fifo:500", "lru:64MB", "lru:10000,64MB",
// "ttl:10000:30s", "lru:10000:5m", "s3fifo:10000", "s3fifo(small=0.2):64MB",
// "clock(bits=2):5000". Policy ttl needs a TTL; the others may take
// one as an extra bound (an entry expires TTL after its value was last put).
// `tier` must be l1, l2 or l3. `what` says where the spec came from and starts
// every message, e.g. "--tier l1=lru:abc: expected POLICY:CAPACITY[:TTL], e.g.
// lru:10000, lfu:64MB, ttl:10000:30s". Throws Error(bad_input).
// The result is in memory; the caller sets backend and location.
TierSpec parse_tier_spec(std::string_view tier, std::string_view spec, std::string_view what);
// The pieces of the grammar, for callers that read them separately (a
// profile's ttl = "30s", max_bytes = "64MB"). nullopt when malformed, zero,
// or too large (TTL over 10^9 s, SIZE over 2^64-1 bytes).
std::optional<double> parse_ttl_s(std::string_view text);
// A TTL of zero ("0s", "0.0ms"): refused everywhere, a spec's ":0s" and a
// profile's ttl = 0 alike; no TTL (entries never expire) is spelt by leaving it out.
bool is_zero_ttl(std::string_view text);
std::optional<std::uint64_t> parse_byte_size(std::string_view text);
// Checks a spec built without parse_tier_spec (e.g. from a profile table):
// ttl_s finite and >= 0, policy ttl with ttl_s > 0. Throws Error(bad_input)
// starting with `what`.
void validate_tier_spec(const TierSpec& spec, std::string_view what);

// Counters of one tier. Hits + misses == lookups, always.
struct TierStats {
  std::uint64_t lookups = 0, hits = 0, misses = 0, inserts = 0, evictions = 0, expirations = 0;
  std::uint64_t errors = 0;              // backend failures (each also counted as a miss or a skipped insert)
  std::uint64_t corrupt = 0;             // values that failed their checksum (counted as misses)
  std::uint64_t entries = 0, bytes = 0;  // held at the end
  bool degraded = false;                 // the backend failed during the run
};

// ---- Tensor values -------------------------------------------------------
// Compact binary format, all integers little-endian:
//   "IPTB" | version u8 (1) | dtype u8 | rank u8 (<= 16) | reserved u8 (0) |
//   rank x i64 dims | u64 byte count | bytes | u64 XXH3-64 of everything before it
// The 8-byte header keeps the tensor bytes 8-aligned relative to the blob. A
// bad checksum is a miss, never a wrong result.
inline constexpr std::size_t kMaxTensorRank = 16;
struct TensorView {
  DType dtype = DType::float32;
  std::vector<std::int64_t> shape;
  std::string_view bytes;  // points into the blob it was decoded from
};
// Throws Error(runtime) for a rank over 16, a negative dimension, or nbytes
// other than numel * dtype_size (a tensor that cannot be cached as given).
std::string encode_tensor(DType dtype, const std::vector<std::int64_t>& shape, const void* data, std::size_t nbytes);
// nullopt (with `why` set) when the blob is truncated, of another format, or its
// checksum fails. `why` names the failed check: "truncated ...", "bad magic ...",
// "unsupported version ...", "unknown dtype ...", "rank ...", "size mismatch ...",
// "checksum mismatch ...".
std::optional<TensorView> decode_tensor(std::string_view blob, std::string* why = nullptr);

// Several tensors (a model's tuple, list or dict output; a request's several
// preprocessed inputs) in one value:
//   "IPTS" | version u8 (1) | kind u8 | reserved u16 (0) | count u32 (<= 1024) | reserved u32 (0) |
//   count x (u64 name length (<= 4096) | name, zero-padded to 8 | u64 blob length | IPTB blob, zero-padded to 8) |
//   u64 XXH3-64 of everything before it
// Each tensor stays 8-aligned relative to the value. A single tensor is
// stored as a plain IPTB blob, as before this format existed.
inline constexpr std::size_t kMaxTensorSetSize = 1024;
inline constexpr std::size_t kMaxTensorNameBytes = 4096;
struct TensorSet {
  enum class Kind : std::uint8_t { single, list, tuple, dict };
  Kind kind = Kind::single;
  std::vector<std::string> names;  // dict keys (or the forward's argument names); empty strings otherwise
  std::vector<TensorView> tensors;
};
struct TensorPart {
  std::string name;
  DType dtype = DType::float32;
  std::vector<std::int64_t> shape;
  const void* data = nullptr;
  std::size_t nbytes = 0;
};
// kind single needs exactly one part (and writes a plain IPTB blob). Throws
// Error(runtime) as encode_tensor does, or for too many parts or too long a name.
std::string encode_tensors(TensorSet::Kind kind, const std::vector<TensorPart>& parts);
// Either format; nullopt (with `why` set) for anything decode_tensor would
// refuse, in the set or in any of its tensors.
std::optional<TensorSet> decode_tensors(std::string_view blob, std::string* why = nullptr);

using Blob = std::shared_ptr<const std::string>;

// ---- Backends ------------------------------------------------------------
// Thrown by a remote backend when the server fails; the tier that owns the
// backend counts it, marks itself degraded, and falls through to compute.
struct BackendError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A shared byte store behind a tier (Redis, LMDB). Thread-safe.
class BlobBackend {
 public:
  virtual ~BlobBackend() = default;
  virtual std::string describe() const = 0;                         // for reports; never contains a password
  virtual std::optional<std::string> get(const CacheKey& key) = 0;  // throws BackendError
  virtual void put(const CacheKey& key, std::string_view value, double ttl_s) = 0;  // throws BackendError
  virtual void clear() = 0;             // remove everything this run's namespace holds
  virtual std::uint64_t entries() = 0;  // held now, in this namespace
  virtual std::uint64_t bytes() = 0;    // value bytes held now, in this namespace
  // Removes the result keys of one model version (result_key's tag); returns
  // how many. Backends that hold no results (LMDB: L3 only) remove nothing.
  virtual std::uint64_t erase_version(std::uint32_t /*tag*/) { return 0; }
  // One answer per key, in order (nullopt: absent). Redis pipelines the GETs
  // (one round trip per 256 keys); the default asks get() one by one.
  virtual std::vector<std::optional<std::string>> get_many(const std::vector<CacheKey>& keys) {
    std::vector<std::optional<std::string>> out;
    out.reserve(keys.size());
    for (const CacheKey& k : keys)
      out.push_back(get(k));
    return out;
  }
};

// `url`: redis://[:password@]host:port[/db] or unix:///path.sock; a password
// may also come from INFERPROF_REDIS_PASSWORD. Keys are "inferprof:<ns>:<hex>".
// Throws Error(runtime) if the server cannot be reached or refuses AUTH,
// Error(bad_input) for a malformed URL; messages never show the password.
std::unique_ptr<BlobBackend> make_redis_backend(const std::string& url, const std::string& name_space);
// An LMDB environment in folder `path` (created if missing), map size `map_bytes`.
std::unique_ptr<BlobBackend> make_lmdb_backend(const std::string& path, const std::string& name_space,
                                               std::uint64_t map_bytes = 1ull << 30);

// ---- Tiers ---------------------------------------------------------------
// A cache tier as the replay uses it: thread-safe get/put of blobs, with its
// statistics. Memory tiers apply the policy themselves; remote tiers rely on
// the backend (TTL via the backend's expiry) and never throw BackendError.
class CacheTier {
 public:
  virtual ~CacheTier() = default;
  virtual const TierSpec& spec() const = 0;
  virtual Blob get(const CacheKey& key, Nanos now) = 0;  // nullptr: miss
  virtual void put(const CacheKey& key, Blob value, Nanos now) = 0;
  virtual TierStats stats() = 0;
  virtual void clear() = 0;  // empty, and forget statistics
  // Drops every result of the model version with this tag (after an update
  // made it old); returns how many entries went. Never throws BackendError.
  virtual std::uint64_t invalidate(std::uint32_t version_tag) = 0;
};
// In-process: the spec's policy and limits (src/cache/policy_cache.hpp has the
// exact semantics), one mutex, so at concurrency 1 it matches `simulate`
// exactly. An entry's size is its blob's size. TierStats::inserts counts new
// keys and replaced values.
// Both factories throw Error(bad_input) "cache tier <tier>: ..." for a spec
// whose policy cannot work (policy ttl without ttl_s > 0, a bad ttl_s).
std::unique_ptr<CacheTier> make_memory_tier(const TierSpec& spec);
// Over a backend: BackendError is counted (errors, degraded) and is a miss or
// a skipped insert; a value that fails decode_tensor is counted (corrupt and
// errors) and is a miss -- so values stored here must be encode_tensor(s) blobs.
// puts pass spec.ttl_s to the backend; clear() also resets the counters.
std::unique_ptr<CacheTier> make_backend_tier(const TierSpec& spec, std::unique_ptr<BlobBackend> backend);

}  // namespace inferprof
