#pragma once
// The estimators compare and diff share (module stats, src/stats/): bootstrap
// resampling, percentile and t intervals, the speedup intervals of `compare`
// and the machine's pace. Deterministic: fixed seeds.
#include <cstddef>
#include <cstdint>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include "inferprof/timing.hpp"  // CacheOutcome

namespace inferprof {

// A speedup (baseline / this) with its bootstrap 95% confidence interval.
struct Speedup {
  double value = 1, low = 1, high = 1;
  bool noise = false;  // the interval includes 1.0
};

// What served a request, as this_trace_speedup reads it: "none" (no cache
// tier), "miss", "l1_hit", "l2_hit", "l3_hit".
inline constexpr std::uint8_t kOutcomeNone = 0, kOutcomeMiss = 1, kOutcomeCodes = 5;
inline std::uint8_t outcome_code(CacheOutcome o) {
  switch (o) {
    case CacheOutcome::miss:
      return kOutcomeMiss;
    case CacheOutcome::l1_hit:
      return 2;
    case CacheOutcome::l2_hit:
      return 3;
    case CacheOutcome::l3_hit:
      return 4;
    case CacheOutcome::none:
      break;
  }
  return kOutcomeNone;
}

// How this_trace_speedup grouped the requests.
struct TraceIntervalInfo {
  std::size_t classes = 0;      // input x outcome under both configurations
  std::size_t singletons = 0;   // requests alone in their class: noise from the pooled spread
  bool inputs_ignored = false;  // no input repeated with the same outcomes: classes by outcome alone
  bool borrowed = false;        // some singletons' outcome had too few repeats of its own: noise pooled over all
  std::size_t passes = 0;       // lockstep passes told apart (`pass`); 0 when not given
  bool between_passes = false;  // the passes' own speedups spread wider than the requests' noise: it widened
};

// Bootstrap 95% CI of mean(base) / mean(other), resampling requests
// (deterministic seed). Exposed for tests.
Speedup bootstrap_speedup(const std::vector<double>& base, const std::vector<double>& other, int resamples = 2000);

// Paired bootstrap 95% CI of mean(base) / mean(other) when base[i] and
// other[i] are the same request i served under both configurations (lockstep):
// each resample draws request indices once and uses them for both, so drift
// that slows request i under both cancels instead of widening the interval.
// The interval is the percentile one, widened to the ratio's linearised
// t-interval (n - 1 degrees of freedom) where that is wider. With `pace` (one
// value per request, as machine_pace gives), both sides' latencies of request
// i are divided by pace[i] first. base, other and a non-empty pace must have
// the same size (throws std::invalid_argument).
Speedup paired_bootstrap_speedup(const std::vector<double>& base, const std::vector<double>& other,
                                 int resamples = 2000, const std::vector<double>& pace = {});

// The speedup's 95% interval for *this trace* (lockstep): measurement noise
// with the trace held fixed, the question a verdict ("faster", "no measurable
// difference") answers. Request i belongs to a class: its input (`input`, a
// key hash) and what served it under each configuration (outcome_code). Only
// the timing within a class varies: a stratified paired bootstrap redraws each
// class's requests from themselves; a request alone in its class is scaled by
// relative residuals drawn from the classes of the same outcome (a miss pools
// with an uncached request: the same work), or from all when that outcome
// has fewer than five. The interval is the union of that bootstrap's
// percentile interval and the ratio's linearised t-interval on the log scale
// (within-class variances, n - classes degrees of freedom), so no bound is
// ever <= 0. With `pace` both sides are divided by it first (machine_pace).
// With `pass` (request i's lockstep pass) and three or more passes, the
// interval is also widened to the ratio's t-interval with passes as clusters
// (passes - 1 degrees of freedom, log scale): what moves a whole pass (the
// machine's state over its seconds) is noise the request resampling cannot see.
Speedup this_trace_speedup(const std::vector<double>& base, const std::vector<double>& other,
                           const std::vector<std::uint64_t>& input, const std::vector<std::uint8_t>& base_outcome,
                           const std::vector<std::uint8_t>& other_outcome, int resamples = 2000,
                           const std::vector<double>& pace = {}, TraceIntervalInfo* info = nullptr,
                           const std::vector<std::uint32_t>& pass = {});

// Where a rerun of the same comparison reads its point (95%): the difference
// of two independent estimates has the root sum of squares of their errors,
// so each half-width on the log scale is sqrt(h^2 + r^2), h this interval's
// and r the rerun's. A rerun with the same passes has r = h (sqrt(2) h). A
// rerun under --precision P stops once its half-width is within P, however
// narrow this one came out: r = max(h, -ln(1 - P/100)). The verdict keeps
// the narrower interval ("is there a difference on this trace"); this one
// answers "what will the next run say". value is the point; noise: it
// includes 1.0.
Speedup rerun_interval(const Speedup& this_trace, double precision_pct = 0);

// The 97.5% quantile of Student's t with `df` degrees of freedom (infinite for 0).
double student_t_975(std::size_t df);
// The p quantile of Student's t with df degrees of freedom (df need not be an
// integer: Welch's df; below 1 it is taken as 1, the widest).
double student_t_quantile(double p, double df);

// How slow the machine ran around each request of a lockstep pass, relative to
// the whole pass (1 = its usual speed, 1.2 = 20% slower), read off the
// baseline's own latencies: their median over the `window` requests centred on
// i, divided by the median of those medians. Pairing cancels drift only when
// both sides' requests are alike; a cache's misses cluster early (cold keys),
// so a slow stretch there weighs on the cached side alone. Dividing every pair
// by the pace around it weighs each stretch of the run alike. Meaningful when
// the baseline does the same work for every request (no caches).
constexpr std::size_t kPaceWindow = 31;
std::vector<double> machine_pace(const std::vector<double>& baseline_us, std::size_t window = kPaceWindow);

// The bootstrap machinery compare and diff share: draws with replacement from
// a fixed seed, so the same data always gives the same interval.
class Resampler {
 public:
  explicit Resampler(std::uint64_t seed = 42) : rng_(seed) {}
  // One resample of `from` (same size) into `into`.
  void draw(const std::vector<double>& from, std::vector<double>& into);
  // The mean of one resample of `from`, without materialising it.
  double draw_mean(const std::vector<double>& from);

 private:
  std::mt19937_64 rng_;
};

// The q-quantile of an ascending sample and its distribution-free interval:
// the order statistics whose ranks hold the population's q-quantile with
// `confidence` (the binomial count below it, normal approximation; exact
// enough from a few dozen values). Empty: all zero.
struct QuantileInterval {
  double value = 0, low = 0, high = 0;
};
QuantileInterval quantile_interval(const std::vector<double>& sorted, double q, double confidence = 0.95);

// The central `confidence` interval of bootstrap replicates (reordered): their
// (1 - c) / 2 and (1 + c) / 2 quantiles. {0, 0} when empty.
std::pair<double, double> percentile_interval(std::vector<double>& replicates, double confidence);

// A FIFO queue in front of `servers` identical servers, as the replay's open
// loop serves requests: request i arrives at arrivals_us[i] (non-decreasing)
// and holds the first free server for service_us[i]. Each request's latency
// (its wait plus its service). The Lindley recursion for one server; with
// several, each request takes the server that frees first (Kiefer-Wolfowitz).
std::vector<double> fifo_latencies_us(const std::vector<double>& arrivals_us, const std::vector<double>& service_us,
                                      int servers);

// The nearest-rank q-quantile of `values` (reordered); 0 when empty.
double nearest_rank_quantile(std::vector<double>& values, double q);
// The median of `values` (reordered): the middle one, or the mean of the two
// middle ones of an even count; 0 when empty.
double median_of(std::vector<double>& values);

}  // namespace inferprof
