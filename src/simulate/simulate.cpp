// run_simulate: one streaming pass over the trace drives every configuration
// (L1 -> L2 -> L3 -> compute, exactly as Pipeline::serve) and every
// miss-ratio curve; a record is dropped as soon as it has been seen.
#include "inferprof/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "cache/hierarchy.hpp"
#include "cache/policy_cache.hpp"
#include "inferprof/error.hpp"
#include "simulate/curves.hpp"

namespace inferprof {

namespace {

using detail::SimValue;
using Cache = PolicyCache<SimValue>;

// The halves of the simulator's keys. Result tiers (L1/L2) key on model
// version + input key, L3 on the (fixed) preprocessing + input key, as the
// real tiers do; a model_update swaps the version half.
constexpr std::uint64_t kPreprocessedTag = 0x9E3779B97F4A7C15ull;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct ConfigState {
  std::string name;
  std::unique_ptr<Cache> l1, l2, l3;
  std::vector<const TierSpec*> specs;      // in l1, l2, l3 order
  std::uint64_t served[4] = {0, 0, 0, 0};  // l1, l2, l3, compute

  void reset() {
    for (Cache* c : {l1.get(), l2.get(), l3.get()})
      if (c) c->reset_counters();
    std::fill(std::begin(served), std::end(served), 0);
  }
  // The walk Pipeline::serve takes (cache/hierarchy.hpp), without the model:
  // values are only sizes, and a hit is the key being held.
  struct Steps {
    ConfigState& s;
    const CacheKey& rkey;
    const CacheKey& pkey;
    std::uint64_t rbytes, pbytes;
    Nanos now;
    struct Nothing {};
    Cache* tier(CacheLevel l) const {
      return l == CacheLevel::l1 ? s.l1.get() : l == CacheLevel::l2 ? s.l2.get() : s.l3.get();
    }
    bool has(CacheLevel l) const { return tier(l) != nullptr; }
    Nothing phase() const { return {}; }
    Nothing at(CacheLevel) const { return {}; }
    bool get_result(CacheLevel l) { return tier(l)->get(rkey, now) != nullptr; }
    void put_result(CacheLevel l, bool) { tier(l)->put(rkey, SimValue{}, rbytes, now); }
    bool get_input() { return s.l3->get(pkey, now) != nullptr; }
    bool prepare() const { return true; }
    void put_input(bool) { s.l3->put(pkey, SimValue{}, pbytes, now); }
    bool compute(bool) const { return true; }
    bool cacheable(bool) const { return true; }
    bool wants_result() const { return false; }
    bool encode(bool) const { return true; }
    void serve(bool) const {}
  };
  void serve(const CacheKey& rkey, const CacheKey& pkey, std::uint64_t rbytes, std::uint64_t pbytes, Nanos now) {
    Steps steps{*this, rkey, pkey, rbytes, pbytes, now};
    ++served[static_cast<int>(walk_hierarchy(steps))];
  }
  // What ModelUpdates::go_live does to the real L1/L2: the leaving version's
  // results can no longer be asked for, so they stop taking room. Dropped
  // entries count nowhere, as in the real tiers.
  void invalidate(std::uint64_t leaving) {
    for (Cache* c : {l1.get(), l2.get()})
      if (c) c->erase_if([leaving](const CacheKey& k) { return k.hi == leaving; });
  }
};

// The curve of one tier alone in front of compute.
struct MrcState {
  MrcSpec spec;
  bool one_pass = false;
  detail::ShardsSample sample{1};
  detail::LruStackDistance stack;
  std::unique_ptr<detail::CurveCounter> counter;
  // Eight disjoint sub-samples at rate/8 each: their spread bounds the error.
  std::vector<detail::LruStackDistance> sub_stacks;
  std::vector<detail::CurveCounter> sub_counters;
  std::unique_ptr<detail::CapacitySweep> sweep;
  std::vector<CacheKey> keys;
  std::vector<Nanos> times;
  std::uint64_t sampled = 0, all = 0;
  double seconds = 0;

  void flush() {
    if (!sweep || keys.empty()) return;
    auto t0 = std::chrono::steady_clock::now();
    sweep->feed(keys.data(), times.data(), keys.size());
    seconds += seconds_since(t0);
    keys.clear();
    times.clear();
  }
  void access(const CacheKey& key, Nanos now) {
    if (!one_pass) {
      keys.push_back(key);
      times.push_back(now);
      if (keys.size() >= (1u << 20)) flush();
      return;
    }
    const std::uint64_t h = detail::ShardsSample::hash(key);
    ++all;
    if (!sample.keeps(h)) return;
    ++sampled;
    counter->record(stack.access(h));
    if (!sub_stacks.empty()) {
      const std::size_t g = detail::ShardsSample::subsample(h);
      sub_counters[g].record(sub_stacks[g].access(h));
    }
  }
  void reset() {
    flush();
    if (sweep) sweep->reset_counters();
    if (counter) counter->reset();
    for (auto& c : sub_counters)
      c.reset();
    sampled = all = 0;
  }
  // A model_update drops the leaving version's results from the per-capacity
  // caches (result tiers only). The one-pass stack cannot drop keys: its
  // curve keeps them until they age out (see the warning in run_simulate).
  void invalidate(std::uint64_t leaving) {
    if (!sweep || spec.tier == CacheLevel::l3) return;
    flush();  // the buffered accesses came before the update
    sweep->erase_version(leaving);
  }
};

// The key space of the policy grid's tier, from a first pass over the trace:
// distinct keys (model versions included, as the grid keys them) and the
// mean entry size, for choosing a sampling rate before the simulation.
struct KeySpace {
  double keys = 0;
  double mean_bytes = 0;  // 0: unknown
};
KeySpace scan_key_space(const SimulateConfig& config, const std::optional<SimCosts>& costs) {
  auto source = open_sim_source(config.trace_path, config.csv);
  const bool l3 = config.grid->tier == CacheLevel::l3;
  detail::DistinctKeys keys;
  std::uint64_t version = 0, sized = 0;
  double bytes = 0;
  SimRecord rec;
  while (source->next(rec)) {
    if (rec.kind == SimRecord::Kind::model_update) {
      version = rec.key;
      continue;
    }
    keys.add(detail::ShardsSample::hash(l3 ? CacheKey{kPreprocessedTag, rec.key} : CacheKey{version, rec.key}));
    if (rec.size) {
      ++sized;
      bytes += static_cast<double>(rec.size);
    }
  }
  KeySpace k;
  k.keys = keys.estimate();
  const std::uint64_t fallback = config.value_bytes ? config.value_bytes
                                 : !costs           ? 0
                                 : l3               ? costs->preprocessed_bytes
                                                    : costs->result_bytes;
  k.mean_bytes = sized ? bytes / static_cast<double>(sized) : static_cast<double>(fallback);
  return k;
}

const TierSpec* find_tier(const std::vector<TierSpec>& tiers, CacheLevel level) {
  for (const auto& t : tiers)
    if (t.tier == level) return &t;
  return nullptr;
}

std::string config_name(const std::vector<std::string>& tiers) {
  std::string s;
  for (const auto& t : tiers)
    s += (s.empty() ? "" : ",") + t;
  return s;
}

// The weighted 99th percentile of a mixture of per-outcome samples, each
// shifted by its outcome's cache work.
struct MixturePart {
  const std::vector<double>* samples;  // empty: the outcome's mean enters as one point
  double mean_us, offset_us, weight;
};
double mixture_p99(const std::vector<MixturePart>& parts) {
  std::vector<std::pair<double, double>> items;  // (value, weight)
  for (const auto& p : parts) {
    if (p.weight <= 0) continue;
    if (p.samples->empty()) {
      items.emplace_back(p.mean_us + p.offset_us, p.weight);
      continue;
    }
    const double w = p.weight / static_cast<double>(p.samples->size());
    for (double v : *p.samples)
      items.emplace_back(v + p.offset_us, w);
  }
  std::sort(items.begin(), items.end());
  double total = 0;
  for (const auto& [v, w] : items)
    total += w;
  double cum = 0;
  for (const auto& [v, w] : items) {
    cum += w;
    if (cum >= 0.99 * total) return v;
  }
  return items.empty() ? 0 : items.back().first;
}

}  // namespace

SimPrediction predict_latency(const SimCosts& c, bool l1, bool l2, bool l3, const std::uint64_t served[4]) {
  SimPrediction p;
  const double n = static_cast<double>(served[0] + served[1] + served[2] + served[3]);
  if (n == 0) return p;
  const SimCacheCosts cache = cache_costs(c, l1, l2, l3);
  // A request: what served it costs outside the cache, plus the lookups it
  // made and the inserts it caused.
  const double base[4] = {c.hit_mean_us, c.hit_mean_us, c.l3_hit_mean_us, c.miss_mean_us};
  const std::vector<double>* samples[4] = {&c.hit_us, &c.hit_us, &c.l3_hit_us, &c.miss_us};
  std::vector<MixturePart> parts;
  p.available = true;
  for (int o = 0; o < 4; ++o) {
    const double f = static_cast<double>(served[o]) / n;
    p.outcome_us[o] = base[o] + cache.total(o);
    p.mean_us += f * p.outcome_us[o];
    p.cache_us += f * cache.total(o);
    parts.push_back({samples[o], base[o], cache.total(o), f});
  }
  // The baseline: every request computed, no cache work.
  p.speedup = p.mean_us > 0 ? c.miss_mean_us / p.mean_us : 1;
  if (c.per_request) p.p99_us = mixture_p99(parts);
  return p;
}

namespace {

SimTierResult tier_result(const Cache& c, const TierSpec& spec) {
  SimTierResult r;
  r.spec = spec;
  const auto& k = c.counters();
  r.hits = k.hits;
  r.misses = k.misses;
  r.lookups = k.hits + k.misses;
  r.inserts = k.inserts + k.replaces;  // as TierStats counts them
  r.evictions = k.evictions;
  r.expirations = k.expirations;
  r.rejected = k.rejected;
  r.entries = c.size();
  r.bytes = c.bytes();
  return r;
}

// One simulation: its configurations, curves and policy grid, all fed by one
// streaming pass over the trace.
class Simulation {
 public:
  Simulation(const SimulateConfig& c, SimulateResult& r) : config(c), res(r) {}
  void build_configurations();
  void build_curves();
  void stream();
  void add_warnings();
  void config_results();
  void curve_results();

 private:
  const SimulateConfig& config;
  SimulateResult& res;
  std::vector<ConfigState> states;
  std::vector<MrcState> curves;
  std::optional<detail::GridRun> grid;
  double grid_rate = 1;  // its SHARDS rate
  double grid_keys = 0;  // its tier's distinct keys, when a first pass counted them
  // Which entry sizes a byte limit needs: results for L1/L2, preprocessed for L3.
  bool result_limits = false, preprocessed_limits = false;
};

void Simulation::build_configurations() {
  // Configurations: each a set of tiers, built from the --tier specs.
  std::vector<std::vector<std::string>> confs = config.configurations;
  if (confs.empty() && !config.tiers.empty()) {
    std::vector<std::string> all;
    for (CacheLevel t : {CacheLevel::l1, CacheLevel::l2, CacheLevel::l3})
      if (find_tier(config.tiers, t)) all.emplace_back(enum_name(t));
    confs.push_back(all);
  }
  for (const auto& conf : confs) {
    if (conf.empty()) continue;  // `--caches none`: the baseline, always predicted, has no state
    ConfigState s;
    s.name = config_name(conf);
    for (const auto& t : conf) {
      const std::optional<CacheLevel> level = parse_enum<CacheLevel>(t);
      if (!level)
        throw bad_input(
            fmt::format("--caches {}: unknown tier '{}' (expected {})", s.name, t, enum_choices<CacheLevel>()));
      const TierSpec* spec = find_tier(config.tiers, *level);
      if (!spec) throw bad_input(fmt::format("--caches {}: tier {} has no --tier {}=POLICY:CAPACITY", s.name, t, t));
      std::unique_ptr<Cache>& slot = *level == CacheLevel::l1 ? s.l1 : *level == CacheLevel::l2 ? s.l2 : s.l3;
      if (slot) throw bad_input(fmt::format("--caches {}: tier {} named twice", s.name, t));
      slot = std::make_unique<Cache>(*spec);
      bool& limits = *level == CacheLevel::l3 ? preprocessed_limits : result_limits;
      limits = limits || spec->max_bytes != 0;
    }
    for (Cache* c : {s.l1.get(), s.l2.get(), s.l3.get()})
      if (c)
        s.specs.push_back(find_tier(config.tiers, c == s.l1.get()   ? CacheLevel::l1
                                                  : c == s.l2.get() ? CacheLevel::l2
                                                                    : CacheLevel::l3));
    states.push_back(std::move(s));
  }
}

void Simulation::build_curves() {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  for (const auto& m : config.mrc) {
    MrcState s;
    s.spec = m;
    s.one_pass = m.policy == Policy::lru && m.ttl_s == 0;
    if (s.one_pass) {
      s.sample = detail::ShardsSample(config.sample_rate.value_or(1.0));
      const double rate = s.sample.rate;
      s.counter = std::make_unique<detail::CurveCounter>(m.capacities, 1.0 / rate);
      if (rate < 1) {
        s.sub_stacks.resize(8);
        for (int g = 0; g < 8; ++g)
          s.sub_counters.emplace_back(m.capacities, 8.0 / rate);
      }
    } else {
      s.sweep = std::make_unique<detail::CapacitySweep>(m.policy, m.ttl_s, m.capacities,
                                                        config.threads ? config.threads : hw);
    }
    curves.push_back(std::move(s));
  }
  if (config.grid) {
    grid_rate = config.sample_rate.value_or(1.0);
    if (!config.sample_rate) {
      const KeySpace space = scan_key_space(config, res.costs);
      grid_keys = space.keys;
      grid_rate =
          grid_sample_rate(space.keys, *config.grid, space.mean_bytes, config.grid_auto_keys, config.grid_sample_keys);
    }
    grid.emplace(*config.grid, config.threads ? config.threads : hw, grid_rate);
    bool& limits = config.grid->tier == CacheLevel::l3 ? preprocessed_limits : result_limits;
    limits = limits || grid->byte_limits();
  }
}

void Simulation::stream() {
  const SimulateConfig& config = this->config;  // in registers, not reloaded through this
  SimulateResult& res = this->res;
  auto source = open_sim_source(config.trace_path, config.csv);
  res.trace_format = source->format();
  const std::uint64_t fallback_r = config.value_bytes ? config.value_bytes : res.costs ? res.costs->result_bytes : 0;
  const std::uint64_t fallback_p = config.value_bytes ? config.value_bytes
                                   : res.costs        ? res.costs->preprocessed_bytes
                                                      : 0;
  bool sized_records = false;
  std::uint64_t version = 0;
  Nanos now = 0;
  SimRecord rec;
  // The hot loop works on locals: through `this` the compiler must reload
  // the vectors after every cache call (about 15% of the pass).
  std::vector<ConfigState> states = std::move(this->states);
  std::vector<MrcState> curves = std::move(this->curves);
  detail::GridRun* const grid = this->grid ? &*this->grid : nullptr;
  std::uint64_t requests = 0;
  bool timestamps = false;
  auto t0 = std::chrono::steady_clock::now();
  while (source->next(rec)) {
    if (rec.ts_ms) {
      // llround is undefined past the int64 range (e.g. epoch microseconds in a ts_ms column).
      const double ns = std::round(*rec.ts_ms * 1e6);
      if (!(std::fabs(ns) < 9.2e18))
        throw bad_input(at_line(config.trace_path, rec.line, fmt::format("ts_ms {} is out of range", *rec.ts_ms)));
      now = static_cast<Nanos>(ns);
      timestamps = true;
    }
    if (rec.kind == SimRecord::Kind::model_update) {
      if (rec.key != version) {
        for (auto& s : states)
          s.invalidate(version);
        for (auto& m : curves)
          m.invalidate(version);
        if (grid) grid->invalidate(version);
      }
      version = rec.key;
      ++res.model_updates;
      continue;
    }
    const std::uint64_t rbytes = rec.size ? rec.size : fallback_r;
    const std::uint64_t pbytes = rec.size ? rec.size : fallback_p;
    sized_records = sized_records || rec.size != 0;
    if ((result_limits && rbytes == 0) || (preprocessed_limits && pbytes == 0))
      throw bad_input(at_line(config.trace_path, rec.line,
                              fmt::format("a tier has a byte limit but this request's entry size is unknown "
                                          "({} entries, for {}): give --value-bytes N, a CSV size column, or --costs "
                                          "from a run whose tiers held entries",
                                          result_limits && rbytes == 0 ? "result" : "preprocessed",
                                          result_limits && rbytes == 0 ? "l1/l2" : "l3")));
    const CacheKey rkey{version, rec.key}, pkey{kPreprocessedTag, rec.key};
    for (auto& s : states)
      s.serve(rkey, pkey, rbytes, pbytes, now);
    for (auto& m : curves)
      m.access(m.spec.tier == CacheLevel::l3 ? pkey : rkey, now);
    if (grid) config.grid->tier == CacheLevel::l3 ? grid->access(pkey, now, pbytes) : grid->access(rkey, now, rbytes);
    if (++requests == config.warmup) {
      if (grid) grid->reset();
      for (auto& s : states)
        s.reset();
      for (auto& m : curves)
        m.reset();
    }
  }
  res.seconds = seconds_since(t0);
  res.requests = requests;
  res.timestamps = timestamps;
  for (auto& m : curves)
    m.flush();
  this->states = std::move(states);
  this->curves = std::move(curves);
  if (grid) {
    res.grid = grid->finish(res.costs);
    res.grid->sampling.automatic = !config.sample_rate.has_value();
    res.grid->sampling.estimated_keys = grid_keys;
  }
  res.sizes = sized_records              ? "the trace's size column"
              : config.value_bytes       ? fmt::format("--value-bytes {}", config.value_bytes)
              : fallback_r || fallback_p ? fmt::format("the costs run's mean entries ({} B results, {} B preprocessed)",
                                                       fallback_r, fallback_p)
                                         : "unknown (bytes held shown as 0)";
}

// A sampled grid's smallest miniature cache, when too small to follow its policy.
void grid_warnings(const PolicyGridResult& g, std::vector<std::string>& warnings) {
  if (g.sampling.rate >= 1) return;
  for (const GridCell& c : g.cells)
    if (c.policy == 0 && c.simulated_entries != 0 && c.simulated_entries < 100)
      warnings.push_back(fmt::format(
          "--policies: at sampling rate {:g}, size {} is simulated as a cache of {} entries, too few for a policy's "
          "partitions: its estimates are coarse (--sample 1: exact)",
          g.sampling.rate, g.spec.sizes[c.size].label, c.simulated_entries));
}

void Simulation::add_warnings() {
  if (res.grid) grid_warnings(*res.grid, res.warnings);
  res.measured = res.requests > config.warmup ? res.requests - config.warmup : 0;
  if (config.warmup > 0 && res.requests <= config.warmup)
    res.warnings.push_back(fmt::format("--warmup {} covers the whole trace ({} requests): nothing was measured",
                                       config.warmup, res.requests));
  bool ttl = false;
  for (const auto& t : config.tiers)
    ttl = ttl || t.ttl_s > 0;
  for (const auto& m : config.mrc)
    ttl = ttl || m.ttl_s > 0;
  if (ttl && !res.timestamps)
    res.warnings.push_back("a tier has a TTL but the trace has no timestamps: time stood still and nothing expired");
  if (res.model_updates > 0) {
    res.warnings.push_back(
        fmt::format("{} model_update events changed the result keys (L1/L2) and dropped the "
                    "leaving version's entries, as `run` and `compare` do with --store",
                    res.model_updates));
    for (const auto& m : curves)
      if (m.one_pass && m.spec.tier != CacheLevel::l3)
        res.warnings.push_back(
            fmt::format("--mrc {}: the one-pass LRU curve keeps a leaving model version's "
                        "results until they age out, so past a model_update its hit ratios may "
                        "read low",
                        enum_name(m.spec.tier)));
  }
}

void Simulation::config_results() {
  if (res.costs) {
    const std::uint64_t none[4] = {0, 0, 0, res.measured};
    res.baseline = predict_latency(*res.costs, false, false, false, none);
  }
  for (auto& s : states) {
    SimConfigResult r;
    r.name = s.name;
    std::size_t i = 0;
    for (Cache* c : {s.l1.get(), s.l2.get(), s.l3.get()})
      if (c) r.tiers.push_back(tier_result(*c, *s.specs[i++]));
    r.served_l1 = s.served[0];
    r.served_l2 = s.served[1];
    r.served_l3 = s.served[2];
    r.served_compute = s.served[3];
    if (res.costs) {
      r.predicted = predict_latency(*res.costs, s.l1 != nullptr, s.l2 != nullptr, s.l3 != nullptr, s.served);
      // Each cost a configuration needs that the costs run did not measure, said once.
      for (auto& a : cache_costs(*res.costs, s.l1 != nullptr, s.l2 != nullptr, s.l3 != nullptr).assumed) {
        std::string w = "cost of " + a + " (the costs run did not measure it)";
        if (std::find(res.warnings.begin(), res.warnings.end(), w) == res.warnings.end()) res.warnings.push_back(w);
      }
    }
    res.configurations.push_back(std::move(r));
  }
}

void Simulation::curve_results() {
  for (auto& m : curves) {
    MrcResult r;
    r.spec = m.spec;
    r.seconds = m.seconds;
    std::vector<double> ratios;
    if (m.one_pass) {
      r.method = "one-pass stack distances";
      r.sample_rate = m.sample.rate;
      r.sampled_requests = m.sampled;
      r.distinct_keys = m.stack.distinct();
      ratios = m.counter->hit_ratios();
      if (m.sample.rate < 1) {
        ratios = m.counter->hit_ratios_adjusted(static_cast<double>(m.all) * m.sample.rate);
        r.method += fmt::format(" (SHARDS-adj sample, rate {:g})", m.sample.rate);
        r.sampled_keys = m.stack.distinct();
        // Each sub-sample is an estimate at rate/8; the spread of eight of
        // them, shrunk by sqrt(8), is the standard error at the full rate.
        double worst = 0;
        for (std::size_t p = 0; p < ratios.size(); ++p) {
          double mean = 0, var = 0;
          std::vector<double> v;
          for (const auto& c : m.sub_counters)
            v.push_back(c.hit_ratios_adjusted(static_cast<double>(m.all) * m.sample.rate / 8)[p]);
          for (double x : v)
            mean += x / 8;
          for (double x : v)
            var += (x - mean) * (x - mean) / 7;
          worst = std::max(worst, 1.96 * std::sqrt(var / 8));
        }
        r.error_bound = worst;
        if (static_cast<double>(m.spec.capacities.front()) < 10 / m.sample.rate)
          res.warnings.push_back(fmt::format(
              "--mrc {}: at sampling rate {:g} one sampled key stands for {:g}, so capacities under {:g} entries are "
              "coarse (SHARDS cannot resolve them)",
              enum_name(m.spec.tier), m.sample.rate, 1 / m.sample.rate, 10 / m.sample.rate));
      }
    } else {
      r.method = fmt::format("one simulation per capacity ({} threads)", m.sweep->threads());
      ratios = m.sweep->hit_ratios();
    }
    for (std::size_t p = 0; p < ratios.size(); ++p) {
      MrcPoint pt;
      pt.capacity = m.spec.capacities[p];
      pt.hit_ratio = ratios[p];
      if (res.costs) {
        // The tier alone in front of compute: hits are served by it, misses computed.
        const auto t = static_cast<std::size_t>(m.spec.tier);
        const double hits = std::round(pt.hit_ratio * 1e9);
        std::uint64_t served[4] = {0, 0, 0, 1000000000 - static_cast<std::uint64_t>(hits)};
        served[t] = static_cast<std::uint64_t>(hits);
        pt.predicted_mean_us = predict_latency(*res.costs, t == 0, t == 1, t == 2, served).mean_us;
      }
      r.points.push_back(pt);
    }
    res.mrc.push_back(std::move(r));
  }
}

}  // namespace

SimulateResult run_simulate(const SimulateConfig& config) {
  SimulateResult res;
  res.trace_path = config.trace_path;
  res.warmup = config.warmup;
  if (config.tiers.empty() && config.mrc.empty() && !config.grid)
    throw bad_input(
        "simulate: nothing to simulate: give at least one --tier (e.g. --tier l1=lru:10000), --mrc, or --policies "
        "with --sizes");
  if (config.sample_rate && !(*config.sample_rate >= 1.0 / (1 << 24) && *config.sample_rate <= 1))
    throw bad_input(fmt::format("--sample {}: expected a rate in [2^-24, 1] (1: exact)", *config.sample_rate));
  for (const auto& t : config.tiers)
    validate_tier_spec(t, fmt::format("--tier {}", enum_name(t.tier)));
  if (!config.costs_path.empty()) res.costs = load_sim_costs(config.costs_path);
  Simulation sim(config, res);
  sim.build_configurations();
  sim.build_curves();
  sim.stream();
  sim.add_warnings();
  sim.config_results();
  sim.curve_results();
  return res;
}

}  // namespace inferprof
