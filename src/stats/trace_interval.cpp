// The "this trace" interval of a lockstep speedup: measurement noise with the
// trace held fixed. Resampling whole requests (paired_bootstrap_speedup) asks
// how the speedup would vary over traffic like this one: it redraws how many
// misses and which inputs, so a cache that serves 87% of requests can get an
// interval from 1 to 13. Here each request keeps its class (its input and
// what served it under both configurations) and only the timing of the
// requests within a class is redrawn.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "inferprof/stats.hpp"

namespace inferprof {
namespace {

// Outcomes that do the same work pool their noise: a miss runs the model as
// an uncached request does.
std::uint8_t noise_group(std::uint8_t outcome) {
  return outcome == kOutcomeMiss ? kOutcomeNone : outcome;
}

// Relative residuals (value / class mean) of one noise group, their spread as
// a relative standard deviation.
struct Pool {
  std::vector<double> residuals;
  double rel_var = 0;  // set by finish()
  void finish() {
    double s = 0;
    for (double r : residuals)
      s += (r - 1) * (r - 1);
    rel_var = residuals.empty() ? 0 : s / static_cast<double>(residuals.size());
  }
};

// Requests grouped by class: the input (when `with_input`) and what served it
// under both configurations.
std::vector<std::vector<std::size_t>> classes_by(bool with_input, const std::vector<std::uint64_t>& input,
                                                 const std::vector<std::uint8_t>& base_outcome,
                                                 const std::vector<std::uint8_t>& other_outcome) {
  std::unordered_map<std::uint64_t, std::size_t> id;
  std::vector<std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < input.size(); ++i) {
    std::uint64_t k = (static_cast<std::uint64_t>(base_outcome[i]) << 8) | other_outcome[i];
    if (with_input) k ^= input[i] * 0x9E3779B97F4A7C15ull + (k << 6);
    auto [it, fresh] = id.emplace(k, members.size());
    if (fresh) members.emplace_back();
    members[it->second].push_back(i);
  }
  return members;
}

bool has_repeats(const std::vector<std::vector<std::size_t>>& classes) {
  return std::any_of(classes.begin(), classes.end(), [](const auto& m) { return m.size() >= 2; });
}

// The classes and the noise they show, which the linearised interval and the
// stratified bootstrap both read.
struct Strata {
  const std::vector<double>& b;
  const std::vector<double>& o;
  const std::vector<std::uint8_t>& base_outcome;
  const std::vector<std::uint8_t>& other_outcome;
  double ratio = 1;
  std::vector<std::vector<std::size_t>> classes;
  std::vector<std::size_t> singles;  // requests alone in their class
  std::array<Pool, kOutcomeCodes> pools;
  Pool all;
  double within = 0;  // sum over classes of m * (sample variance of e = b - ratio * o)
  std::size_t df = 0;

  Strata(const std::vector<double>& base, const std::vector<double>& other, const std::vector<std::uint8_t>& bo,
         const std::vector<std::uint8_t>& oo, double r)
      : b(base), o(other), base_outcome(bo), other_outcome(oo), ratio(r) {}

  // The noise of the classes that show it: their variance of e, and relative
  // residuals per noise group (scaled by sqrt(m / (m - 1)), as a residual
  // from its own class mean understates the spread).
  void measure() {
    for (const auto& m : classes) {
      if (m.size() < 2) {
        singles.push_back(m[0]);
        continue;
      }
      const double k = static_cast<double>(m.size());
      double mb = 0, mo = 0, me = 0;
      for (std::size_t i : m) {
        mb += b[i];
        mo += o[i];
        me += b[i] - ratio * o[i];
      }
      mb /= k;
      mo /= k;
      me /= k;
      double ss = 0;
      for (std::size_t i : m)
        ss += (b[i] - ratio * o[i] - me) * (b[i] - ratio * o[i] - me);
      within += k * ss / (k - 1);
      df += m.size() - 1;
      const double scale = std::sqrt(k / (k - 1));
      for (std::size_t i : m) {
        if (mb > 0) pools[noise_group(base_outcome[m[0]])].residuals.push_back(1 + (b[i] / mb - 1) * scale);
        if (mo > 0) pools[noise_group(other_outcome[m[0]])].residuals.push_back(1 + (o[i] / mo - 1) * scale);
      }
    }
    for (Pool& p : pools) {
      all.residuals.insert(all.residuals.end(), p.residuals.begin(), p.residuals.end());
      p.finish();
    }
    all.finish();
  }
  // A group with too few residuals of its own borrows everyone's.
  const Pool& pool_of(std::uint8_t outcome) const {
    constexpr std::size_t kMinPool = 5;
    const Pool& p = pools[noise_group(outcome)];
    return p.residuals.size() >= kMinPool ? p : all;
  }
  // The singletons' variance of e, from the pooled relative noise.
  double singles_variance(bool& borrowed) const {
    double v = 0;
    for (std::size_t i : singles) {
      const Pool& pb = pool_of(base_outcome[i]);
      const Pool& po = pool_of(other_outcome[i]);
      v += b[i] * b[i] * pb.rel_var + ratio * ratio * o[i] * o[i] * po.rel_var;
      if (&pb == &all || &po == &all) borrowed = true;
    }
    return v;
  }
  // The stratified bootstrap's replicates of the ratio: each class redrawn
  // within itself, each single request scaled by residuals drawn from its
  // noise group.
  std::vector<double> bootstrap(int resamples) const {
    std::mt19937_64 rng(42);  // the same data always gives the same interval
    auto draw = [&](const Pool& p) {
      return p.residuals.empty()
                 ? 1.0
                 : std::max(p.residuals[std::uniform_int_distribution<std::size_t>(0, p.residuals.size() - 1)(rng)],
                            0.0);
    };
    std::vector<double> ratios;
    ratios.reserve(static_cast<std::size_t>(std::max(resamples, 0)));
    for (int r = 0; r < resamples; ++r) {
      double sb = 0, so = 0;
      for (const auto& m : classes) {
        if (m.size() < 2) continue;
        std::uniform_int_distribution<std::size_t> pick(0, m.size() - 1);
        for (std::size_t k = 0; k < m.size(); ++k) {
          const std::size_t i = m[pick(rng)];
          sb += b[i];
          so += o[i];
        }
      }
      for (std::size_t i : singles) {
        sb += b[i] * draw(pool_of(base_outcome[i]));
        so += o[i] * draw(pool_of(other_outcome[i]));
      }
      if (so > 0 && sb > 0) ratios.push_back(sb / so);
    }
    return ratios;
  }
};

// Requests of one pass share the machine's state (its load, caches, memory
// layout over those seconds); resampling requests treats them as independent
// and misses what moves a whole pass. With three or more passes, each pass is
// one replication: the ratio's linearised variance with passes as clusters
// (e_p = B_p - R O_p over each pass's sums, P / (P - 1) sum e_p^2 / O^2), so
// a pass weighs as much as it moves R, and its t-interval on the log scale
// (P - 1 degrees of freedom) widens the interval where it is wider.
void widen_by_passes(Speedup& s, const std::vector<double>& b, const std::vector<double>& o,
                     const std::vector<std::uint32_t>& pass, TraceIntervalInfo& facts) {
  if (pass.empty()) return;
  std::unordered_map<std::uint32_t, std::pair<double, double>> sums;  // pass -> (sum b, sum o)
  double total_o = 0;
  for (std::size_t i = 0; i < pass.size(); ++i) {
    auto& [sb, so] = sums[pass[i]];
    sb += b[i];
    so += o[i];
    total_o += o[i];
  }
  facts.passes = sums.size();
  if (sums.size() < 3 || !(total_o > 0) || !(s.value > 0)) return;
  double ss = 0;
  for (const auto& [p, bo] : sums) {
    const double e = bo.first - s.value * bo.second;
    ss += e * e;
  }
  const double k = static_cast<double>(sums.size());
  const double se = std::sqrt(k / (k - 1) * ss) / total_o;
  const double half = student_t_975(sums.size() - 1) * se / s.value;
  const double low = s.value * std::exp(-half), high = s.value * std::exp(half);
  if (low < s.low || high > s.high) facts.between_passes = true;
  s.low = std::min(s.low, low);
  s.high = std::max(s.high, high);
}

}  // namespace

Speedup this_trace_speedup(const std::vector<double>& base, const std::vector<double>& other,
                           const std::vector<std::uint64_t>& input, const std::vector<std::uint8_t>& base_outcome,
                           const std::vector<std::uint8_t>& other_outcome, int resamples,
                           const std::vector<double>& pace, TraceIntervalInfo* info,
                           const std::vector<std::uint32_t>& pass) {
  const std::size_t n = base.size();
  if (other.size() != n || input.size() != n || base_outcome.size() != n || other_outcome.size() != n ||
      (!pace.empty() && pace.size() != n) || (!pass.empty() && pass.size() != n))
    throw std::invalid_argument(fmt::format(
        "this-trace interval: {} baseline latencies against {} others, {} inputs, {}/{} outcomes, {} pace values "
        "and {} pass numbers (expected one of each per request)",
        n, other.size(), input.size(), base_outcome.size(), other_outcome.size(), pace.size(), pass.size()));
  Speedup s;
  TraceIntervalInfo local;
  TraceIntervalInfo& facts = info ? *info : local;
  facts = TraceIntervalInfo{};
  if (n == 0) return s;
  std::vector<double> b = base, o = other;
  for (std::size_t i = 0; i < pace.size(); ++i)
    if (pace[i] > 0) {
      b[i] /= pace[i];
      o[i] /= pace[i];
    }
  const double sum_b = std::accumulate(b.begin(), b.end(), 0.0), sum_o = std::accumulate(o.begin(), o.end(), 0.0);
  if (!(sum_o > 0) || !(sum_b > 0)) return s;
  const double ratio = sum_b / sum_o;
  s.value = s.low = s.high = ratio;

  // Classes: the input and both outcomes. When no input repeats with the same
  // outcomes, no class has two members to show the noise: classes are then the
  // outcomes alone (wider: which inputs were served varies too), and said so.
  Strata strata(b, o, base_outcome, other_outcome, ratio);
  strata.classes = classes_by(true, input, base_outcome, other_outcome);
  if (!has_repeats(strata.classes)) {
    strata.classes = classes_by(false, input, base_outcome, other_outcome);
    facts.inputs_ignored = true;
    if (!has_repeats(strata.classes)) return s;  // one request per outcome: nothing shows the noise
  }
  strata.measure();
  const double alone = strata.singles_variance(facts.borrowed);
  facts.classes = strata.classes.size();
  facts.singletons = strata.singles.size();

  // The ratio's linearised interval on the log scale: never a bound <= 0.
  const double se = std::sqrt(strata.within + alone) / sum_o;
  const double half = student_t_975(strata.df) * se / ratio;
  s.low = ratio * std::exp(-half);
  s.high = ratio * std::exp(half);
  // The bootstrap's percentile interval widens it where the noise is skewed.
  std::vector<double> ratios = strata.bootstrap(resamples);
  if (!ratios.empty()) {
    const auto [lo, hi] = percentile_interval(ratios, 0.95);
    s.low = std::min(s.low, lo);
    s.high = std::max(s.high, hi);
  }
  widen_by_passes(s, b, o, pass, facts);
  s.noise = s.low <= 1.0 && 1.0 <= s.high;
  return s;
}

}  // namespace inferprof
