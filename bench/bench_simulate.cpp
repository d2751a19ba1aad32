// `inferprof simulate` throughput and memory, side by side in one process:
//
//   build/bench/bench_simulate [--requests N] [--keys K] [--zipf A] [--jsonl-requests M] [--policies P1,P2,...]
//
// 1. Writes an N-request Zipf(A) trace over K keys as .iptrace (default 10 M
//    requests, 1 M keys) and simulates a single tier on it: LRU, LFU, FIFO
//    and TTL (or --policies, any of the tier-spec policies) at three
//    capacities each; requests/s of the streaming pass.
// 2. Peak memory (getrusage) after those passes: the trace is streamed, so it
//    follows the distinct keys, not the trace's 240 MB.
// 3. The same requests as JSON lines (the first M, default 1 M) through the
//    JSONL reader: parse-bound requests/s.
// 4. A 30-point LRU miss-ratio curve: one pass of stack distances against one
//    PolicyCache per capacity (threads = cores), on the same keys in memory.
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "inferprof/simulate.hpp"
#include "temp_dir.hpp"

using namespace inferprof;

namespace {

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// CPU seconds of the whole process (all threads): on a shared VM the wall
// clock also counts time the scheduler gave to other programs.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Zipf(a) ranks over `keys` by inverse CDF on a table (exact to the table's resolution).
class Zipf {
 public:
  Zipf(std::uint64_t keys, double a, std::uint64_t seed) : rng_(seed) {
    cdf_.resize(keys);
    double sum = 0;
    for (std::uint64_t k = 0; k < keys; ++k)
      cdf_[k] = sum += 1.0 / std::pow(static_cast<double>(k + 1), a);
    for (auto& c : cdf_)
      c /= sum;
  }
  std::uint64_t next() {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
    return static_cast<std::uint64_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
  }

 private:
  std::mt19937_64 rng_;
  std::vector<double> cdf_;
};

// A key hash as the readers make them (any well-mixed 64-bit value will do).
std::uint64_t key_hash(std::uint64_t rank) {
  std::uint64_t h = (rank + 1) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 29);
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t requests = 10'000'000, keys = 1'000'000, jsonl_requests = 1'000'000;
  double zipf = 0.9;
  std::vector<std::string> policies = {"lru", "lfu", "fifo", "ttl"};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--requests"))
      requests = std::stoull(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--keys"))
      keys = std::stoull(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--zipf"))
      zipf = std::stod(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--jsonl-requests"))
      jsonl_requests = std::stoull(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--policies")) {
      policies.clear();
      for (const GridPolicy& p : parse_policy_list(argv[i + 1], "--policies"))
        policies.push_back(p.label);
    }
  }
  testing::TempDir dir;
  const std::string bin = dir.file("zipf.iptrace"), jsonl = dir.file("zipf.jsonl");

  // The trace: 1,000 requests/s of trace time, so TTLs have time to run on.
  // Written as it is drawn: nothing the size of the trace stays in memory.
  {
    Zipf z(keys, zipf, 42);
    IptraceWriter w(bin);
    FILE* f = std::fopen(jsonl.c_str(), "w");
    SimRecord r;
    for (std::uint64_t i = 0; i < requests; ++i) {
      r.key = key_hash(z.next());
      r.ts_ms = static_cast<double>(i);
      w.add(r);
      if (i < jsonl_requests)
        std::fprintf(f, "{\"id\": %llu, \"ts_ms\": %llu, \"key\": \"k%016llx\", \"input\": {\"seed\": 1}}\n",
                     static_cast<unsigned long long>(i), static_cast<unsigned long long>(i),
                     static_cast<unsigned long long>(r.key));
    }
    w.commit();
    std::fclose(f);
  }
  const double rss_before = peak_rss_mb();
  fmt::print("trace: {} requests, Zipf {} over {} keys, .iptrace {:.0f} MB; peak RSS before simulating {:.1f} MB\n",
             requests, zipf, keys, static_cast<double>(requests) * 24 / 1e6, rss_before);

  fmt::print("\n{:<6} {:>10} {:>10} {:>12} {:>10} {:>16}\n", "policy", "capacity", "hit ratio", "M req/s", "seconds",
             "M req/CPU-s");
  for (const std::string& policy : policies)
    for (std::uint64_t cap : {keys / 100, keys / 10, keys / 2}) {
      SimulateConfig c;
      c.trace_path = bin;
      const std::string spec = policy + ":" + std::to_string(cap) + (policy != "ttl" ? "" : ":60s");
      c.tiers = {parse_tier_spec("l1", spec, "bench")};
      const double cpu0 = cpu_seconds();
      SimulateResult r = run_simulate(c);
      const double cpu = cpu_seconds() - cpu0;
      const auto& t = r.configurations[0].tiers[0];
      fmt::print("{:<6} {:>10} {:>10.4f} {:>12.2f} {:>10.3f} {:>16.2f}\n", policy, cap,
                 static_cast<double>(t.hits) / static_cast<double>(t.lookups),
                 static_cast<double>(r.requests) / r.seconds / 1e6, r.seconds,
                 static_cast<double>(r.requests) / cpu / 1e6);
      std::fflush(stdout);
    }
  fmt::print("peak RSS after the {} passes: {:.1f} MB (before them: {:.1f} MB)\n", 3 * policies.size(), peak_rss_mb(),
             rss_before);

  {
    SimulateConfig c;
    c.trace_path = jsonl;
    c.tiers = {parse_tier_spec("l1", std::to_string(keys / 10).insert(0, "lru:"), "bench")};
    const double cpu0 = cpu_seconds();
    SimulateResult r = run_simulate(c);
    const double cpu = cpu_seconds() - cpu0;
    fmt::print(
        "\nJSON lines, same keys, lru:{}: {} requests in {:.3f} s = {:.2f} M req/s ({:.2f} M req/CPU-s; "
        "parse-bound)\n",
        keys / 10, r.requests, r.seconds, static_cast<double>(r.requests) / r.seconds / 1e6,
        static_cast<double>(r.requests) / cpu / 1e6);
    std::fflush(stdout);
  }

  // The same keys again, in memory, for the curve comparison.
  std::vector<std::uint64_t> curve_keys(requests);
  Zipf z(keys, zipf, 42);
  for (auto& k : curve_keys)
    k = key_hash(z.next());
  std::vector<std::uint64_t> caps;
  for (int i = 0; i < 30; ++i)
    caps.push_back(static_cast<std::uint64_t>(
        std::llround(std::exp(std::log(100.0) + (std::log(static_cast<double>(keys)) - std::log(100.0)) * i / 29))));
  auto t0 = std::chrono::steady_clock::now();
  double c0 = cpu_seconds();
  auto one = lru_curve_one_pass(curve_keys, caps);
  const double t_one = seconds(t0), c_one = cpu_seconds() - c0;
  t0 = std::chrono::steady_clock::now();
  c0 = cpu_seconds();
  auto per = curve_per_capacity(curve_keys, Policy::lru, 0, caps, 0);
  const double t_per = seconds(t0), c_per = cpu_seconds() - c0;
  bool equal = one == per;
  fmt::print(
      "\nLRU miss-ratio curve, 30 capacities 100..{}, {} requests:\n  one pass {:.2f} s wall ({:.2f} CPU-s); "
      "one simulation per capacity ({} threads) {:.2f} s wall ({:.2f} CPU-s): {:.1f}x wall, {:.1f}x CPU; "
      "curves equal: {}\n",
      keys, curve_keys.size(), t_one, c_one, std::max(1u, std::thread::hardware_concurrency()), t_per, c_per,
      t_per / t_one, c_per / c_one, equal ? "yes" : "NO");
  return equal ? 0 : 1;
}
