// simulate --policies P1,P2,... --sizes S1,S2,...: every policy at every size,
// each cache alone in front of compute, and the recommendation for a budget.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>

#include "cache/policy_cache.hpp"
#include "inferprof/error.hpp"
#include "simulate/curves.hpp"

namespace inferprof {

namespace {

// Splits at the commas outside parentheses.
std::vector<std::string_view> split_top_level(std::string_view text) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    } else if (text[i] == '(') {
      ++depth;
    } else if (text[i] == ')') {
      --depth;
    }
  }
  return out;
}

// A size scaled by the sampling rate (at least one entry or byte).
std::uint64_t scaled(std::uint64_t limit, double rate) {
  if (limit == 0 || rate >= 1) return limit;
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(static_cast<double>(limit) * rate)));
}

TierSpec cell_spec(const PolicyGridSpec& g, const GridPolicy& p, const GridSize& s, double rate) {
  TierSpec t;
  t.tier = g.tier;
  t.policy = p.policy;
  t.params = p.params;
  t.max_entries = scaled(s.entries, rate);
  t.max_bytes = scaled(s.bytes, rate);
  t.ttl_s = g.ttl_s;
  return t;
}

std::vector<TierSpec> cell_specs(const PolicyGridSpec& g, double rate) {
  std::vector<TierSpec> specs;
  for (const auto& p : g.policies)
    for (const auto& s : g.sizes)
      specs.push_back(cell_spec(g, p, s, rate));
  return specs;
}

bool within(const GridSize& s, const GridSize& budget) {
  if (budget.bytes != 0) return s.bytes != 0 && s.bytes <= budget.bytes;
  return s.entries != 0 && s.entries <= budget.entries;
}

}  // namespace

std::vector<GridPolicy> parse_policy_list(std::string_view text, std::string_view what) {
  std::vector<GridPolicy> out;
  for (std::string_view item : split_top_level(text)) {
    GridPolicy p;
    p.policy = parse_policy_spec(item, p.params, fmt::format("{} {}", what, item));
    p.label = policy_label(p.policy, p.params);
    if (p.policy == Policy::ttl)
      throw bad_input(fmt::format("{}: policy ttl needs a time to live, which --policies has not: use --tier", what));
    for (const auto& q : out)
      if (q.label == p.label) throw bad_input(fmt::format("{}: policy {} named twice", what, p.label));
    out.push_back(std::move(p));
  }
  return out;
}

GridSize parse_grid_size(std::string_view text, std::string_view what) {
  GridSize s;
  s.label = std::string(text);
  if (const auto bytes = parse_byte_size(text)) {
    s.bytes = *bytes;
    return s;
  }
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  const std::string_view unit = text.substr(static_cast<std::size_t>(end - text.data()));
  const std::uint64_t mult = unit.empty() ? 1 : unit == "k" || unit == "K" ? 1000 : unit == "M" ? 1000000 : 0;
  if (ec != std::errc() || n == 0 || mult == 0 || n > UINT64_MAX / mult) {
    throw bad_input(
        fmt::format("{}: size '{}' is not an entry count (10000, 10k, 2M) or a byte size (64MB, 1GiB)", what, text));
  }
  s.entries = n * mult;
  return s;
}

std::vector<GridSize> parse_size_list(std::string_view text, std::string_view what) {
  std::vector<GridSize> out;
  for (std::string_view item : split_top_level(text)) {
    GridSize s = parse_grid_size(item, what);
    for (const auto& q : out)
      if (q.entries == s.entries && q.bytes == s.bytes)
        throw bad_input(fmt::format("{}: size {} given twice", what, s.label));
    out.push_back(std::move(s));
  }
  return out;
}

double grid_sample_rate(double distinct_keys, const PolicyGridSpec& grid, double mean_entry_bytes, double auto_keys,
                        double sample_keys) {
  constexpr double kMinScaled = 500;  // entries the smallest scaled cache should hold
  if (distinct_keys <= auto_keys || distinct_keys <= 0) return 1;
  double rate = sample_keys / distinct_keys;
  for (const GridSize& s : grid.sizes) {
    const double entries = s.entries              ? static_cast<double>(s.entries)
                           : mean_entry_bytes > 0 ? static_cast<double>(s.bytes) / mean_entry_bytes
                                                  : 0;
    if (entries > 0) rate = std::max(rate, kMinScaled / entries);
  }
  // A rate SHARDS can express (a whole number of 2^-24 steps), and worth it.
  rate = std::ceil(rate * (1 << 24)) / (1 << 24);
  return rate > 0.5 ? 1 : rate;
}

namespace detail {

GridRun::GridRun(const PolicyGridSpec& spec, unsigned threads, double rate) : spec_(spec), sample_(rate) {
  main_.sweep = std::make_unique<CapacitySweep>(cell_specs(spec, rate), threads);
  if (rate < 1) {
    subs_.resize(8);
    for (auto& sub : subs_)
      sub.sweep = std::make_unique<CapacitySweep>(cell_specs(spec, rate / 8), threads);
  }
}

bool GridRun::byte_limits() const noexcept {
  return std::any_of(spec_.sizes.begin(), spec_.sizes.end(), [](const GridSize& s) { return s.bytes != 0; });
}

void GridRun::Stream::flush() {
  if (keys.empty()) return;
  sweep->feed(keys.data(), times.data(), sized ? sizes.data() : nullptr, keys.size());
  keys.clear();
  times.clear();
  sizes.clear();
}

void GridRun::flush() {
  const auto t0 = std::chrono::steady_clock::now();
  main_.flush();
  for (auto& sub : subs_)
    sub.flush();
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void GridRun::access(const CacheKey& key, Nanos now, std::uint64_t bytes) {
  ++requests_;
  bytes_ += bytes;
  if (!subs_.empty()) {
    const std::uint64_t h = ShardsSample::hash(key);
    if (!sample_.keeps(h)) return;
    subs_[ShardsSample::subsample(h)].push(key, now, bytes);
  }
  ++sampled_;
  main_.push(key, now, bytes);
  if (main_.keys.size() >= (1u << 20)) flush();
}

void GridRun::reset() {
  flush();
  main_.sweep->reset_counters();
  for (auto& sub : subs_)
    sub.sweep->reset_counters();
  requests_ = sampled_ = bytes_ = 0;
}

void GridRun::invalidate(std::uint64_t leaving) {
  if (spec_.tier == CacheLevel::l3) return;
  flush();  // the buffered accesses came before the update
  main_.sweep->erase_version(leaving);
  for (auto& sub : subs_)
    sub.sweep->erase_version(leaving);
}

namespace {

// Lower is better: predicted mean latency, else miss ratio.
double score(const GridCell& c, bool by_latency) {
  return by_latency ? c.predicted.mean_us : c.miss_ratio;
}

std::optional<GridRecommendation> recommend(const PolicyGridResult& g, bool by_latency) {
  const GridSize budget =
      g.spec.budget
          ? *g.spec.budget
          : *std::max_element(g.spec.sizes.begin(), g.spec.sizes.end(), [](const GridSize& a, const GridSize& b) {
              return a.bytes != b.bytes ? a.bytes < b.bytes : a.entries < b.entries;
            });
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < g.cells.size(); ++i) {
    const GridCell& c = g.cells[i];
    if (!within(g.spec.sizes[c.size], budget) || c.lookups == 0) continue;
    if (!best || score(c, by_latency) < score(g.cells[*best], by_latency)) best = i;
  }
  if (!best) return std::nullopt;
  GridRecommendation r;
  r.best = *best;
  r.by_latency = by_latency;
  for (std::size_t i = 0; i < g.cells.size(); ++i) {
    const GridCell& c = g.cells[i];
    if (c.policy == g.cells[*best].policy || !within(g.spec.sizes[c.size], budget) || c.lookups == 0) continue;
    if (!r.runner_up || score(c, by_latency) < score(g.cells[*r.runner_up], by_latency)) r.runner_up = i;
  }
  if (r.runner_up) {
    const double b = score(g.cells[r.best], by_latency);
    r.margin = score(g.cells[*r.runner_up], by_latency) - b;
    r.margin_pct = b > 0 ? 100 * r.margin / b : 0;
  }
  return r;
}

}  // namespace

namespace {

// A cell's miss ratio. Sampled, it is SHARDS-adj's (Waldspurger et al.,
// FAST '15): the sample's misses over the requests it should have caught
// (rate x all), not over those it did. A hot key in or out of the sample
// moves the request count far more than the misses (on the block-I/O trace
// at rate 0.1, a third more requests and a mean error of 0.17 instead of
// 0.008: docs/simulate.md).
double miss_ratio_of(const PolicyCache<SimValue>& c, double expected) {
  const auto& k = c.counters();
  if (expected > 0) return std::min(1.0, static_cast<double>(k.misses) / expected);
  const std::uint64_t n = k.hits + k.misses;
  return n ? static_cast<double>(k.misses) / static_cast<double>(n) : 0;
}

// ~95% bound on a sampled cell's miss-ratio error: each sub-sample is an
// estimate at rate / 8; the spread of the eight, shrunk by sqrt(8), is the
// standard error at the full rate (as for the sampled LRU curve).
double error_bound(const std::vector<const CapacitySweep*>& subs, std::size_t cell, double expected) {
  double v[8], mean = 0, var = 0;
  for (std::size_t g = 0; g < 8; ++g)
    mean += (v[g] = miss_ratio_of(subs[g]->cache(cell), expected / 8)) / 8;
  for (double x : v)
    var += (x - mean) * (x - mean) / 7;
  return 1.96 * std::sqrt(var / 8);
}

}  // namespace

GridCell GridRun::cell(std::size_t i, const std::optional<SimCosts>& costs) const {
  GridCell c;
  c.policy = i / spec_.sizes.size();
  c.size = i % spec_.sizes.size();
  const CapacitySweep& sweep = *main_.sweep;
  const auto& k = sweep.cache(i).counters();
  c.lookups = k.hits + k.misses;
  c.hits = k.hits;
  c.evictions = k.evictions;
  c.simulated_entries = sweep.cache(i).max_entries();
  c.simulated_bytes = sweep.cache(i).max_bytes();
  const bool sampled = !subs_.empty();
  const double expected = sampled ? sample_.rate * static_cast<double>(requests_) : 0;
  c.miss_ratio = miss_ratio_of(sweep.cache(i), expected);
  if (sampled) {
    std::vector<const CapacitySweep*> subs;
    for (const auto& sub : subs_)
      subs.push_back(sub.sweep.get());
    c.miss_ratio_error = error_bound(subs, i, expected);
  }
  c.requested_bytes = sweep.requested_bytes(i);
  c.missed_bytes = sweep.missed_bytes(i);
  if (c.requested_bytes) {
    // Sampled: SHARDS-adj again, the missed bytes over rate x all the bytes asked for.
    const double of = sampled ? sample_.rate * static_cast<double>(bytes_) : static_cast<double>(c.requested_bytes);
    c.byte_miss_ratio = std::min(1.0, static_cast<double>(c.missed_bytes) / of);
  }
  if (costs && c.lookups) {
    const auto t = static_cast<std::size_t>(spec_.tier);
    // Shares in parts per 10^9: the prediction needs only the proportions.
    const auto missed = static_cast<std::uint64_t>(std::llround(c.miss_ratio * 1e9));
    std::uint64_t served[4] = {0, 0, 0, missed};
    served[t] = 1000000000 - missed;
    c.predicted = predict_latency(*costs, t == 0, t == 1, t == 2, served);
  }
  return c;
}

PolicyGridResult GridRun::finish(const std::optional<SimCosts>& costs) {
  flush();
  PolicyGridResult g;
  g.spec = spec_;
  g.threads = main_.sweep->threads();
  g.seconds = seconds_;
  g.sampling.rate = sample_.rate;
  g.sampling.requests = requests_;
  g.sampling.sampled = sampled_;
  for (std::size_t i = 0; i < spec_.policies.size() * spec_.sizes.size(); ++i) {
    g.cells.push_back(cell(i, costs));
    g.sampling.max_error = std::max(g.sampling.max_error, g.cells.back().miss_ratio_error.value_or(0));
  }
  g.recommendation = recommend(g, costs.has_value());
  return g;
}

}  // namespace detail
}  // namespace inferprof
