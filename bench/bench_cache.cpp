// Cache costs: the L1 memory tier (one mutex over PolicyCache<Blob>) at one
// million entries -- a get that hits, a put that replaces, a put that inserts
// and evicts -- and the raw PolicyCache<Empty> access rate that bounds
// `inferprof simulate`. Targets (docs/performance.md): L1 get p50 < 100 ns, put < 200 ns.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cache/policy_cache.hpp"
#include "inferprof/cache.hpp"
#include "inferprof/timing.hpp"

namespace {

using inferprof::Blob;
using inferprof::CacheKey;
using inferprof::Policy;

constexpr std::size_t kEntries = 1'000'000;
constexpr std::size_t kPattern = 1u << 22;  // random access pattern, cycled
constexpr std::size_t kValueBytes = 64;

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A key no other benchmark step uses: a fresh insert.
CacheKey fresh_key(std::uint64_t i) {
  return CacheKey{splitmix(i ^ 0xABCDEFull), splitmix(i)};
}

// Zipf(1.0) ranks over kEntries, drawn with a fixed seed.
std::vector<std::uint32_t> zipf_pattern(std::uint64_t seed) {
  std::vector<double> cdf(kEntries);
  double total = 0;
  for (std::size_t r = 0; r < kEntries; ++r)
    cdf[r] = total += 1.0 / static_cast<double>(r + 1);
  std::mt19937_64 rng(seed);
  std::vector<std::uint32_t> out(kPattern);
  for (auto& t : out) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53 * total;
    t = static_cast<std::uint32_t>(std::min<std::size_t>(
        static_cast<std::size_t>(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin()), kEntries - 1));
  }
  return out;
}

// One L1 tier of kEntries distinct blobs, the keys it holds, and random
// orders to visit them in: uniform (every get a cold miss in the CPU caches:
// the worst case), Zipf (a hot set, as request traces have) and hot (1,000
// keys that stay in the CPU caches: the cost of the code itself). Each
// benchmark gets its own (they mutate it).
struct L1Fixture {
  std::unique_ptr<inferprof::CacheTier> tier;
  std::vector<CacheKey> keys;
  std::vector<std::uint32_t> uniform, zipf, hot;
  std::vector<Blob> pool;  // values for puts; kept alive so a put frees nothing

  L1Fixture() {
    inferprof::TierSpec spec;
    spec.policy = Policy::lru;
    spec.max_entries = kEntries;
    tier = inferprof::make_memory_tier(spec);
    keys.reserve(kEntries);
    for (std::size_t i = 0; i < kEntries; ++i) {
      keys.push_back(inferprof::result_key("model@1", std::to_string(i)));
      tier->put(keys.back(), std::make_shared<const std::string>(kValueBytes, static_cast<char>(i)), 0);
    }
    std::mt19937_64 rng(42);
    uniform.resize(kPattern);
    for (auto& p : uniform)
      p = static_cast<std::uint32_t>(rng() % kEntries);
    // Popularity must not follow fill order (which is node order in memory):
    // give each rank a random key.
    std::vector<std::uint32_t> key_of_rank(kEntries);
    for (std::size_t r = 0; r < kEntries; ++r)
      key_of_rank[r] = static_cast<std::uint32_t>(r);
    std::shuffle(key_of_rank.begin(), key_of_rank.end(), rng);
    zipf = zipf_pattern(43);
    for (auto& z : zipf)
      z = key_of_rank[z];
    // 1,000 of the million, always the same: what a get costs when its
    // entry is in the CPU caches.
    hot.resize(kPattern);
    for (auto& h : hot)
      h = key_of_rank[rng() % 1000];
    for (int i = 0; i < 1024; ++i)
      pool.push_back(std::make_shared<const std::string>(kValueBytes, 'p'));
    // Touch every entry in random order, so recency order is not memory
    // order: otherwise the LRU victims of an insert sit next to each other
    // and eviction looks cheaper than it is.
    std::vector<std::uint32_t> order(kEntries);
    for (std::size_t i = 0; i < kEntries; ++i)
      order[i] = static_cast<std::uint32_t>(i);
    std::shuffle(order.begin(), order.end(), rng);
    for (std::uint32_t k : order)
      tier->get(keys[k], 0);
  }
  // Benchmark argument "pattern": 0 uniform, 1 zipf, 2 hot (1,000 keys).
  const std::vector<std::uint32_t>& pattern(benchmark::State& state) const {
    static const char* kNames[] = {"uniform", "zipf", "hot1k"};
    state.SetLabel(kNames[state.range(0)]);
    return state.range(0) == 0 ? uniform : state.range(0) == 1 ? zipf : hot;
  }
};

void BM_L1GetHit(benchmark::State& state) {
  static L1Fixture f;
  const auto& pattern = f.pattern(state);
  std::size_t i = 0;
  for (auto _ : state) {
    Blob b = f.tier->get(f.keys[pattern[i++ & (kPattern - 1)]], 1);
    benchmark::DoNotOptimize(b);
  }
  state.SetItemsProcessed(state.iterations());
  const auto s = f.tier->stats();
  state.counters["hit_ratio"] =
      static_cast<double>(s.hits) / static_cast<double>(std::max<std::uint64_t>(1, s.lookups));
}

// Per-call latency percentiles of the same get: each call timed on its own
// with the steady clock, minus the median cost of reading the clock twice.
void BM_L1GetHitLatency(benchmark::State& state) {
  static L1Fixture f;
  const auto& pattern = f.pattern(state);
  constexpr std::size_t kSamples = 1u << 20;
  std::vector<inferprof::Nanos> samples(kSamples), empty(1u << 16);
  for (auto& e : empty) {
    const auto t0 = inferprof::now_ns();
    e = inferprof::now_ns() - t0;
  }
  std::nth_element(empty.begin(), empty.begin() + static_cast<std::ptrdiff_t>(empty.size() / 2), empty.end());
  const double clock_cost = static_cast<double>(empty[empty.size() / 2]);
  std::size_t i = 0, n = 0;
  for (auto _ : state) {
    const CacheKey& key = f.keys[pattern[i++ & (kPattern - 1)]];
    const auto t0 = inferprof::now_ns();
    Blob b = f.tier->get(key, 1);
    const auto t1 = inferprof::now_ns();
    benchmark::DoNotOptimize(b);
    samples[n++ & (kSamples - 1)] = t1 - t0;
  }
  samples.resize(std::min(n, kSamples));
  std::sort(samples.begin(), samples.end());
  const auto pct = [&](double q) {
    return static_cast<double>(samples[static_cast<std::size_t>(q * static_cast<double>(samples.size() - 1))]) -
           clock_cost;
  };
  state.counters["p50_ns"] = pct(0.50);
  state.counters["p90_ns"] = pct(0.90);
  state.counters["p99_ns"] = pct(0.99);
  state.counters["clock_ns"] = clock_cost;
}

void BM_L1PutReplace(benchmark::State& state) {
  static L1Fixture f;
  std::size_t i = 0;
  for (auto _ : state) {
    f.tier->put(f.keys[f.uniform[i & (kPattern - 1)]], f.pool[i & 1023], 1);
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_L1PutInsertEvict(benchmark::State& state) {
  static L1Fixture f;
  static std::uint64_t next = 0;  // never repeats across runs: always an insert
  for (auto _ : state) {
    f.tier->put(fresh_key(next), f.pool[next & 1023], 1);
    ++next;
  }
  state.SetItemsProcessed(state.iterations());
  const auto s = f.tier->stats();
  state.counters["entries"] = static_cast<double>(s.entries);
}

// ---- PolicyCache<Empty>: the simulator's inner loop -------------------------
struct Empty {};

// A read-through trace over kEntries keys, Zipf(1.0): get, put on a miss.
// Stored as the key sequence itself, read in order, so the loop measures the
// cache and not a random lookup into a key table.
struct SimTrace {
  std::vector<CacheKey> trace;
  SimTrace() {
    const std::vector<std::uint32_t> ranks = zipf_pattern(7);
    trace.reserve(ranks.size());
    for (std::uint32_t r : ranks)
      trace.push_back(fresh_key(r));
  }
  static const SimTrace& get() {
    static SimTrace t;
    return t;
  }
};

void BM_PolicyCacheAccess(benchmark::State& state) {
  const auto policy = static_cast<Policy>(state.range(0));
  const auto capacity = static_cast<std::uint64_t>(state.range(1));
  const SimTrace& t = SimTrace::get();
  inferprof::PolicyCache<Empty> cache(policy, capacity, 0, policy == Policy::ttl ? 50e-6 : 0.0);  // ttl: ~50k accesses
  cache.reserve(capacity);
  std::size_t i = 0;
  inferprof::Nanos now = 0;
  for (auto _ : state) {
    const CacheKey& key = t.trace[i++ & (kPattern - 1)];
    ++now;
    if (cache.get(key, now) == nullptr) cache.put(key, Empty{}, 1, now);
  }
  state.SetItemsProcessed(state.iterations());
  const auto& c = cache.counters();
  state.counters["hit_ratio"] =
      static_cast<double>(c.hits) / static_cast<double>(std::max<std::uint64_t>(1, c.hits + c.misses));
  state.SetLabel(std::string(inferprof::policy_name(policy)));
}

}  // namespace

BENCHMARK(BM_L1GetHit)->ArgName("pattern")->DenseRange(0, 2);
BENCHMARK(BM_L1GetHitLatency)->ArgName("pattern")->DenseRange(0, 2)->Iterations(4'000'000);
BENCHMARK(BM_L1PutReplace);
BENCHMARK(BM_L1PutInsertEvict);
BENCHMARK(BM_PolicyCacheAccess)
    ->ArgNames({"policy", "capacity"})
    ->ArgsProduct({{static_cast<int>(Policy::lru), static_cast<int>(Policy::lfu), static_cast<int>(Policy::fifo),
                    static_cast<int>(Policy::ttl)},
                   {10'000, 100'000}});

BENCHMARK_MAIN();
