#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cache/policy_cache.hpp"
#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"

using namespace inferprof;

namespace doctest {
template <>
struct StringMaker<Blob> {
  static String convert(const Blob& b) {
    return b ? String(fmt::format("blob of {} bytes", b->size()).c_str()) : String("null blob");
  }
};
}  // namespace doctest

namespace {

// ---- A brute-force model of each policy ------------------------------------
// Written from the semantics in policy_cache.hpp, as plainly as possible: a
// vector of entries, O(n) per operation, victims found by scanning.
class ReferenceCache {
 public:
  ReferenceCache(Policy policy, std::uint64_t max_entries, std::uint64_t max_bytes, Nanos ttl_ns)
      : policy_(policy), max_entries_(max_entries), max_bytes_(max_bytes), ttl_ns_(ttl_ns) {}

  bool get(const CacheKey& key, Nanos now) {
    now_ = std::max(now_, now);
    const auto it = find(key);
    if (it == entries_.end()) {
      ++c.misses;
      return false;
    }
    if (ttl_ns_ != 0 && it->expires <= now_) {
      entries_.erase(it);
      ++c.expirations;
      ++c.misses;
      return false;
    }
    it->last_use = ++tick_;
    ++it->uses;
    ++c.hits;
    return true;
  }

  void put(const CacheKey& key, std::uint64_t bytes, Nanos now) {
    now_ = std::max(now_, now);
    if (ttl_ns_ != 0) {
      for (std::size_t i = 0; i < entries_.size();) {
        if (entries_[i].expires <= now_) {
          entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
          ++c.expirations;
        } else {
          ++i;
        }
      }
    }
    auto it = find(key);
    if (max_bytes_ != 0 && bytes > max_bytes_) {
      if (it != entries_.end()) entries_.erase(it);
      ++c.rejected;
      return;
    }
    if (it != entries_.end()) {
      it->bytes = bytes;
      it->last_use = ++tick_;
      ++it->uses;
      it->last_put = ++tick_;
      it->expires = now_ + ttl_ns_;
      ++c.replaces;
      evict_until(key, 0, 0);
      return;
    }
    evict_until(std::nullopt, 1, bytes);
    Entry e;
    e.key = key;
    e.bytes = bytes;
    e.uses = 1;
    e.last_use = ++tick_;
    e.first_insert = tick_;
    e.last_put = tick_;
    e.expires = now_ + ttl_ns_;
    entries_.push_back(e);
    ++c.inserts;
  }

  bool erase(const CacheKey& key) {
    const auto it = find(key);
    if (it == entries_.end()) return false;
    entries_.erase(it);
    return true;
  }

  bool contains(const CacheKey& key) const {
    return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
  }
  std::size_t size() const { return entries_.size(); }
  std::uint64_t bytes() const {
    std::uint64_t b = 0;
    for (const auto& e : entries_)
      b += e.bytes;
    return b;
  }

  PolicyCacheCounters c;

 private:
  struct Entry {
    CacheKey key;
    std::uint64_t bytes = 0, uses = 0, last_use = 0, first_insert = 0, last_put = 0;
    Nanos expires = 0;
  };

  std::vector<Entry>::iterator find(const CacheKey& key) {
    return std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
  }

  // True if `a` goes before `b`.
  bool before(const Entry& a, const Entry& b) const {
    switch (policy_) {
      case Policy::lru:
        return a.last_use < b.last_use;
      case Policy::lfu:
        return a.uses != b.uses ? a.uses < b.uses : a.last_use < b.last_use;
      case Policy::fifo:
        return a.first_insert < b.first_insert;
      case Policy::ttl:
        return a.last_put < b.last_put;
      default:
        break;  // the other policies have their own models (test_cache_policies.cpp)
    }
    return false;
  }

  void evict_until(std::optional<CacheKey> skip, std::uint64_t add_entries, std::uint64_t add_bytes) {
    while ((max_entries_ != 0 && entries_.size() + add_entries > max_entries_) ||
           (max_bytes_ != 0 && bytes() + add_bytes > max_bytes_)) {
      std::ptrdiff_t victim = -1;
      for (std::size_t i = 0; i < entries_.size(); ++i) {
        if (skip && entries_[i].key == *skip) continue;
        if (victim < 0 || before(entries_[i], entries_[static_cast<std::size_t>(victim)])) {
          victim = static_cast<std::ptrdiff_t>(i);
        }
      }
      REQUIRE(victim >= 0);
      entries_.erase(entries_.begin() + victim);
      ++c.evictions;
    }
  }

  Policy policy_;
  std::uint64_t max_entries_, max_bytes_;
  Nanos ttl_ns_;
  Nanos now_ = std::numeric_limits<Nanos>::min();
  std::uint64_t tick_ = 0;
  std::vector<Entry> entries_;
};

struct Empty {};

// Deterministic across standard libraries (no std distributions).
double unit(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

class KeyDraw {
 public:
  KeyDraw(std::size_t universe, bool zipf) {
    double total = 0;
    for (std::size_t r = 0; r < universe; ++r) {
      total += zipf ? 1.0 / std::pow(static_cast<double>(r + 1), 1.1) : 1.0;
      cdf_.push_back(total);
    }
    for (auto& x : cdf_)
      x /= total;
  }
  std::size_t operator()(std::mt19937_64& rng) const {
    const auto it = std::lower_bound(cdf_.begin(), cdf_.end(), unit(rng));
    return std::min<std::size_t>(static_cast<std::size_t>(it - cdf_.begin()), cdf_.size() - 1);
  }

 private:
  std::vector<double> cdf_;
};

// Hand-built keys (not XXH3 output): the index must cope with them.
CacheKey key_of(std::size_t i) {
  return CacheKey{static_cast<std::uint64_t>(i % 3), static_cast<std::uint64_t>(i)};
}

struct TraceConfig {
  Policy policy;
  std::uint64_t capacity;
  bool zipf;
  enum Limit { entries, bytes, both } limit;
  bool ttl;
  std::uint64_t seed;
};

std::string describe(const TraceConfig& t) {
  static const char* kLimit[] = {"max_entries", "max_bytes", "max_entries+max_bytes"};
  return fmt::format("{} capacity {} {} keys, {}{}, seed {}", policy_name(t.policy), t.capacity,
                     t.zipf ? "zipf" : "uniform", kLimit[t.limit], t.ttl ? ", ttl" : "", t.seed);
}

// Runs one random trace through PolicyCache and the reference; returns a
// description of the first difference, or "" if they agree throughout.
std::string compare_on_trace(const TraceConfig& t, std::size_t ops) {
  constexpr std::uint64_t kMaxItem = 64;
  const std::uint64_t max_entries = t.limit == TraceConfig::bytes ? 0 : t.capacity;
  const std::uint64_t max_bytes = t.limit == TraceConfig::entries ? 0 : t.capacity * kMaxItem / 2;
  const double ttl_s = t.ttl || t.policy == Policy::ttl ? 1.0 : 0.0;
  PolicyCache<Empty> cache(t.policy, max_entries, max_bytes, ttl_s);
  ReferenceCache ref(t.policy, max_entries, max_bytes, cache.ttl_ns());

  const std::size_t universe = std::max<std::size_t>(4, 3 * t.capacity);
  const KeyDraw draw(universe, t.zipf);
  std::mt19937_64 rng(t.seed);
  Nanos now = 1'000'000'000;
  std::vector<char> hits_a, hits_b;
  std::vector<std::uint64_t> evict_a, evict_b;

  for (std::size_t op = 0; op < ops; ++op) {
    if (ttl_s > 0) {
      // Whole milliseconds against a 1000 ms TTL, so entries often land
      // exactly on their expiry instant; now and then time steps backward.
      const std::uint64_t r = rng() % 100;
      if (r < 3) {
        now -= 5'000'000;
      } else {
        now += static_cast<Nanos>(rng() % 80) * 1'000'000;
      }
    }
    const CacheKey key = key_of(draw(rng));
    const std::uint64_t bytes = 1 + rng() % kMaxItem;
    const std::uint64_t kind = rng() % 20;
    if (kind < 14) {
      // Read-through, as the replay and the simulator do.
      const bool a = cache.get(key, now) != nullptr;
      const bool b = ref.get(key, now);
      hits_a.push_back(a);
      hits_b.push_back(b);
      if (a != b) return fmt::format("op {}: get hit {} vs reference {}", op, a, b);
      if (!a) {
        cache.put(key, Empty{}, bytes, now);
        ref.put(key, bytes, now);
      }
    } else if (kind < 19) {
      cache.put(key, Empty{}, bytes, now);  // often a replacement
      ref.put(key, bytes, now);
    } else {
      const bool a = cache.erase(key), b = ref.erase(key);
      if (a != b) return fmt::format("op {}: erase {} vs reference {}", op, a, b);
    }
    evict_a.push_back(cache.evictions());
    evict_b.push_back(ref.c.evictions);
    const PolicyCacheCounters& ca = cache.counters();
    const PolicyCacheCounters& cb = ref.c;
    if (ca.evictions != cb.evictions || ca.expirations != cb.expirations || ca.rejected != cb.rejected ||
        ca.inserts != cb.inserts || ca.replaces != cb.replaces || ca.hits != cb.hits || ca.misses != cb.misses) {
      return fmt::format(
          "op {}: counters (evictions, expirations, rejected, inserts, replaces) ({}, {}, {}, {}, {}) vs "
          "reference ({}, {}, {}, {}, {})",
          op, ca.evictions, ca.expirations, ca.rejected, ca.inserts, ca.replaces, cb.evictions, cb.expirations,
          cb.rejected, cb.inserts, cb.replaces);
    }
    if (cache.size() != ref.size() || cache.bytes() != ref.bytes()) {
      return fmt::format("op {}: size {} bytes {} vs reference size {} bytes {}", op, cache.size(), cache.bytes(),
                         ref.size(), ref.bytes());
    }
    if (max_entries != 0 && cache.size() > max_entries) return fmt::format("op {}: over max_entries", op);
    if (max_bytes != 0 && cache.bytes() > max_bytes) return fmt::format("op {}: over max_bytes", op);
    // Which keys are held: this is what pins down *which* entry each
    // eviction chose.
    if (op % 16 == 0 || t.capacity <= 7) {
      for (std::size_t k = 0; k < universe; ++k) {
        if (cache.contains(key_of(k)) != ref.contains(key_of(k))) {
          return fmt::format("op {}: key {} held {} vs reference {}", op, k, cache.contains(key_of(k)),
                             ref.contains(key_of(k)));
        }
      }
    }
  }
  if (hits_a != hits_b) return "hit sequences differ";
  if (evict_a != evict_b) return "eviction sequences differ";
  return "";
}

// ---- A backend for the backend tier: a map that fails on demand ------------
class FakeBackend final : public BlobBackend {
 public:
  struct State {
    std::mutex mutex;
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> values;
    bool down = false;
    double last_ttl = -1;
    int clears = 0;
  };
  explicit FakeBackend(std::shared_ptr<State> state) : state_(std::move(state)) {}

  std::string describe() const override { return "fake"; }
  std::optional<std::string> get(const CacheKey& key) override {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->down) throw BackendError("connection refused");
    const auto it = state_->values.find({key.hi, key.lo});
    if (it == state_->values.end()) return std::nullopt;
    return it->second;
  }
  void put(const CacheKey& key, std::string_view value, double ttl_s) override {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->down) throw BackendError("connection refused");
    state_->values[{key.hi, key.lo}] = std::string(value);
    state_->last_ttl = ttl_s;
  }
  void clear() override {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->down) throw BackendError("connection refused");
    state_->values.clear();
    ++state_->clears;
  }
  std::uint64_t entries() override {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->down) throw BackendError("connection refused");
    return state_->values.size();
  }
  std::uint64_t bytes() override {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->down) throw BackendError("connection refused");
    std::uint64_t b = 0;
    for (const auto& kv : state_->values)
      b += kv.second.size();
    return b;
  }

 private:
  std::shared_ptr<State> state_;
};

std::string sample_blob(float base = 1.5f) {
  const std::vector<float> data = {base, 2, 3, 4, 5, 6};
  return encode_tensor(DType::float32, {2, 3}, data.data(), data.size() * sizeof(float));
}

Blob blob_of(std::string s) {
  return std::make_shared<const std::string>(std::move(s));
}

}  // namespace

TEST_SUITE("cache") {
  // ---- keys -----------------------------------------------------------------
  TEST_CASE("keys: length-prefixed, version- and role-sensitive, stable") {
    CHECK(result_key("ab", "c") != result_key("a", "bc"));
    CHECK(result_key("", "ab") != result_key("ab", ""));
    CHECK(result_key("v1", "k") != result_key("v2", "k"));
    CHECK(result_key("v1", "k") != result_key("v1", "k2"));
    CHECK(result_key("v1", "k") == result_key("v1", "k"));
    // An L2 result and an L3 tensor may share one Redis namespace.
    CHECK(result_key("cfg", "k") != preprocessed_key("cfg", "k"));
    CHECK(preprocessed_key("cfg1", "k") != preprocessed_key("cfg2", "k"));

    // Long parts take the streaming path; it must hash the same encoding.
    const std::string long_a(300, 'a'), long_b(300, 'b');
    CHECK(result_key(long_a, long_b) != result_key(long_a + "b", long_b.substr(1)));
    CHECK(result_key(long_a, "k") == result_key(long_a, "k"));

    const std::string hex = to_hex(result_key("v1", "abc"));
    CHECK(hex.size() == 32);
    CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(to_hex(CacheKey{0x0123456789abcdefull, 0xfedcba9876543210ull}) == "0123456789abcdeffedcba9876543210");
  }

  TEST_CASE("keys: pinned values") {
    // Keys outlive a run (LMDB folders, Redis): the encoding must not drift.
    // If this changes on purpose, every persisted cache is invalidated. The
    // first value equals XXH128's canonical hex of 'R' | u64le 2 | "v1" |
    // u64le 3 | "abc", checked with a separate C program, with its top 32
    // bits replaced by the version tag (the top half of XXH3-64("v1")).
    CHECK(to_hex(result_key("v1", "abc")) == "699a96a91e6b1971a30be1b475232897");
    CHECK(version_tag("v1") == 0x699a96a9u);
    CHECK(to_hex(preprocessed_key("resize224", "abc")) == "94377c8e29404fd602a2131c4375a1b0");
  }

  TEST_CASE("policy names") {
    for (Policy p : {Policy::lru, Policy::lfu, Policy::fifo, Policy::ttl}) {
      CHECK(parse_policy(policy_name(p)) == p);
    }
    CHECK(policy_name(Policy::lfu) == "lfu");
    CHECK_FALSE(parse_policy("LRU"));
    CHECK_FALSE(parse_policy("random"));
  }

  // ---- tier specs ---------------------------------------------------------
  TEST_CASE("parse_tier_spec: accepted forms") {
    const auto parse = [](std::string_view s) { return parse_tier_spec("l1", s, "--tier l1=x"); };
    TierSpec t = parse("lru:10000");
    CHECK(t.tier == CacheLevel::l1);
    CHECK(t.policy == Policy::lru);
    CHECK(t.max_entries == 10000);
    CHECK(t.max_bytes == 0);
    CHECK(t.ttl_s == 0);
    CHECK(t.backend == TierBackend::memory);

    t = parse("lfu:1000000");
    CHECK(t.policy == Policy::lfu);
    CHECK(t.max_entries == 1000000);

    t = parse("fifo:500");
    CHECK(t.policy == Policy::fifo);
    CHECK(t.max_entries == 500);

    t = parse("ttl:10000:30s");
    CHECK(t.policy == Policy::ttl);
    CHECK(t.max_entries == 10000);
    CHECK(t.ttl_s == 30);

    t = parse("lru:64MB");
    CHECK(t.max_entries == 0);
    CHECK(t.max_bytes == 64ull << 20);

    t = parse("lru:10000,64MB");
    CHECK(t.max_entries == 10000);
    CHECK(t.max_bytes == 64ull << 20);
    t = parse("lru:64MB,10000");
    CHECK(t.max_entries == 10000);
    CHECK(t.max_bytes == 64ull << 20);

    t = parse("lfu:2GiB:1.5m");
    CHECK(t.max_bytes == 2ull << 30);
    CHECK(t.ttl_s == doctest::Approx(90));
    CHECK(parse("lru:512kb").max_bytes == 512 * 1024);
    CHECK(parse("lru:100B").max_bytes == 100);
    CHECK(parse("lru:1TB").max_bytes == 1ull << 40);
    CHECK(parse("ttl:5:500ms").ttl_s == doctest::Approx(0.5));
    CHECK(parse("ttl:5:2h").ttl_s == 7200);
    CHECK(parse("lru:10:5m").ttl_s == 300);
    CHECK(parse("fifo:18446744073709551615").max_entries == 18446744073709551615ull);
    CHECK(parse_tier_spec("l3", "ttl:100:1s", "x").tier == CacheLevel::l3);
  }

  TEST_CASE("parse_tier_spec: exact errors") {
    const std::string hint = ": expected POLICY:CAPACITY[:TTL], e.g. lru:10000, lfu:64MB, ttl:10000:30s";
    const auto error_of = [](std::string_view tier, std::string_view spec) -> std::string {
      const std::string what = fmt::format("--tier {}={}", tier, spec);
      try {
        parse_tier_spec(tier, spec, what);
      } catch (const Error& e) {
        CHECK(e.exit_code() == 2);
        return e.what();
      }
      return "(no error)";
    };
    CHECK(error_of("l1", "lru:abc") == "--tier l1=lru:abc" + hint);
    CHECK(error_of("l1", "lru") == "--tier l1=lru" + hint);
    CHECK(error_of("l1", "") == "--tier l1=" + hint);
    CHECK(error_of("l1", "lru:") == "--tier l1=lru:" + hint);
    CHECK(error_of("l1", "lru:10:30s:x") == "--tier l1=lru:10:30s:x" + hint);
    CHECK(error_of("l1", "lru:10x") == "--tier l1=lru:10x" + hint);
    CHECK(error_of("l1", "lru:-5") == "--tier l1=lru:-5" + hint);
    CHECK(error_of("l1", "lru:10,20MB,5") == "--tier l1=lru:10,20MB,5" + hint);
    CHECK(error_of("l1", "lru:10,") == "--tier l1=lru:10," + hint);
    CHECK(error_of("l1", "mru:10") ==
          "--tier l1=mru:10: unknown policy 'mru' (expected lru, lfu, fifo, ttl, clock, sieve, s3fifo, arc, wtinylfu, "
          "2q or slru)");
    CHECK(error_of("l1", "lru:0") == "--tier l1=lru:0: capacity must be greater than 0");
    CHECK(error_of("l1", "lru:0MB") == "--tier l1=lru:0MB: capacity must be greater than 0");
    CHECK(error_of("l1", "lru:99999999999999999999") ==
          "--tier l1=lru:99999999999999999999: capacity '99999999999999999999' is too large");
    CHECK(error_of("l1", "lru:20000000TB") == "--tier l1=lru:20000000TB: capacity '20000000TB' is too large");
    CHECK(error_of("l1", "lru:10,20") ==
          "--tier l1=lru:10,20: two entry counts; give at most one count and one size, e.g. lru:10000,64MB");
    CHECK(error_of("l1", "lru:1MB,2MB") ==
          "--tier l1=lru:1MB,2MB: two byte sizes; give at most one count and one size, e.g. lru:10000,64MB");
    CHECK(error_of("l1", "ttl:10000") == "--tier l1=ttl:10000: policy ttl needs a time to live, e.g. ttl:10000:30s");
    CHECK(error_of("l1", "ttl:10000:30") ==
          "--tier l1=ttl:10000:30: bad time to live '30': expected a number and a unit ms, s, m or h, e.g. 30s");
    CHECK(error_of("l1", "ttl:10000:0s") ==
          "--tier l1=ttl:10000:0s: time to live must be above 0, got '0s' (leave ':TTL' out and entries never expire)");
    CHECK(error_of("l1", "lru:10:1.2.3s") ==
          "--tier l1=lru:10:1.2.3s: bad time to live '1.2.3s': expected a number and a unit ms, s, m or h, e.g. 30s");
    CHECK(error_of("l1", "lru:10:99999999999h") ==
          "--tier l1=lru:10:99999999999h: bad time to live '99999999999h': expected a number and a unit ms, s, m or "
          "h, e.g. 30s");
    CHECK(error_of("l4", "lru:10") == "--tier l4=lru:10: unknown tier 'l4' (expected l1, l2 or l3)");
  }

  TEST_CASE("parse_ttl_s / parse_byte_size / validate_tier_spec") {
    CHECK(parse_ttl_s("30s") == 30.0);
    CHECK(parse_ttl_s("250ms") == doctest::Approx(0.25));
    CHECK_FALSE(parse_ttl_s("30"));
    CHECK_FALSE(parse_ttl_s("s"));
    CHECK_FALSE(parse_ttl_s(".5s"));
    CHECK_FALSE(parse_ttl_s("30S"));
    CHECK(parse_byte_size("64MB") == 64ull << 20);
    CHECK(parse_byte_size("64mib") == 64ull << 20);
    CHECK_FALSE(parse_byte_size("64"));
    CHECK_FALSE(parse_byte_size("MB"));
    CHECK_FALSE(parse_byte_size("1.5GB"));

    TierSpec s;
    CHECK_NOTHROW(validate_tier_spec(s, "x"));
    s.policy = Policy::ttl;
    CHECK_THROWS_WITH(validate_tier_spec(s, "profile.toml: [cache.l1]"),
                      "profile.toml: [cache.l1]: policy ttl needs a time to live, e.g. ttl:10000:30s");
    s.ttl_s = 5;
    CHECK_NOTHROW(validate_tier_spec(s, "x"));
    s.backend = TierBackend::redis;
    s.ttl_s = -1;
    CHECK_THROWS_WITH(validate_tier_spec(s, "x"), "x: time to live must be between 0 and 1000000000 s, got -1");
  }

  // ---- tensor blobs -------------------------------------------------------
  TEST_CASE("tensor blob: round trip") {
    const std::vector<float> data = {1.5f, -2, 3, 4, 5, 6};
    const std::string blob = encode_tensor(DType::float32, {2, 3}, data.data(), 24);
    CHECK(blob.size() == 8 + 2 * 8 + 8 + 24 + 8);
    CHECK(blob.compare(0, 4, "IPTB") == 0);
    std::string why = "unchanged";
    const auto view = decode_tensor(blob, &why);
    REQUIRE(view);
    CHECK(why == "unchanged");
    CHECK(view->dtype == DType::float32);
    CHECK(view->shape == std::vector<std::int64_t>{2, 3});
    REQUIRE(view->bytes.size() == 24);
    CHECK(std::memcmp(view->bytes.data(), data.data(), 24) == 0);
    CHECK(view->bytes.data() == blob.data() + 8 + 16 + 8);  // a view, not a copy
    CHECK((view->bytes.data() - blob.data()) % 8 == 0);

    // A scalar, an empty tensor, every dtype.
    const std::int64_t scalar = 42;
    const auto s = decode_tensor(encode_tensor(DType::int64, {}, &scalar, 8));
    REQUIRE(s);
    CHECK(s->shape.empty());
    CHECK(s->bytes.size() == 8);
    const auto e = decode_tensor(encode_tensor(DType::uint8, {0, 1000}, nullptr, 0));
    REQUIRE(e);
    CHECK(e->shape == std::vector<std::int64_t>{0, 1000});
    CHECK(e->bytes.empty());
    for (DType d : {DType::uint8, DType::int8, DType::int16, DType::int32, DType::int64, DType::float16, DType::float32,
                    DType::float64, DType::boolean}) {
      const std::vector<char> bytes(3 * dtype_size(d), 7);
      const auto v = decode_tensor(encode_tensor(d, {3}, bytes.data(), bytes.size()));
      REQUIRE(v);
      CHECK(v->dtype == d);
    }
  }

  TEST_CASE("tensor blob: encode refuses what it cannot describe") {
    const std::vector<float> data(6);
    CHECK_THROWS_WITH(encode_tensor(DType::float32, {2, 3}, data.data(), 20),
                      "cannot cache a float32 tensor of shape [2, 3]: it needs 24 bytes, got 20");
    CHECK_THROWS_WITH(encode_tensor(DType::float32, std::vector<std::int64_t>(17, 1), data.data(), 4),
                      "cannot cache a tensor of rank 17 (at most 16)");
    try {
      encode_tensor(DType::float32, {-1}, data.data(), 4);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.exit_code() == 3);
    }
  }

  TEST_CASE("tensor blob: every corruption is caught and named") {
    const std::string good = sample_blob();
    const auto why_of = [](const std::string& blob) {
      std::string why;
      const auto v = decode_tensor(blob, &why);
      CHECK_FALSE(v);
      return why;
    };
    SUBCASE("a flipped data byte fails the checksum") {
      std::string b = good;
      b[8 + 16 + 8 + 5] ^= 0x01;
      CHECK(why_of(b).rfind("checksum mismatch", 0) == 0);
    }
    SUBCASE("a flipped checksum byte") {
      std::string b = good;
      b.back() ^= 0x80;
      CHECK(why_of(b).rfind("checksum mismatch", 0) == 0);
    }
    SUBCASE("truncated anywhere") {
      for (std::size_t n = 0; n < good.size(); ++n) {
        CAPTURE(n);
        const std::string why = why_of(good.substr(0, n));
        CHECK(why.rfind("truncated", 0) == 0);
      }
      CHECK(why_of("IPT") == "truncated: 3 bytes, shorter than the 8-byte header");
    }
    SUBCASE("trailing bytes") {
      CHECK(why_of(good + "x") == "trailing bytes: the blob holds 25 data bytes, its header says 24");
    }
    SUBCASE("wrong magic") {
      std::string b = good;
      b[0] = 'X';
      CHECK(why_of(b) == "bad magic: not an inferprof tensor blob");
      CHECK(why_of("{\"not\": \"a tensor\"}") == "bad magic: not an inferprof tensor blob");
    }
    SUBCASE("version, dtype, rank") {
      std::string b = good;
      b[4] = 2;
      CHECK(why_of(b) == "unsupported version 2.0 (expected 1.0)");
      b = good;
      b[7] = 1;
      CHECK(why_of(b) == "unsupported version 1.1 (expected 1.0)");
      b = good;
      b[5] = 9;
      CHECK(why_of(b) == "unknown dtype code 9");
      b = good;
      b[6] = 17;
      CHECK(why_of(b) == "rank 17 exceeds 16");
    }
    SUBCASE("shape and byte count disagree") {
      std::string b = good;
      b[8] = 3;  // first dim 2 -> 3
      CHECK(why_of(b) == "size mismatch: a float32 tensor of shape [3, 3] needs 36 bytes, the blob says 24");
      b = good;
      b[8 + 7] = static_cast<char>(0x80);  // first dim negative
      CHECK(why_of(b).rfind("size mismatch", 0) == 0);
      b = good;
      b[8 + 16] = 28;  // byte count 24 -> 28
      CHECK(why_of(b) == "size mismatch: a float32 tensor of shape [2, 3] needs 24 bytes, the blob says 28");
    }
    SUBCASE("any single flipped bit anywhere") {
      for (std::size_t i = 0; i < good.size(); ++i) {
        for (int bit = 0; bit < 8; ++bit) {
          std::string b = good;
          b[i] = static_cast<char>(b[i] ^ (1 << bit));
          CAPTURE(i);
          CAPTURE(bit);
          CHECK_FALSE(decode_tensor(b));
        }
      }
    }
  }

  // ---- PolicyCache against the reference -----------------------------------
  TEST_CASE("PolicyCache matches a brute-force model of each policy") {
    std::uint64_t seed = 1;
    int runs = 0;
    for (Policy policy : {Policy::lru, Policy::lfu, Policy::fifo, Policy::ttl}) {
      for (std::uint64_t capacity : {1, 2, 7, 100}) {
        for (bool zipf : {false, true}) {
          for (auto limit : {TraceConfig::entries, TraceConfig::bytes, TraceConfig::both}) {
            for (bool ttl : {false, true}) {
              if (policy == Policy::ttl && !ttl) continue;  // ttl always has one
              const TraceConfig t{policy, capacity, zipf, limit, ttl, seed++};
              const std::string diff = compare_on_trace(t, 4000);
              ++runs;
              if (!diff.empty()) FAIL_CHECK(describe(t) << ": " << diff);
            }
          }
        }
      }
    }
    CHECK(runs == 3 * 4 * 2 * 3 * 2 + 4 * 2 * 3);
  }

  TEST_CASE("PolicyCache: policy details on small hand traces") {
    const Nanos t0 = 0;
    SUBCASE("lru: a hit protects") {
      PolicyCache<int> c(Policy::lru, 2, 0, 0);
      c.put(key_of(1), 1, 1, t0);
      c.put(key_of(2), 2, 1, t0);
      REQUIRE(c.get(key_of(1), t0) != nullptr);
      CHECK(*c.get(key_of(1), t0) == 1);
      c.put(key_of(3), 3, 1, t0);  // evicts 2
      CHECK(c.contains(key_of(1)));
      CHECK_FALSE(c.contains(key_of(2)));
      CHECK(c.evictions() == 1);
    }
    SUBCASE("fifo: a hit does not protect, a replacement does not reorder") {
      PolicyCache<int> c(Policy::fifo, 2, 0, 0);
      c.put(key_of(1), 1, 1, t0);
      c.put(key_of(2), 2, 1, t0);
      c.get(key_of(1), t0);
      c.put(key_of(1), 10, 1, t0);
      c.put(key_of(3), 3, 1, t0);  // evicts 1, the first inserted
      CHECK_FALSE(c.contains(key_of(1)));
      CHECK(c.contains(key_of(2)));
    }
    SUBCASE("lfu: fewest uses, then least recent") {
      PolicyCache<int> c(Policy::lfu, 3, 0, 0);
      c.put(key_of(1), 1, 1, t0);
      c.put(key_of(2), 2, 1, t0);
      c.put(key_of(3), 3, 1, t0);
      c.get(key_of(1), t0);
      c.get(key_of(1), t0);
      c.get(key_of(3), t0);
      c.get(key_of(2), t0);        // 1: 3 uses; 2, 3: 2 uses, 3 least recent
      c.put(key_of(4), 4, 1, t0);  // evicts 3
      CHECK_FALSE(c.contains(key_of(3)));
      c.put(key_of(5), 5, 1, t0);  // evicts 4 (1 use)
      CHECK_FALSE(c.contains(key_of(4)));
      CHECK(c.contains(key_of(1)));
      CHECK(c.contains(key_of(2)));
    }
    SUBCASE("ttl: expiry on get and on put; max_entries in put order") {
      PolicyCache<int> c(Policy::ttl, 2, 0, 1.0);
      c.put(key_of(1), 1, 1, 0);
      c.put(key_of(2), 2, 1, 500'000'000);
      CHECK(c.get(key_of(1), 999'999'999) != nullptr);
      CHECK(c.get(key_of(1), 1'000'000'000) == nullptr);  // expires exactly at put + ttl
      CHECK(c.expirations() == 1);
      CHECK(c.counters().misses == 1);
      c.put(key_of(3), 3, 1, 1'000'000'000);
      c.put(key_of(4), 4, 1, 1'000'000'000);  // evicts 2, the oldest put
      CHECK(c.evictions() == 1);
      CHECK_FALSE(c.contains(key_of(2)));
      c.put(key_of(5), 5, 1, 2'000'000'000);  // 3 and 4 expire: no eviction
      CHECK(c.expirations() == 3);
      CHECK(c.evictions() == 1);
      CHECK(c.size() == 1);
    }
    SUBCASE("max_bytes: too big is not stored; a growing replacement evicts others") {
      PolicyCache<int> c(Policy::fifo, 0, 100, 0);
      c.put(key_of(1), 1, 40, t0);
      c.put(key_of(2), 2, 40, t0);
      c.put(key_of(3), 3, 101, t0);
      CHECK_FALSE(c.contains(key_of(3)));
      CHECK(c.counters().rejected == 1);
      c.put(key_of(1), 1, 90, t0);  // 1 is first in line but never its own victim
      CHECK(c.contains(key_of(1)));
      CHECK_FALSE(c.contains(key_of(2)));
      CHECK(c.bytes() == 90);
      c.put(key_of(1), 1, 200, t0);  // too big: the old value goes too
      CHECK(c.size() == 0);
      CHECK(c.bytes() == 0);
    }
    SUBCASE("values are released when they leave") {
      PolicyCache<Blob> c(Policy::lru, 1, 0, 0);
      Blob a = blob_of("a");
      std::vector<Blob> retired;
      c.retire_into(&retired);
      c.put(key_of(1), a, 1, t0);
      CHECK(a.use_count() == 2);
      c.put(key_of(2), blob_of("b"), 1, t0);
      CHECK(retired.size() == 1);
      retired.clear();
      CHECK(a.use_count() == 1);
      c.retire_into(nullptr);
      c.clear();
      CHECK(c.size() == 0);
    }
  }

  TEST_CASE("PolicyCache: the index survives growth, erasure and hand-built keys") {
    PolicyCache<std::uint64_t> c(Policy::lru, 0, 0, 0);
    constexpr std::uint64_t n = 50'000;
    std::vector<CacheKey> keys;
    for (std::uint64_t i = 0; i < n; ++i) {
      keys.push_back(i % 2 ? CacheKey{0, i} : CacheKey{i << 20, 0});  // sequential lo; lo zero, hi varying
    }
    for (std::uint64_t i = 0; i < n; ++i)
      c.put(keys[i], i, 1, 0);
    CHECK(c.size() == n);
    std::mt19937_64 rng(7);
    std::set<std::uint64_t> erased;
    for (int k = 0; k < 20'000; ++k) {
      const std::uint64_t i = rng() % n;
      CHECK(c.erase(keys[i]) == erased.insert(i).second);
    }
    std::size_t mismatches = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t* v = c.get(keys[i], 0);
      const bool held = erased.count(i) == 0;
      if ((v != nullptr) != held || (v != nullptr && *v != i)) ++mismatches;
    }
    CHECK(mismatches == 0);
    CHECK(c.size() == n - erased.size());
    // Refill through the free list.
    for (std::uint64_t i : erased)
      c.put(keys[i], i, 1, 0);
    CHECK(c.size() == n);
    for (std::uint64_t i = 0; i < n; i += 997) {
      REQUIRE(c.get(keys[i], 0) != nullptr);
      CHECK(*c.get(keys[i], 0) == i);
    }
    c.clear();
    CHECK(c.size() == 0);
    CHECK(c.get(keys[1], 0) == nullptr);
  }

  TEST_CASE("PolicyCache: policy ttl needs a ttl") {
    CHECK_THROWS_AS(PolicyCache<Empty>(Policy::ttl, 10, 0, 0), std::invalid_argument);
  }

  TEST_CASE("keys: a result key carries its version's tag, so one version can be dropped") {
    for (const char* v : {"v1", "v2", "xxh3:0123456789abcdef"}) {
      CHECK((result_key(v, "k").hi >> 32) == version_tag(v));
      CHECK((result_key(v, "other").hi >> 32) == version_tag(v));
    }
    CHECK(version_tag("v1") != version_tag("v2"));
  }

  // ---- the memory tier --------------------------------------------------------
  TEST_CASE("memory tier: invalidate drops one version's results and nothing else") {
    auto tier = make_memory_tier(parse_tier_spec("l1", "lru:100", "t"));
    for (const char* k : {"a", "b", "c"})
      tier->put(result_key("v1", k), blob_of(sample_blob(1)), 0);
    for (const char* k : {"a", "b"})
      tier->put(result_key("v2", k), blob_of(sample_blob(2)), 0);
    CHECK(tier->invalidate(version_tag("v1")) == 3);
    CHECK(tier->get(result_key("v1", "a"), 0) == nullptr);
    REQUIRE(tier->get(result_key("v2", "a"), 0));
    CHECK(tier->stats().entries == 2);
    CHECK(tier->stats().evictions == 0);  // not counted as evictions
    CHECK(tier->invalidate(version_tag("v1")) == 0);
  }

  TEST_CASE("memory tier: blobs, sizes, stats, clear") {
    TierSpec spec = parse_tier_spec("l1", "lru:2,1KB", "t");
    auto tier = make_memory_tier(spec);
    CHECK(tier->spec().max_entries == 2);
    CHECK(tier->get(result_key("v", "a"), 0) == nullptr);
    tier->put(result_key("v", "a"), blob_of(sample_blob(1)), 0);
    tier->put(result_key("v", "b"), blob_of(sample_blob(2)), 0);
    tier->put(result_key("v", "b"), nullptr, 0);  // ignored
    const Blob a = tier->get(result_key("v", "a"), 0);
    REQUIRE(a);
    CHECK(*a == sample_blob(1));
    tier->put(result_key("v", "c"), blob_of(sample_blob(3)), 0);  // evicts b
    CHECK(tier->get(result_key("v", "b"), 0) == nullptr);
    tier->put(result_key("v", "big"), blob_of(std::string(2000, 'x')), 0);  // over 1KB: not stored
    TierStats s = tier->stats();
    CHECK(s.lookups == 3);
    CHECK(s.hits == 1);
    CHECK(s.misses == 2);
    CHECK(s.inserts == 3);
    CHECK(s.evictions == 1);
    CHECK(s.entries == 2);
    CHECK(s.bytes == 2 * sample_blob().size());
    CHECK(s.errors == 0);
    CHECK_FALSE(s.degraded);
    tier->clear();
    s = tier->stats();
    CHECK(s.lookups == 0);
    CHECK(s.entries == 0);
    CHECK(tier->get(result_key("v", "a"), 0) == nullptr);

    TierSpec bad;
    bad.policy = Policy::ttl;
    CHECK_THROWS_WITH(make_memory_tier(bad), "cache tier l1: policy ttl needs a time to live, e.g. ttl:10000:30s");
    TierSpec l2;
    l2.tier = CacheLevel::l2;
    l2.max_bytes = 1 << 20;
    CHECK(make_memory_tier(l2)->spec().tier == CacheLevel::l2);
    l2.policy = Policy::ttl;
    CHECK_THROWS_WITH(make_memory_tier(l2), "cache tier l2: policy ttl needs a time to live, e.g. ttl:10000:30s");
  }

  TEST_CASE("memory tier at concurrency 1 is the simulation") {
    // Same trace through the tier and through PolicyCache<Empty>: same hits.
    for (const char* spec_text : {"lru:50", "lfu:50", "fifo:50", "ttl:50:1s", "lru:2KB:500ms"}) {
      CAPTURE(spec_text);
      const TierSpec spec = parse_tier_spec("l1", spec_text, "t");
      auto tier = make_memory_tier(spec);
      PolicyCache<Empty> sim(spec);
      const KeyDraw draw(400, true);
      std::mt19937_64 rng(11);
      Nanos now = 0;
      std::size_t diffs = 0;
      for (int i = 0; i < 20'000; ++i) {
        now += static_cast<Nanos>(rng() % 5'000'000);
        const CacheKey key = key_of(draw(rng));
        const std::size_t size = 10 + rng() % 60;
        const bool a = tier->get(key, now) != nullptr;
        const bool b = sim.get(key, now) != nullptr;
        if (a != b) ++diffs;
        if (!a) tier->put(key, blob_of(std::string(size, 'v')), now);
        if (!b) sim.put(key, Empty{}, size, now);
      }
      CHECK(diffs == 0);
      const TierStats s = tier->stats();
      CHECK(s.hits == sim.counters().hits);
      CHECK(s.evictions == sim.evictions());
      CHECK(s.expirations == sim.expirations());
      CHECK(s.bytes == sim.bytes());
    }
  }

  TEST_CASE("memory tier: 4 threads hammering get/put") {
    for (const char* spec_text : {"lru:100", "lfu:100,4KB", "ttl:100:1ms"}) {
      CAPTURE(spec_text);
      auto tier = make_memory_tier(parse_tier_spec("l1", spec_text, "t"));
      constexpr int kThreads = 4, kOps = 40'000;
      std::atomic<std::uint64_t> gets{0}, wrong{0};
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 100);
          std::uint64_t my_gets = 0;
          for (int i = 0; i < kOps; ++i) {
            const std::uint64_t k = rng() % 1000;
            const CacheKey key = result_key("v1", std::to_string(k));
            // The value names its key, so a hit can be checked.
            if (rng() % 3 != 0) {
              ++my_gets;
              const Blob b = tier->get(key, now_ns());
              if (b && *b != std::to_string(k) + std::string(k % 50, '.')) wrong.fetch_add(1);
            } else {
              tier->put(key, blob_of(std::to_string(k) + std::string(k % 50, '.')), now_ns());
            }
          }
          gets.fetch_add(my_gets);
        });
      }
      for (auto& th : threads)
        th.join();
      const TierStats s = tier->stats();
      CHECK(wrong == 0);
      CHECK(s.lookups == gets);
      CHECK(s.hits + s.misses == s.lookups);
      CHECK(s.hits > 0);
      CHECK(s.entries <= 100);
    }
  }

  // ---- the backend tier -------------------------------------------------------
  TEST_CASE("backend tier: hits, misses, corruption, failures, recovery") {
    auto state = std::make_shared<FakeBackend::State>();
    TierSpec spec = parse_tier_spec("l2", "lru:1000:30s", "t");
    spec.backend = TierBackend::redis;
    auto tier = make_backend_tier(spec, std::make_unique<FakeBackend>(state));

    const CacheKey a = result_key("v", "a"), b = result_key("v", "b");
    CHECK(tier->get(a, 0) == nullptr);
    tier->put(a, blob_of(sample_blob()), 0);
    CHECK(state->last_ttl == 30);
    const Blob got = tier->get(a, 0);
    REQUIRE(got);
    CHECK(*got == sample_blob());

    // A value damaged in the store is a miss, not a wrong result.
    std::string damaged = sample_blob();
    damaged[40] ^= 1;  // a data byte
    state->values[{b.hi, b.lo}] = damaged;
    CHECK(tier->get(b, 0) == nullptr);
    TierStats s = tier->stats();
    CHECK(s.lookups == 3);
    CHECK(s.hits == 1);
    CHECK(s.misses == 2);
    CHECK(s.inserts == 1);
    CHECK(s.corrupt == 1);
    CHECK(s.errors == 1);
    CHECK_FALSE(s.degraded);
    CHECK(s.entries == 2);
    CHECK(s.bytes == sample_blob().size() + damaged.size());

    // The server goes away: misses and skipped inserts, never an exception.
    state->down = true;
    CHECK(tier->get(a, 0) == nullptr);
    CHECK_NOTHROW(tier->put(a, blob_of(sample_blob()), 0));
    s = tier->stats();
    CHECK(s.degraded);
    CHECK(s.errors == 3);
    CHECK(s.misses == 3);
    CHECK(s.lookups == 4);
    CHECK(s.inserts == 1);
    CHECK(s.entries == 0);  // unknown while down
    CHECK(s.bytes == 0);

    // ... and comes back: served again, still marked degraded for the report.
    state->down = false;
    CHECK(tier->get(a, 0) != nullptr);
    s = tier->stats();
    CHECK(s.hits == 2);
    CHECK(s.degraded);

    tier->clear();
    CHECK(state->clears == 1);
    CHECK(state->values.empty());
    s = tier->stats();
    CHECK(s.lookups == 0);
    CHECK(s.errors == 0);
    CHECK_FALSE(s.degraded);

    state->down = true;
    CHECK_NOTHROW(tier->clear());
    CHECK(tier->stats().degraded);
  }
}
