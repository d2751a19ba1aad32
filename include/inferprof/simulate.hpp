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
#include "inferprof/simulate_result.hpp"
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

// `points`: how many log-spaced capacities a range gives. Throws Error(bad_input).
MrcSpec parse_mrc_spec(std::string_view text, int points);

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

}  // namespace inferprof
