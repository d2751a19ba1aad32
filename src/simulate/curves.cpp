// Miss-ratio curves: LRU in one pass from exact stack distances, any policy
// by one PolicyCache per capacity on parallel threads.
#include "simulate/curves.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <iterator>
#include <thread>

#include "cache/policy_cache.hpp"
#include "inferprof/error.hpp"

namespace inferprof {
namespace detail {

void DistinctKeys::add(std::uint64_t h) {
  if (smallest_.size() == kK && h >= *smallest_.rbegin()) return;
  if (smallest_.insert(h).second && smallest_.size() > kK) smallest_.erase(std::prev(smallest_.end()));
}

double DistinctKeys::estimate() const noexcept {
  if (smallest_.size() < kK) return static_cast<double>(smallest_.size());
  // The k-th smallest of n uniform hashes sits near k / n of the range.
  return static_cast<double>(kK - 1) / ((static_cast<double>(*smallest_.rbegin()) + 1) / 18446744073709551616.0);
}

void LruStackDistance::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.size() * 2, Slot{});
  --shift_;
  for (const Slot& s : old)
    if (s.pos != 0) find(s.key) = s;
}

void LruStackDistance::compact() {
  // Renumber the live keys 1..n in last-access order, leaving as much room
  // again, so the tree stays within 2 x distinct keys however long the trace.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> live;  // (position, slot)
  live.reserve(count_);
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].pos != 0) live.emplace_back(slots_[i].pos, static_cast<std::uint32_t>(i));
  std::sort(live.begin(), live.end());
  tree_.assign(std::max<std::size_t>(2 * live.size() + 2, 1024), 0);
  t_ = 0;
  for (const auto& [pos, slot] : live) {
    slots_[slot].pos = ++t_;
    add(t_, 1);
  }
}

std::uint64_t LruStackDistance::access(std::uint64_t key) {
  if (t_ + 1 >= tree_.size()) compact();
  if (2 * (count_ + 1) > slots_.size()) grow();
  Slot& s = find(key);
  std::uint64_t d = 0;
  if (s.pos != 0) {
    // Keys whose last access is after s.pos are the distinct keys used since.
    d = (count_ - prefix(s.pos)) + 1;
    add(s.pos, -1);
  } else {
    s.key = key;
    ++count_;
  }
  s.pos = ++t_;
  add(t_, 1);
  return d;
}

void CurveCounter::record(std::uint64_t distance) {
  ++requests;
  if (distance == 0) return;
  const double d = static_cast<double>(distance) * scale;
  // A hit at every capacity >= d: counted at the first such one, summed at the end.
  auto it = std::lower_bound(caps.begin(), caps.end(), d,
                             [](std::uint64_t c, double v) { return static_cast<double>(c) < v; });
  if (it != caps.end()) ++first_hit[static_cast<std::size_t>(it - caps.begin())];
}

std::vector<double> CurveCounter::hit_ratios() const {
  std::vector<double> out(caps.size(), 0);
  std::uint64_t cum = 0;
  for (std::size_t i = 0; i < caps.size(); ++i) {
    cum += first_hit[i];
    out[i] = requests ? static_cast<double>(cum) / static_cast<double>(requests) : 0;
  }
  return out;
}

std::vector<double> CurveCounter::hit_ratios_adjusted(double expected) const {
  std::vector<double> out(caps.size(), 0);
  if (expected <= 0) return out;
  const double adj = expected - static_cast<double>(requests);
  std::uint64_t cum = 0;
  for (std::size_t i = 0; i < caps.size(); ++i) {
    cum += first_hit[i];
    out[i] = std::clamp((static_cast<double>(cum) + adj) / expected, 0.0, 1.0);
  }
  return out;
}

namespace {

std::vector<TierSpec> specs_of(Policy policy, double ttl_s, const std::vector<std::uint64_t>& caps) {
  std::vector<TierSpec> specs(caps.size());
  for (std::size_t i = 0; i < caps.size(); ++i) {
    specs[i].policy = policy;
    specs[i].max_entries = caps[i];
    specs[i].ttl_s = ttl_s;
  }
  return specs;
}

}  // namespace

CapacitySweep::CapacitySweep(Policy policy, double ttl_s, const std::vector<std::uint64_t>& caps, unsigned threads)
    : CapacitySweep(specs_of(policy, ttl_s, caps), threads) {}

CapacitySweep::CapacitySweep(const std::vector<TierSpec>& specs, unsigned threads)
    : threads_(std::max(1u, std::min<unsigned>(threads ? threads : std::max(1u, std::thread::hardware_concurrency()),
                                               static_cast<unsigned>(specs.size())))),
      bytes_(specs.size()) {
  for (const TierSpec& s : specs)
    caches_.push_back(std::make_unique<PolicyCache<SimValue>>(s));
}
CapacitySweep::~CapacitySweep() = default;

void CapacitySweep::feed(const CacheKey* keys, const Nanos* now, const std::uint64_t* sizes, std::size_t n) {
  auto work = [&](unsigned t) {
    for (std::size_t c = t; c < caches_.size(); c += threads_) {
      PolicyCache<SimValue>& cache = *caches_[c];
      if (sizes == nullptr) {
        for (std::size_t i = 0; i < n; ++i)
          if (!cache.get(keys[i], now[i])) cache.put(keys[i], SimValue{}, 0, now[i]);
        continue;
      }
      ByteCounts& b = bytes_[c];
      for (std::size_t i = 0; i < n; ++i) {
        b.requested += sizes[i];
        if (cache.get(keys[i], now[i])) continue;
        b.missed += sizes[i];
        cache.put(keys[i], SimValue{}, sizes[i], now[i]);
      }
    }
  };
  if (threads_ == 1) {
    work(0);
    return;
  }
  // An exception escaping a thread calls std::terminate: catch it there and
  // rethrow the first one here, after every thread has stopped touching keys.
  std::vector<std::exception_ptr> errors(threads_);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads_; ++t)
    pool.emplace_back([&work, &errors, t] {
      try {
        work(t);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  for (auto& th : pool)
    th.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void CapacitySweep::reset_counters() {
  for (auto& c : caches_)
    c->reset_counters();
  std::fill(bytes_.begin(), bytes_.end(), ByteCounts{});
}

void CapacitySweep::erase_version(std::uint64_t hi) {
  for (auto& c : caches_)
    c->erase_if([hi](const CacheKey& k) { return k.hi == hi; });
}

std::vector<double> CapacitySweep::hit_ratios() const {
  std::vector<double> out;
  for (const auto& c : caches_) {
    const auto& k = c->counters();
    const std::uint64_t n = k.hits + k.misses;
    out.push_back(n ? static_cast<double>(k.hits) / static_cast<double>(n) : 0);
  }
  return out;
}

}  // namespace detail

std::vector<double> lru_curve_one_pass(const std::vector<std::uint64_t>& keys,
                                       const std::vector<std::uint64_t>& capacities, std::uint64_t warmup) {
  detail::LruStackDistance stack;
  detail::CurveCounter counter(capacities, 1.0);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::uint64_t d = stack.access(keys[i]);
    if (i >= warmup) counter.record(d);
  }
  return counter.hit_ratios();
}

std::vector<double> curve_per_capacity(const std::vector<std::uint64_t>& keys, Policy policy, double ttl_s,
                                       const std::vector<std::uint64_t>& capacities, unsigned threads,
                                       std::uint64_t warmup) {
  detail::CapacitySweep sweep(policy, ttl_s, capacities, threads);
  std::vector<CacheKey> k(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i)
    k[i] = CacheKey{0, keys[i]};
  // Time 0 throughout: a TTL never passes; callers wanting time use run_simulate.
  std::vector<Nanos> now(keys.size(), 0);
  const std::size_t w = std::min<std::size_t>(warmup, keys.size());
  sweep.feed(k.data(), now.data(), w);
  sweep.reset_counters();
  sweep.feed(k.data() + w, now.data() + w, keys.size() - w);
  return sweep.hit_ratios();
}

MrcSpec parse_mrc_spec(std::string_view text, int points) {
  const std::string what = fmt::format("--mrc {}", text);
  auto fail = [&](std::string_view why) {
    return bad_input(
        fmt::format("{}: {} (expected [TIER=]POLICY:MIN..MAX[:TTL] or [TIER=]POLICY:C1,C2,...[:TTL], "
                    "e.g. l1=lru:100..1000000)",
                    what, why));
  };
  MrcSpec spec;
  std::string_view rest = text;
  if (auto eq = rest.find('='); eq != std::string_view::npos) {
    const std::optional<CacheLevel> level = parse_enum<CacheLevel>(rest.substr(0, eq));
    if (!level) throw fail("tier must be " + enum_choices<CacheLevel>());
    spec.tier = *level;
    rest = rest.substr(eq + 1);
  }
  const auto c1 = rest.find(':');
  if (c1 == std::string_view::npos) throw fail("no capacities");
  auto policy = parse_policy(rest.substr(0, c1));
  if (!policy) throw fail(fmt::format("unknown policy '{}'", rest.substr(0, c1)));
  spec.policy = *policy;
  std::string_view caps = rest.substr(c1 + 1);
  if (auto c2 = caps.find(':'); c2 != std::string_view::npos) {
    auto ttl = parse_ttl_s(caps.substr(c2 + 1));
    if (!ttl && is_zero_ttl(caps.substr(c2 + 1)))
      throw fail(fmt::format("TTL must be above 0, got '{}' (leave ':TTL' out and entries never expire)",
                             caps.substr(c2 + 1)));
    if (!ttl) throw fail(fmt::format("TTL '{}' is not a duration like 30s", caps.substr(c2 + 1)));
    spec.ttl_s = *ttl;
    caps = caps.substr(0, c2);
  }
  if (spec.policy == Policy::ttl && spec.ttl_s <= 0) throw fail("policy ttl needs a TTL");
  auto count = [&](std::string_view s) -> std::uint64_t {
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v == 0)
      throw fail(fmt::format("capacity '{}' is not a positive entry count", s));
    return v;
  };
  if (auto dots = caps.find(".."); dots != std::string_view::npos) {
    const std::uint64_t lo = count(caps.substr(0, dots)), hi = count(caps.substr(dots + 2));
    if (hi <= lo) throw fail("MAX must be larger than MIN");
    if (points < 2) throw fail("--mrc-points must be at least 2");
    for (int i = 0; i < points; ++i) {
      const double x = std::log(static_cast<double>(lo)) +
                       (std::log(static_cast<double>(hi)) - std::log(static_cast<double>(lo))) * i / (points - 1);
      spec.capacities.push_back(i == points - 1 ? hi : static_cast<std::uint64_t>(std::llround(std::exp(x))));
    }
  } else {
    std::size_t start = 0;
    while (start <= caps.size()) {
      std::size_t end = caps.find(',', start);
      if (end == std::string_view::npos) end = caps.size();
      spec.capacities.push_back(count(caps.substr(start, end - start)));
      start = end + 1;
    }
  }
  std::sort(spec.capacities.begin(), spec.capacities.end());
  spec.capacities.erase(std::unique(spec.capacities.begin(), spec.capacities.end()), spec.capacities.end());
  return spec;
}

}  // namespace inferprof
