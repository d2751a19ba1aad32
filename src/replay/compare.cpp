#include "inferprof/compare.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <tuple>

#include "cache/hierarchy.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "replay/dump.hpp"
#include "replay/engine.hpp"

namespace inferprof {
namespace {

namespace fs = std::filesystem;

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// A folder name for a configuration: "l1,l2" -> "l1+l2".
std::string folder_name(const std::string& config) {
  std::string out = config;
  std::replace(out.begin(), out.end(), ',', '+');
  return out;
}

// The slowest 1% of requests hold over half of all the time: the mean is
// then a statement about a few outliers, and the table says so.
bool outliers_dominate(std::vector<double> sample) {
  if (sample.size() < 100) return false;
  std::sort(sample.begin(), sample.end());
  const std::size_t top = sample.size() / 100;
  double total = std::accumulate(sample.begin(), sample.end(), 0.0);
  double tail = std::accumulate(sample.end() - static_cast<std::ptrdiff_t>(top), sample.end(), 0.0);
  return total > 0 && tail / total > 0.5;
}

// A unique namespace per replay, so concurrent runs on one Redis never collide.
std::string run_namespace(std::size_t config, int repeat) {
  std::random_device rd;
  return fmt::format("{}-{:08x}-c{}-r{}", ::getpid(), rd(), config, repeat);
}

// Per outcome, the count and mean of the requests it served, from each
// request's latency and outcome (lockstep).
std::vector<OutcomeStats> outcome_costs(const std::vector<double>& latency_us,
                                        const std::vector<std::string>& outcome) {
  std::vector<OutcomeStats> out;
  for (int k = 0; k < kCacheOutcomes; ++k) {
    OutcomeStats o;
    o.outcome = std::string(outcome_name(static_cast<CacheOutcome>(k)));
    double sum = 0;
    for (std::size_t i = 0; i < latency_us.size() && i < outcome.size(); ++i)
      if (outcome[i] == o.outcome) {
        ++o.count;
        sum += latency_us[i];
      }
    if (o.count == 0) continue;
    o.mean_us = sum / static_cast<double>(o.count);
    out.push_back(o);
  }
  return out;
}
// The same from a replay's summary (sequential: the last repeat).
std::vector<OutcomeStats> outcome_costs(const std::vector<OutcomeStats>& summary) {
  std::vector<OutcomeStats> out;
  for (const OutcomeStats& o : summary)
    if (o.count > 0) out.push_back(OutcomeStats{o.outcome, o.count, o.mean_us, 0, 0});
  return out;
}

// Lockstep: the two intervals in words, with the classes and single requests
// of every configuration against the baseline as a range.
void describe_lockstep_intervals(CompareResult& result) {
  // The classes and singletons of every configuration against the baseline, as a range.
  std::size_t classes_lo = SIZE_MAX, classes_hi = 0, single_lo = SIZE_MAX, single_hi = 0;
  bool ignored = false, borrowed = false;
  for (std::size_t c = 1; c < result.rows.size(); ++c) {
    const TraceIntervalInfo& f = result.rows[c].interval_facts;
    classes_lo = std::min(classes_lo, f.classes);
    classes_hi = std::max(classes_hi, f.classes);
    single_lo = std::min(single_lo, f.singletons);
    single_hi = std::max(single_hi, f.singletons);
    ignored = ignored || f.inputs_ignored;
    borrowed = borrowed || f.borrowed;
  }
  auto range = [](std::size_t lo, std::size_t hi) {
    return lo == hi ? fmt::format("{}", lo) : fmt::format("{}-{}", lo, hi);
  };
  std::string repeats = result.repeat > 1 ? fmt::format(" ({} lockstep repeats)", result.repeat) : "";
  result.interval = fmt::format(
      "this trace: noise with the trace held fixed, {} paired requests{} resampled within {} classes ({}) — "
      "{} alone in their class take the pooled within-class noise{}",
      result.paired, repeats, result.rows.size() > 1 ? range(classes_lo, classes_hi) : "0",
      ignored ? "what served them under both configurations; no input repeated with the same outcome"
              : "input x what served it under both configurations",
      result.rows.size() > 1 ? range(single_lo, single_hi) : "0",
      borrowed ? " (over all outcomes where theirs has too few repeats)" : "");
  if (result.paced)
    result.interval += fmt::format(
        "; in units of the machine's pace (the baseline's median over the {} requests around each: "
        "{:.2f}–{:.2f}×)",
        result.pace_window, result.pace_min, result.pace_max);
  result.interval += "; the verdicts read it";
  result.traffic_interval = fmt::format(
      "traffic like this trace: paired bootstrap over {} requests{} (which requests, hits and inputs vary too)",
      result.paired, repeats);
}

}  // namespace

Speedup bootstrap_speedup(const std::vector<double>& base, const std::vector<double>& other, int resamples) {
  Speedup s;
  const double mb = mean_of(base), mo = mean_of(other);
  if (base.empty() || other.empty() || mo <= 0) return s;
  s.value = mb / mo;
  Resampler resampler;
  std::vector<double> ratios;
  ratios.reserve(static_cast<std::size_t>(resamples));
  for (int i = 0; i < resamples; ++i) {
    double b = resampler.draw_mean(base), o = resampler.draw_mean(other);
    if (o > 0) ratios.push_back(b / o);
  }
  if (ratios.empty()) return s;
  std::tie(s.low, s.high) = percentile_interval(ratios, 0.95);
  s.noise = s.low <= 1.0 && 1.0 <= s.high;
  return s;
}

Speedup paired_bootstrap_speedup(const std::vector<double>& base, const std::vector<double>& other, int resamples,
                                 const std::vector<double>& pace) {
  if (base.size() != other.size() || (!pace.empty() && pace.size() != base.size()))
    throw std::invalid_argument(
        fmt::format("paired bootstrap: {} baseline latencies against {} and {} pace values (expected one of each "
                    "per request)",
                    base.size(), other.size(), pace.size()));
  Speedup s;
  if (base.empty()) return s;
  // Each side's latencies in units of the machine's pace around them.
  std::vector<double> b = base, o = other;
  for (std::size_t i = 0; i < pace.size(); ++i) {
    if (!(pace[i] > 0)) continue;
    b[i] /= pace[i];
    o[i] /= pace[i];
  }
  const double mb = mean_of(b), mo = mean_of(o);
  if (mo <= 0) return s;
  s.value = mb / mo;
  std::mt19937_64 rng(42);  // fixed seed: the same data always gives the same interval
  std::uniform_int_distribution<std::size_t> pick(0, b.size() - 1);
  std::vector<double> ratios;
  ratios.reserve(static_cast<std::size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    double sb = 0, so = 0;
    for (std::size_t k = 0; k < b.size(); ++k) {
      const std::size_t i = pick(rng);  // one index, both configurations
      sb += b[i];
      so += o[i];
    }
    if (so > 0) ratios.push_back(sb / so);
  }
  if (ratios.empty()) return s;
  std::tie(s.low, s.high) = percentile_interval(ratios, 0.95);
  // The percentile interval is too narrow on few requests with heavy tails (in
  // A/A compares of 60 requests it held 1.00 in 92% of 460): widen it to the
  // ratio's linearised t-interval where that is wider.
  const std::size_t n = b.size();
  if (n >= 2) {
    double sum = 0, sum_sq = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double e = b[i] - s.value * o[i];  // the ratio's residual for request i
      sum += e;
      sum_sq += e * e;
    }
    const double mean_e = sum / static_cast<double>(n);
    const double var_e =
        std::max(0.0, (sum_sq - static_cast<double>(n) * mean_e * mean_e) / static_cast<double>(n - 1));
    // On the log scale: a ratio's bounds stay above 0 (on the ratio's own
    // scale a heavy-tailed cache gave [-6.24, 139.84]).
    const double half = student_t_975(n - 1) * std::sqrt(var_e / static_cast<double>(n)) / mo / s.value;
    s.low = std::min(s.low, s.value * std::exp(-half));
    s.high = std::max(s.high, s.value * std::exp(half));
  }
  s.noise = s.low <= 1.0 && 1.0 <= s.high;
  return s;
}

std::vector<double> machine_pace(const std::vector<double>& baseline_us, std::size_t window) {
  const std::size_t n = baseline_us.size();
  if (n == 0) return {};
  window = std::clamp<std::size_t>(window, 1, n);
  auto median = [](std::vector<double>& v) {
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    if (v.size() % 2 == 1) return *mid;
    return (*mid + *std::max_element(v.begin(), mid)) / 2;
  };
  std::vector<double> pace(n), slice;
  for (std::size_t i = 0; i < n; ++i) {
    // Centred on i; at the ends, the first or last `window` requests.
    const std::size_t first = std::min(i - std::min(i, window / 2), n - window);
    slice.assign(baseline_us.begin() + static_cast<std::ptrdiff_t>(first),
                 baseline_us.begin() + static_cast<std::ptrdiff_t>(first + window));
    pace[i] = median(slice);
  }
  std::vector<double> all = pace;
  const double usual = median(all);
  if (!(usual > 0)) return std::vector<double>(n, 1.0);
  for (double& p : pace)
    p = p > 0 ? p / usual : 1.0;
  return pace;
}

CompareResult run_compare(const CompareConfig& config) {
  if (config.configurations.empty()) throw bad_input("compare needs at least one --caches configuration");
  if (config.repeat < 1) throw bad_input("--repeat must be at least 1");
  if (!config.out_dir.empty()) ensure_output_dir(config.out_dir);
  detail::check_dump_dirs(config.base.output);
  // The tensors do not depend on the caches: the first pass (or replay) dumps them, once.
  const RunConfig later = detail::without_dumps(config.base);
  lifecycle::Cleanup temp_files;  // killed by a signal: no half-written compare.csv
  if (!config.out_dir.empty())
    temp_files = lifecycle::Cleanup([dir = config.out_dir] { lifecycle::remove_own_temp_files(dir); });

  const bool one_worker = config.base.replay.drive == Drive::closed_loop && config.base.replay.concurrency == 1;
  const CompareMode mode = config.mode.value_or(one_worker ? CompareMode::lockstep : CompareMode::sequential);
  if (mode == CompareMode::lockstep && !one_worker)
    throw bad_input(fmt::format(
        "--mode lockstep serves each request under every configuration in turn, one at a time: it cannot {} "
        "(use --mode sequential)",
        config.base.replay.drive == Drive::open_loop
            ? "release requests at their ts_ms (--open-loop)"
            : fmt::format("keep {} requests in flight (--concurrency)", config.base.replay.concurrency)));

  CompareResult result;
  result.repeat = config.repeat;
  result.mode = mode;
  std::vector<std::vector<double>> samples(config.configurations.size());
  std::vector<std::vector<std::pair<std::string, std::uint64_t>>> folded(config.configurations.size());
  for (const auto& name : config.configurations) {
    CompareRow row;
    row.name = name;
    row.tiers = resolve_tiers(config.base.profile, name, config.overrides, config.redis_url, "");
    result.rows.push_back(row);
  }
  // Each configuration's report folder; one named twice (an A/A check, none
  // against none) gets "-2", "-3": two configurations never share a folder.
  std::vector<std::string> folders;
  for (std::size_t c = 0; c < result.rows.size(); ++c) {
    const std::string base = folder_name(result.rows[c].name);
    const auto before = std::count_if(result.rows.begin(), result.rows.begin() + static_cast<std::ptrdiff_t>(c),
                                      [&](const CompareRow& r) { return r.name == result.rows[c].name; });
    folders.push_back(before == 0 ? base : fmt::format("{}-{}", base, before + 1));
  }

  // A failed replay leaves no report behind, also none of the configurations already done.
  struct PartialReports {
    const CompareConfig& config;
    const std::vector<std::string>& folders;
    bool keep = false;
    ~PartialReports() {
      if (keep || config.out_dir.empty()) return;
      std::error_code ec;
      for (const auto& folder : folders)
        fs::remove_all(fs::path(config.out_dir) / folder, ec);
    }
  } partial{config, folders};

  ReplayObserver* observer = config.base.output.observer.get();
  // A completed replay (or lockstep pass) of configuration c: its figures, and the last one's reports.
  auto keep = [&](std::size_t c, RunOutcome outcome) {
    CompareRow& row = result.rows[c];
    row.means_us.push_back(outcome.summary.total.mean_us);
    row.walls_s.push_back(outcome.summary.info.wall_s);
    samples[c].insert(samples[c].end(), outcome.summary.latency_sample_us.begin(),
                      outcome.summary.latency_sample_us.end());
    row.last = std::move(outcome.summary);
    folded[c] = std::move(outcome.folded);
    for (auto& f : outcome.files)
      result.files.push_back(f);
  };
  // Lockstep: per configuration, the latency and outcome of every (repeat, request).
  std::vector<std::vector<double>> paired(config.configurations.size());
  std::vector<std::vector<std::string>> paired_outcome(config.configurations.size());
  std::vector<std::vector<double>> paired_cpu(config.configurations.size());
  std::vector<std::uint64_t> paired_input;  // per (repeat, request): its input, the same in every configuration
  // The pace and the this-trace speedup of configuration c over the pairs so far.
  auto pace_of = [&] {
    return mode == CompareMode::lockstep && result.rows.front().tiers.empty() && !paired[0].empty()
               ? machine_pace(paired[0])
               : std::vector<double>{};
  };
  auto codes_of = [&](std::size_t c) {
    std::vector<std::uint8_t> codes;
    codes.reserve(paired_outcome[c].size());
    for (const std::string& o : paired_outcome[c])
      codes.push_back(outcome_code(o));
    return codes;
  };
  // The widest relative half-width over the configurations, and whose.
  auto widest = [&]() -> std::pair<double, std::size_t> {
    const std::vector<double> pace = pace_of();
    const std::vector<std::uint8_t> base_codes = codes_of(0);
    std::pair<double, std::size_t> out{0, 0};
    for (std::size_t c = 1; c < result.rows.size(); ++c) {
      const Speedup s = this_trace_speedup(paired[0], paired[c], paired_input, base_codes, codes_of(c), 2000, pace);
      const double half = s.value > 0 ? std::max(s.high / s.value - 1, 1 - s.low / s.value) : HUGE_VAL;
      if (half >= out.first) out = {half, c};
    }
    return out;
  };
  if (config.precision_pct && !(*config.precision_pct > 0 && *config.precision_pct < 100))
    throw bad_input(fmt::format("--precision {} is out of range (expected a percentage above 0 and below 100, e.g. 3)",
                                *config.precision_pct));
  if (config.precision_pct && mode != CompareMode::lockstep)
    throw bad_input("--precision repeats lockstep passes: it needs --mode lockstep (a closed loop with one worker)");
  result.precision_pct = config.precision_pct;
  // With --precision, passes go on until every interval is narrow enough (at
  // least --repeat of them, at most kMaxPasses, within --max-time).
  constexpr int kMaxPasses = 100;
  const int passes_max = config.precision_pct ? kMaxPasses : config.repeat;
  const auto started = std::chrono::steady_clock::now();
  int passes = 0;
  std::string progress;  // the widths so far, for the progress line
  if (mode == CompareMode::lockstep) {
    for (int rep = 0; rep < passes_max && !lifecycle::interrupted(); ++rep) {
      // Every pass writes its reports (each replaces the last): the passes are
      // measured alike, and an interrupted pass leaves the reports of what it served.
      std::vector<detail::LockstepTarget> targets;
      for (std::size_t c = 0; c < result.rows.size(); ++c)
        targets.push_back(
            detail::LockstepTarget{result.rows[c].tiers, run_namespace(c, rep),
                                   config.out_dir.empty() ? "" : (fs::path(config.out_dir) / folders[c]).string()});
      if (observer)
        observer->context(fmt::format("lockstep over {} configurations{}{}", result.rows.size(),
                                      config.precision_pct ? fmt::format(" · pass {}", rep + 1)
                                      : config.repeat > 1  ? fmt::format(" · repeat {}/{}", rep + 1, config.repeat)
                                                           : "",
                                      progress));
      detail::LockstepPass pass;
      try {
        pass = detail::run_lockstep_pass(rep == 0 ? config.base : later, targets);
      } catch (const Error&) {
        if (!lifecycle::interrupted()) throw;
        break;  // interrupted before a request completed: the earlier repeats stand
      }
      paired_input.insert(paired_input.end(), pass.input.begin(), pass.input.end());
      for (std::size_t c = 0; c < result.rows.size(); ++c) {
        paired[c].insert(paired[c].end(), pass.latency_us[c].begin(), pass.latency_us[c].end());
        paired_outcome[c].insert(paired_outcome[c].end(), pass.outcome[c].begin(), pass.outcome[c].end());
        paired_cpu[c].insert(paired_cpu[c].end(), pass.cpu_us[c].begin(), pass.cpu_us[c].end());
        // An interrupted pass covers the requests served under every configuration.
        keep(c, std::move(pass.outcomes[c]));
      }
      ++passes;
      if (config.precision_pct && !lifecycle::interrupted() && result.rows.size() > 1) {
        const auto [half, c] = widest();
        result.widest_half_width = half;
        result.widest_config = result.rows[c].name;
        progress = fmt::format(" · widest ±{:.1f}% ({}), target ±{:g}%", 100 * half, result.widest_config,
                               *config.precision_pct);
        result.precision_reached = half * 100 <= *config.precision_pct;
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (passes >= config.repeat && (result.precision_reached || elapsed >= config.max_time_s)) break;
      }
    }
    result.repeat = std::max(passes, 1);
  } else {
    // Interleaved: A B C A B C ..., so drift (thermal, other load) hits every
    // configuration alike instead of biasing whichever ran last. An interrupt
    // ends the loop: the replay it cut short is dropped (with its reports), the
    // completed ones are kept.
    for (int rep = 0; rep < config.repeat && !lifecycle::interrupted(); ++rep) {
      for (std::size_t c = 0; c < result.rows.size() && !lifecycle::interrupted(); ++c) {
        CompareRow& row = result.rows[c];
        RunConfig run = rep == 0 && c == 0 ? config.base : later;
        run.caches.tiers = row.tiers;
        run.caches.key_namespace = run_namespace(c, rep);
        const bool last = rep == config.repeat - 1;
        run.output.out_dir = last && !config.out_dir.empty() ? (fs::path(config.out_dir) / folders[c]).string() : "";
        if (observer)
          observer->context(
              fmt::format("configuration {}/{} ({}){}", c + 1, result.rows.size(), row.name,
                          config.repeat > 1 ? fmt::format(" · repeat {}/{}", rep + 1, config.repeat) : ""));
        RunOutcome outcome;
        bool cut_short = false;
        try {
          outcome = run_replay(run);
          cut_short = outcome.summary.info.interrupted();
        } catch (const Error&) {
          if (!lifecycle::interrupted()) throw;
          cut_short = true;  // before a request completed
        }
        if (cut_short) {
          std::error_code ec;
          if (!run.output.out_dir.empty()) fs::remove_all(run.output.out_dir, ec);
          break;
        }
        keep(c, std::move(outcome));
      }
    }
  }
  if (observer) observer->context("");
  if (lifecycle::interrupted()) {
    result.interrupted_by = lifecycle::interrupt_name();
    // Only configurations with a completed replay stay; the others are named.
    std::size_t kept = 0;
    for (std::size_t c = 0; c < result.rows.size(); ++c) {
      if (result.rows[c].means_us.empty()) {
        result.not_run.push_back(result.rows[c].name);
        // A lockstep pass creates every configuration's folder before its
        // first request: one cut short before then leaves them empty.
        std::error_code ec;
        if (!config.out_dir.empty()) fs::remove_all(fs::path(config.out_dir) / folders[c], ec);
        continue;
      }
      if (kept != c) {
        result.rows[kept] = std::move(result.rows[c]);
        samples[kept] = std::move(samples[c]);
        folded[kept] = std::move(folded[c]);
        paired[kept] = std::move(paired[c]);
        paired_outcome[kept] = std::move(paired_outcome[c]);
        paired_cpu[kept] = std::move(paired_cpu[c]);
        folders[kept] = std::move(folders[c]);
      }
      ++kept;
    }
    result.rows.resize(kept);
    folders.resize(kept);
    if (result.rows.empty())
      throw Error(static_cast<ExitCode>(lifecycle::interrupted_exit_code()),
                  fmt::format("interrupted by {} before any configuration completed: nothing to report",
                              result.interrupted_by));
    std::string partial;
    for (const CompareRow& row : result.rows)
      if (static_cast<int>(row.means_us.size()) < config.repeat)
        partial +=
            fmt::format("{}{} ({} of {})", partial.empty() ? "" : ", ", row.name, row.means_us.size(), config.repeat);
    std::string not_run;
    for (const std::string& name : result.not_run)
      not_run += (not_run.empty() ? "" : ", ") + name;
    result.warnings.push_back(fmt::format(
        "interrupted by {}: the figures cover the replays that completed{}{}", result.interrupted_by,
        partial.empty() ? "" : "; fewer repeats for " + partial, not_run.empty() ? "" : "; not run: " + not_run));
  }

  const CompareRow& base = result.rows.front();
  // An uncached baseline does the same work for every request: its latencies
  // then say how fast the machine ran when (machine_pace).
  std::vector<double> pace;
  if (mode == CompareMode::lockstep && base.tiers.empty() && !paired[0].empty()) {
    pace = machine_pace(paired[0]);
    result.paced = true;
    result.pace_window = std::min(kPaceWindow, paired[0].size());
    const auto [least, most] = std::minmax_element(pace.begin(), pace.end());
    result.pace_min = *least;
    result.pace_max = *most;
  }
  // Lockstep: what served each request, coded for the this-trace interval.
  std::vector<std::vector<std::uint8_t>> codes(result.rows.size());
  for (std::size_t c = 0; c < result.rows.size(); ++c)
    codes[c] = codes_of(c);
  // CPU time per request, paired the same way, over the requests whose CPU
  // time was read in both (CPU sampling reads the same requests in every lane).
  auto cpu_this_trace = [&](std::size_t c) {
    std::vector<double> b, o;
    std::vector<std::uint64_t> in;
    std::vector<std::uint8_t> cb, co;
    for (std::size_t i = 0; i < paired_cpu[0].size() && i < paired_cpu[c].size(); ++i) {
      if (!std::isfinite(paired_cpu[0][i]) || !std::isfinite(paired_cpu[c][i])) continue;
      b.push_back(paired_cpu[0][i]);
      o.push_back(paired_cpu[c][i]);
      in.push_back(paired_input[i]);
      cb.push_back(codes[0][i]);
      co.push_back(codes[c][i]);
    }
    return this_trace_speedup(b, o, in, cb, co, 2000);
  };
  for (std::size_t c = 0; c < result.rows.size(); ++c) {
    CompareRow& row = result.rows[c];
    row.mean_us = mean_of(row.means_us);
    row.wall_s = mean_of(row.walls_s);
    row.p50_us = row.last.total.p50_us;
    row.p99_us = row.last.total.p99_us;
    row.rps = row.wall_s > 0 ? static_cast<double>(row.last.requests) / row.wall_s : 0;
    row.outliers_dominate = outliers_dominate(samples[c]);
    row.outcome_costs =
        mode == CompareMode::lockstep ? outcome_costs(paired[c], paired_outcome[c]) : outcome_costs(row.last.outcomes);
    result.verify_mismatches += row.last.verify.mismatches;
    if (c == 0) {
      row.mean_speedup = row.wall_speedup = row.traffic_speedup = row.cpu_speedup = Speedup{};
      continue;
    }
    // Mean latency. Lockstep: paired over (repeat, request), the same indices
    // for both; the verdict reads the this-trace interval. Sequential:
    // bootstrap over the pooled requests of all repeats.
    if (mode == CompareMode::lockstep) {
      row.mean_speedup =
          this_trace_speedup(paired[0], paired[c], paired_input, codes[0], codes[c], 2000, pace, &row.interval_facts);
      row.traffic_speedup = paired_bootstrap_speedup(paired[0], paired[c], 2000, pace);
      row.cpu_speedup = cpu_this_trace(c);
    } else {
      row.mean_speedup = row.traffic_speedup = bootstrap_speedup(samples[0], samples[c]);
      if (row.last.total.cpu && base.last.total.cpu && row.last.total.cpu_mean_us > 0) {
        row.cpu_speedup.value = base.last.total.cpu_mean_us / row.last.total.cpu_mean_us;
        row.cpu_speedup.low = row.cpu_speedup.high = row.cpu_speedup.value;
      }
    }
    if (result.paced) row.unpaced_speedup = mean_of(paired[0]) / std::max(mean_of(paired[c]), 1e-9);
    // Replay time: over repeats when there are enough of them, else a point value.
    if (result.repeat >= 3) {
      row.wall_speedup = bootstrap_speedup(base.walls_s, row.walls_s);
    } else {
      row.wall_speedup.value = row.wall_s > 0 ? base.wall_s / row.wall_s : 1;
      row.wall_speedup.low = row.wall_speedup.high = row.wall_speedup.value;
    }
    if (row.mean_speedup.noise)
      result.warnings.push_back(
          fmt::format("{} vs {}: the 95% interval of the speedup{} [{:.2f}, {:.2f}] includes 1.0 "
                      "— no measurable difference",
                      row.name, base.name, mode == CompareMode::lockstep ? " on this trace" : "", row.mean_speedup.low,
                      row.mean_speedup.high));
    if (row.outliers_dominate)
      result.warnings.push_back(
          fmt::format("{}: the slowest 1% of requests hold over half of the time; compare p50 "
                      "rather than the mean",
                      row.name));
  }
  if (result.rows.front().outliers_dominate)
    result.warnings.push_back(
        fmt::format("{}: the slowest 1% of requests hold over half of the time", result.rows.front().name));
  result.show_traffic = config.intervals == CompareIntervals::both;
  if (mode == CompareMode::lockstep) {
    result.paired = paired.empty() ? 0 : paired[0].size();
    describe_lockstep_intervals(result);
  } else {
    result.interval = fmt::format("bootstrap over pooled requests of {} repeat{} (traffic like this trace: no pairing)",
                                  config.repeat, config.repeat == 1 ? "" : "s");
  }
  if (mode == CompareMode::sequential && config.repeat < 3)
    result.warnings.push_back(
        "one replay per configuration: the intervals cover request-to-request variation only, not drift between "
        "replays (other load, thermal); use --repeat 5 to interleave configurations and bound it");

  if (!config.out_dir.empty()) {
    if (config.flamegraph_diff) {
      for (std::size_t c = 1; c < result.rows.size(); ++c) {
        std::string name = fmt::format("diff-{}-vs-{}.svg", folders[c], folders[0]);
        write_file_atomic(config.out_dir, name,
                          render_diff_flamegraph_svg(
                              folded[0], result.rows[0].last.requests, folded[c], result.rows[c].last.requests,
                              fmt::format("inferprof compare · {} vs {}", result.rows[c].name, result.rows[0].name)));
        result.files.push_back((fs::path(config.out_dir) / name).string());
      }
    }
    write_file_atomic(config.out_dir, "compare.csv", render_compare_csv(result));
    write_file_atomic(config.out_dir, "compare.json", render_compare_json(result));
    result.files.push_back((fs::path(config.out_dir) / "compare.csv").string());
    result.files.push_back((fs::path(config.out_dir) / "compare.json").string());
  }
  partial.keep = true;
  return result;
}

}  // namespace inferprof
