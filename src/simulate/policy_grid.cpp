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

TierSpec cell_spec(const PolicyGridSpec& g, const GridPolicy& p, const GridSize& s) {
  TierSpec t;
  t.tier = g.tier;
  t.policy = p.policy;
  t.params = p.params;
  t.max_entries = s.entries;
  t.max_bytes = s.bytes;
  t.ttl_s = g.ttl_s;
  return t;
}

std::vector<TierSpec> cell_specs(const PolicyGridSpec& g) {
  std::vector<TierSpec> specs;
  for (const auto& p : g.policies)
    for (const auto& s : g.sizes)
      specs.push_back(cell_spec(g, p, s));
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

namespace detail {

GridRun::GridRun(const PolicyGridSpec& spec, unsigned threads) : spec_(spec), sweep_(cell_specs(spec), threads) {}

bool GridRun::byte_limits() const noexcept {
  return std::any_of(spec_.sizes.begin(), spec_.sizes.end(), [](const GridSize& s) { return s.bytes != 0; });
}

void GridRun::flush() {
  if (keys_.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  sweep_.feed(keys_.data(), times_.data(), sized_ ? sizes_.data() : nullptr, keys_.size());
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  keys_.clear();
  times_.clear();
  sizes_.clear();
}

void GridRun::access(const CacheKey& key, Nanos now, std::uint64_t bytes) {
  keys_.push_back(key);
  times_.push_back(now);
  sizes_.push_back(bytes);
  sized_ = sized_ || bytes != 0;
  if (keys_.size() >= (1u << 20)) flush();
}

void GridRun::reset() {
  flush();
  sweep_.reset_counters();
}

void GridRun::invalidate(std::uint64_t leaving) {
  if (spec_.tier == CacheLevel::l3) return;
  flush();  // the buffered accesses came before the update
  sweep_.erase_version(leaving);
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

PolicyGridResult GridRun::finish(const std::optional<SimCosts>& costs) {
  flush();
  PolicyGridResult g;
  g.spec = spec_;
  g.threads = sweep_.threads();
  g.seconds = seconds_;
  const auto t = static_cast<std::size_t>(spec_.tier);
  for (std::size_t i = 0; i < spec_.policies.size() * spec_.sizes.size(); ++i) {
    GridCell c;
    c.policy = i / spec_.sizes.size();
    c.size = i % spec_.sizes.size();
    const auto& k = sweep_.cache(i).counters();
    c.lookups = k.hits + k.misses;
    c.hits = k.hits;
    c.evictions = k.evictions;
    c.miss_ratio = c.lookups ? static_cast<double>(k.misses) / static_cast<double>(c.lookups) : 0;
    c.requested_bytes = sweep_.requested_bytes(i);
    c.missed_bytes = sweep_.missed_bytes(i);
    if (c.requested_bytes)
      c.byte_miss_ratio = static_cast<double>(c.missed_bytes) / static_cast<double>(c.requested_bytes);
    if (costs && c.lookups) {
      std::uint64_t served[4] = {0, 0, 0, k.misses};
      served[t] = k.hits;
      c.predicted = predict_latency(*costs, t == 0, t == 1, t == 2, served);
    }
    g.cells.push_back(c);
  }
  g.recommendation = recommend(g, costs.has_value());
  return g;
}

}  // namespace detail
}  // namespace inferprof
