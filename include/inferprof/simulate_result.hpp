#pragma once
// `inferprof simulate`'s result (inferprof/simulate.hpp runs it): the
// settings it echoes, the costs it predicts from, and its reporters
// (src/report/render/simulate_<format>.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "inferprof/cache.hpp"

namespace inferprof {

// ---- Costs (a run's measured stage costs) ------------------------------------

// What a cache tier's work costs, in mean µs per span, from the costs run's
// trace.json: the tier's first span in a request is its lookup, a later one
// an insert. Unset: the run did not measure it (see SimCosts::notes).
struct SimTierCosts {
  std::optional<double> lookup_hit_us, lookup_miss_us;  // a lookup that found / did not find the entry
  // L1 fill on an L2 hit, L2 insert after L1, L3 insert (encoding the
  // preprocessed input and putting it).
  std::optional<double> insert_us;
  // Result tiers: encoding the output and putting it, what the first result
  // tier of a configuration pays on a miss.
  std::optional<double> store_us;
  std::uint64_t lookups = 0, inserts = 0, stores = 0;  // spans measured
};

// What serving a request costs, from a run's summary.json and, when next to
// it, its requests.csv (per-request distributions for p99) and trace.json
// (the l1/l2/l3 spans: each tier's lookup and insert costs). The request
// costs leave out the run's cache work (its cache_us), which a prediction
// adds back per configuration.
struct SimCosts {
  std::string source;                              // the summary.json path
  bool per_request = false;                        // requests.csv was read
  std::uint64_t rows = 0;                          // requests.csv rows read
  double miss_mean_us = 0;                         // a request computed from scratch, cache work left out
  double l3_hit_mean_us = 0;                       // input and preprocessing skipped, cache work left out
  double hit_mean_us = 0;                          // an L1/L2 hit outside its cache work (bookkeeping)
  std::vector<double> miss_us, l3_hit_us, hit_us;  // samples (bounded), when per_request
  std::string spans_source;                        // the trace.json read; empty: none
  std::uint64_t span_requests = 0;                 // requests of trace.json read
  SimTierCosts tiers[3];                           // l1, l2, l3
  std::uint64_t result_bytes = 0;                  // mean entry size of the run's L1/L2 (0: not known)
  std::uint64_t preprocessed_bytes = 0;            // of its L3
  std::vector<std::string> notes;                  // assumptions made, said in the output
};
// ---- Settings ------------------------------------------------------------------

// A miss-ratio curve request: "l1=lru:100..1000000" or "l2=lfu:100,1000,5000[:TTL]".
struct MrcSpec {
  CacheLevel tier = CacheLevel::l1;
  Policy policy = Policy::lru;
  double ttl_s = 0;
  std::vector<std::uint64_t> capacities;  // entries, ascending, distinct
};
// `--policies lru,s3fifo,... --sizes 1k,5k,64MB`: every policy at every size,
// each a cache alone in front of compute (as an --mrc curve is), in parallel.
struct GridPolicy {
  Policy policy = Policy::lru;
  PolicyParams params;
  std::string label;  // as given: "s3fifo(small=0.2)"
};
struct GridSize {
  std::uint64_t entries = 0, bytes = 0;  // one of them
  std::string label;                     // as given: "10k", "64MB"
};
struct PolicyGridSpec {
  CacheLevel tier = CacheLevel::l1;
  std::vector<GridPolicy> policies;
  std::vector<GridSize> sizes;
  std::optional<GridSize> budget;  // the recommendation's limit; unset: the largest size
  double ttl_s = 0;
};
// ---- Results -------------------------------------------------------------------

struct SimTierResult {
  TierSpec spec;
  std::uint64_t lookups = 0, hits = 0, misses = 0, inserts = 0, evictions = 0, expirations = 0, rejected = 0;
  std::uint64_t entries = 0, bytes = 0;  // held at the end
};
struct SimPrediction {
  bool available = false;
  double mean_us = 0;
  double cache_us = 0;                  // of mean_us: lookups and inserts per request
  double outcome_us[4] = {0, 0, 0, 0};  // a request served by l1, l2, l3, compute
  std::optional<double> p99_us;         // needs per-request costs
  double speedup = 1;                   // predicted no-cache mean / this mean
};
struct SimConfigResult {
  std::string name;  // "l1,l2"
  std::vector<SimTierResult> tiers;
  std::uint64_t served_l1 = 0, served_l2 = 0, served_l3 = 0, served_compute = 0;  // measured requests
  SimPrediction predicted;
};
struct MrcPoint {
  std::uint64_t capacity = 0;
  double hit_ratio = 0;
  std::optional<double> predicted_mean_us;
};
struct MrcResult {
  MrcSpec spec;
  std::string method;  // "one-pass stack distances" or "one simulation per capacity (N threads)"
  double sample_rate = 1.0;
  std::uint64_t sampled_requests = 0, sampled_keys = 0;  // with sampling
  std::optional<double> error_bound;  // with sampling: ~95% bound on |hit ratio error| (from 8 disjoint subsamples)
  std::uint64_t distinct_keys = 0;    // one-pass: distinct keys seen by the tier (sampled ones when sampling)
  std::vector<MrcPoint> points;
  double seconds = 0;
};
struct GridCell {
  std::size_t policy = 0, size = 0;  // indexes into PolicyGridSpec's lists
  // Of the simulated cache (with sampling: the sampled requests, a cache of
  // rate x the size).
  std::uint64_t lookups = 0, hits = 0, evictions = 0;
  std::uint64_t requested_bytes = 0, missed_bytes = 0;       // 0: sizes unknown
  std::uint64_t simulated_entries = 0, simulated_bytes = 0;  // the cache's limits: the size's, scaled by the rate
  double miss_ratio = 0;
  std::optional<double> miss_ratio_error;  // with sampling: ~95% bound on |miss ratio error| (8 sub-samples)
  std::optional<double> byte_miss_ratio;
  SimPrediction predicted;  // with --costs
};
// The best cell within the budget: by predicted mean latency with --costs,
// else by miss ratio; the runner-up is the best cell of another policy.
struct GridRecommendation {
  std::size_t best = 0;
  std::optional<std::size_t> runner_up;
  bool by_latency = false;
  double margin = 0;      // runner-up minus best: µs (by latency) or miss ratio
  double margin_pct = 0;  // of the best's value
};
// SHARDS spatial sampling of the grid: the requests of keys whose hash falls
// below rate x 2^24 drive caches of rate x each size (Waldspurger et al.,
// ATC '17: miniature simulations of any policy).
struct GridSampling {
  double rate = 1;             // 1: every request simulated
  bool automatic = false;      // chosen by simulate (else --sample)
  double estimated_keys = 0;   // distinct keys of the tier, from a first pass (automatic choice only)
  std::uint64_t requests = 0;  // measured requests (after warm-up)
  std::uint64_t sampled = 0;   // of them, simulated
  double max_error = 0;        // the largest cell's miss_ratio_error
};
struct PolicyGridResult {
  PolicyGridSpec spec;
  GridSampling sampling;
  std::vector<GridCell> cells;  // policy-major
  unsigned threads = 1;
  double seconds = 0;
  std::optional<GridRecommendation> recommendation;
};

struct SimulateResult {
  std::string trace_path, trace_format;
  std::uint64_t requests = 0;  // all requests read (warm-up included)
  std::uint64_t measured = 0;  // after warm-up
  std::uint64_t model_updates = 0;
  std::uint64_t warmup = 0;
  bool timestamps = false;  // some request had ts_ms (TTL time)
  std::string sizes;        // where entry sizes came from
  double seconds = 0;       // the configurations' pass
  std::optional<SimCosts> costs;
  SimPrediction baseline;  // no cache
  std::vector<SimConfigResult> configurations;
  std::vector<MrcResult> mrc;
  std::optional<PolicyGridResult> grid;
  std::vector<std::string> warnings;
};

// Reporters (src/report/render/simulate_<format>.cpp; --format picks one: report/format.hpp).
std::string render_simulate_table(const SimulateResult& r);
std::string render_simulate_markdown(const SimulateResult& r);
std::string render_simulate_csv(const SimulateResult& r);
std::string render_simulate_json(const SimulateResult& r);
// report.html: predictions, miss-ratio curves, the policy grid (simulate_html.cpp).
std::string render_simulate_html(const SimulateResult& r);
std::string render_mrc_csv(const SimulateResult& r);
std::string render_mrc_svg(const SimulateResult& r);
std::string render_policies_csv(const SimulateResult& r);  // policies.csv: one row per policy and size

}  // namespace inferprof
