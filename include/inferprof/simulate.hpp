#pragma once
// `inferprof simulate`: cache what-if at trace scale. Streams a trace (JSONL,
// the compact binary .iptrace form, or a timestamp,key[,size] CSV) through
// the same PolicyCache the in-process tiers use, with an empty value, so the
// hit counts are the ones `compare` measures; with a run's measured stage
// costs it predicts mean and p99 latency. Memory grows with distinct keys,
// never with trace length.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "inferprof/cache.hpp"
#include "inferprof/trace.hpp"  // CsvColumns

namespace inferprof {

// ---- Trace sources ---------------------------------------------------------

// One record as the simulator sees it: hashes, not strings.
struct SimRecord {
  enum class Kind : std::uint8_t { request, model_update };
  Kind kind = Kind::request;
  std::uint64_t key = 0;        // XXH3-64 of the request key; model_update: of the new version
  std::optional<double> ts_ms;  // arrival time, if the trace has one
  std::uint64_t size = 0;       // entry bytes, if the trace says (CSV size column); 0: unknown
  std::uint64_t line = 0;       // 1-based line (JSONL, CSV) or record number (.iptrace)
};

class SimSource {
 public:
  virtual ~SimSource() = default;
  virtual bool next(SimRecord& out) = 0;   // false at end; throws Error(bad_input) "FILE:LINE: ..."
  virtual std::string format() const = 0;  // "jsonl", "iptrace", "csv"
};
// Picks the reader by content: the .iptrace magic, else by extension (.csv),
// else JSON lines.
std::unique_ptr<SimSource> open_sim_source(const std::string& path, const CsvColumns& csv = {});

// .iptrace, all integers little-endian:
//   header (32 bytes): "IPTRACE1" | u32 version (1) | u32 record size (24) |
//                      u64 requests | u64 model updates
//   record (24 bytes): u64 key hash | i64 ts in ns (flag bit 1) | u32 size | u32 flags
//                      (bit 0: model_update, key = version hash; bit 1: has ts)
inline constexpr std::uint32_t kIptraceVersion = 1;
// Streams records into an .iptrace under a temporary name; commit() fills in
// the header's counts and renames it into place (the destructor of an
// uncommitted writer removes it). Throws Error on I/O failure.
class IptraceWriter {
 public:
  explicit IptraceWriter(const std::string& path);
  ~IptraceWriter();
  IptraceWriter(const IptraceWriter&) = delete;
  IptraceWriter& operator=(const IptraceWriter&) = delete;
  // Throws Error(bad_input) naming `source` and r.line for a ts or size out of range.
  void add(const SimRecord& r, const std::string& source = "");
  void commit();
  std::uint64_t requests() const noexcept { return requests_; }
  std::uint64_t model_updates() const noexcept { return updates_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::uint64_t requests_ = 0, updates_ = 0;
};
struct ConvertStats {
  std::uint64_t requests = 0, model_updates = 0, bytes = 0;
  std::string format;  // of the input
};
// Writes `out_path` atomically (temporary file, then rename).
ConvertStats convert_trace(const std::string& in_path, const std::string& out_path, const CsvColumns& csv = {});

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
// Throws Error(bad_input) naming the file (and line of requests.csv).
SimCosts load_sim_costs(const std::string& summary_json_path);

// The cache work of one configuration by what served the request, in µs,
// each tier's costs resolved from SimCosts (an unmeasured cost falls back to
// a related measured one, else 0; each assumption is listed in `assumed`).
struct SimCacheCosts {
  double lookup_us[4] = {0, 0, 0, 0};  // served by l1, l2, l3, compute: the lookups made
  double insert_us[4] = {0, 0, 0, 0};  // the inserts, the output's encoding included
  std::vector<std::string> assumed;
  double total(int outcome) const { return lookup_us[outcome] + insert_us[outcome]; }
};
SimCacheCosts cache_costs(const SimCosts& c, bool l1, bool l2, bool l3);

// ---- Settings ------------------------------------------------------------------

// A miss-ratio curve request: "l1=lru:100..1000000" or "l2=lfu:100,1000,5000[:TTL]".
struct MrcSpec {
  CacheLevel tier = CacheLevel::l1;
  Policy policy = Policy::lru;
  double ttl_s = 0;
  std::vector<std::uint64_t> capacities;  // entries, ascending, distinct
};
// `points`: how many log-spaced capacities a range gives. Throws Error(bad_input).
MrcSpec parse_mrc_spec(std::string_view text, int points);

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
// "lru,s3fifo(small=0.2,threshold=1),arc": commas inside parentheses belong
// to the policy. Throws Error(bad_input) starting with `what`.
std::vector<GridPolicy> parse_policy_list(std::string_view text, std::string_view what);
// "1k,5k,10k,25k" (entries; k = 1,000, M = 1,000,000) or byte sizes ("64MB",
// powers of 1024 as in a tier spec). Throws Error(bad_input).
GridSize parse_grid_size(std::string_view text, std::string_view what);
std::vector<GridSize> parse_size_list(std::string_view text, std::string_view what);

struct SimulateConfig {
  std::string trace_path;
  CsvColumns csv;
  std::vector<TierSpec> tiers;  // l1/l2/l3, memory semantics
  // e.g. {{"l1"}, {"l1","l2"}}; empty: all tiers together. An empty entry
  // ({}, `--caches none`) is the no-cache baseline, which has no row of its own.
  std::vector<std::vector<std::string>> configurations;
  std::string costs_path;         // summary.json; empty: no prediction
  std::uint64_t warmup = 0;       // the first N requests only warm the caches
  std::uint64_t value_bytes = 0;  // entry size when the trace has none (0: unknown)
  std::vector<MrcSpec> mrc;
  std::optional<PolicyGridSpec> grid;
  // SHARDS rate (--sample) for the one-pass LRU curves and the policy grid;
  // 1: exact. Unset: curves exact, the grid sampled when its key space is
  // large (grid_sample_rate).
  std::optional<double> sample_rate;
  unsigned threads = 0;  // for per-capacity curves; 0: hardware
  // The grid samples automatically above this many distinct keys, aiming at
  // this many in the sample (settings for tests; the command line keeps the
  // defaults).
  double grid_auto_keys = 1e6, grid_sample_keys = 1e5;
};

// The sampling rate simulate picks for a policy grid over `distinct_keys`
// keys (estimated) when --sample is not given: 1 (every request) up to
// `auto_keys` keys; above, the smallest rate that keeps about `sample_keys`
// keys in the sample and every scaled cache at 500 entries or more (a byte
// size counts as bytes / mean_entry_bytes entries; 0: unknown, not counted);
// 1 if that rate is over 0.5 (too little work saved).
double grid_sample_rate(double distinct_keys, const PolicyGridSpec& grid, double mean_entry_bytes,
                        double auto_keys = 1e6, double sample_keys = 1e5);

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

SimulateResult run_simulate(const SimulateConfig& config);

// Building blocks, exposed for tests and bench/bench_simulate.cpp.
// Predicted latency of a configuration (which tiers it has) that served
// served[0..3] requests from l1, l2, l3 and compute.
SimPrediction predict_latency(const SimCosts& c, bool l1, bool l2, bool l3, const std::uint64_t served[4]);
// Hit ratio at each capacity for an LRU cache alone over `keys`, in one pass
// (exact: Fenwick tree over last-access times, renumbered to stay within
// 2 x distinct keys). The first `warmup` accesses are not counted.
std::vector<double> lru_curve_one_pass(const std::vector<std::uint64_t>& keys,
                                       const std::vector<std::uint64_t>& capacities, std::uint64_t warmup = 0);
// The same by one PolicyCache per capacity, simulated in parallel.
std::vector<double> curve_per_capacity(const std::vector<std::uint64_t>& keys, Policy policy, double ttl_s,
                                       const std::vector<std::uint64_t>& capacities, unsigned threads = 0,
                                       std::uint64_t warmup = 0);

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
