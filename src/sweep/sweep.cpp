// `inferprof sweep` (inferprof/sweep.hpp): whole replays at each step of load,
// the configurations interleaved step by step so that a machine that slows
// during the sweep slows every configuration's same steps alike.
#include "inferprof/sweep.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <numeric>
#include <optional>

#include "base/atomic_file.hpp"
#include "base/output_owner.hpp"
#include "inferprof/compare.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "inferprof/replay.hpp"
#include "inferprof/stats.hpp"
#include "inferprof/trace.hpp"

namespace inferprof {

namespace {

// A saturated step serves less than this share of what it is offered (speed),
// or this much more than the step before it with more workers (concurrency).
constexpr double kServedShare = 0.95;
constexpr double kConcurrencyGain = 1.05;
// The knee: where p99 leaves this many times the lightest step's for good.
constexpr double kKneeFactor = 2.0;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string load_text(SweepLoad load, double x) {
  if (load == SweepLoad::speed) return fmt::format("{:g}×", x);
  if (load == SweepLoad::rate) return fmt::format("{:g} req/s", x);
  return fmt::format("concurrency {:g}", x);
}

void check_config(const SweepConfig& c) {
  if (c.configurations.empty()) throw bad_input("sweep needs at least one cache configuration (--caches)");
  if (c.models.size() > 1 && c.profiles.size() > 1)
    throw bad_input(fmt::format("sweep varies the model or the profile, not both: {} models and {} profiles given",
                                c.models.size(), c.profiles.size()));
  if (c.loads.empty())
    throw bad_input(
        "sweep needs its steps: --speeds FROM:TO:STEP, --rates FROM:TO:STEP or --concurrency FROM:TO[:STEP]");
  for (std::size_t i = 0; i < c.loads.size(); ++i) {
    if (!(c.loads[i] > 0))
      throw bad_input(fmt::format("sweep: step {} is {:g}: every step must be > 0", i + 1, c.loads[i]));
    if (i > 0 && !(c.loads[i] > c.loads[i - 1]))
      throw bad_input(fmt::format("sweep: the steps must rise: {:g} after {:g}", c.loads[i], c.loads[i - 1]));
  }
  if (c.load == SweepLoad::concurrency)
    for (double x : c.loads)
      if (x != std::floor(x))
        throw bad_input(fmt::format("sweep --concurrency: {:g} is not a whole number of workers", x));
  if (c.slo_ms < 0) throw bad_input("sweep --slo-ms must be > 0");
  if (c.max_batches.empty()) throw bad_input("sweep needs at least one batch size (--max-batch)");
  if (c.workers.size() > 1 && !sweep_open_loop(c.load))
    throw bad_input("sweep --workers with several values needs --speeds or --rates (--concurrency steps are workers)");
  for (int w : c.workers)
    if (w < 1) throw bad_input(fmt::format("sweep --workers {}: expected 1 or more", w));
  for (int n : c.max_batches) {
    if (n < 1 || n > kMaxBatch) throw bad_input(fmt::format("sweep --max-batch {}: expected 1 to {}", n, kMaxBatch));
    if (n > 1 && !sweep_open_loop(c.load))
      throw bad_input(
          fmt::format("sweep --max-batch {}: batching needs --speeds or --rates (a --concurrency step's workers "
                      "would cap its batches)",
                      n));
  }
}

// A batched configuration's workers: enough for one batch to form while the one before runs.
int workers_for(int workers, int max_batch) {
  return max_batch > 1 ? std::max(workers, 2 * max_batch) : workers;
}

// The requests a step replays and the last one's arrival time: a speed step
// offers them over that span divided by its speed.
void scan_trace(const RunConfig& base, SweepLoad load, SweepResult& r) {
  TraceReader reader(base.replay.trace_path, TraceReader::Options{base.replay.skip_invalid, 1 << 20, base.replay.csv});
  TraceRecord record;
  double last_ts = 0;
  std::uint64_t without_ts = 0, first_without = 0;
  while (reader.next(record)) {
    if (record.kind != TraceRecord::Kind::request) continue;
    // The first measured request's arrival: where a step's offered load is counted from.
    if (r.trace_requests == base.replay.measure_after && record.request.ts_ms)
      r.measured_from_s = *record.request.ts_ms / 1000;
    ++r.trace_requests;
    if (record.request.ts_ms) {
      last_ts = std::max(last_ts, *record.request.ts_ms);
    } else if (without_ts++ == 0) {
      first_without = record.line;
    }
    if (base.replay.limit > 0 && r.trace_requests == base.replay.limit) break;
  }
  if (r.trace_requests == 0) throw bad_input(fmt::format("{}: no requests to replay", base.replay.trace_path));
  if (base.replay.measure_after >= r.trace_requests)
    throw bad_input(fmt::format("sweep --measure-after {}: a step replays {} requests{}, so none would be measured",
                                base.replay.measure_after, r.trace_requests,
                                base.replay.limit > 0 ? " (--limit)" : ""));
  r.measure_after = base.replay.measure_after;
  r.trace_span_s = last_ts / 1000;
  if (load != SweepLoad::speed) return;  // rate and concurrency steps need no ts_ms
  if (without_ts > 0)
    throw bad_input(
        fmt::format("{}:{}: a speed sweep replays the trace's arrivals, and this request has no ts_ms "
                    "(sweep --concurrency needs none)",
                    base.replay.trace_path, first_without));
  if (r.trace_span_s <= 0)
    throw bad_input(
        fmt::format("{}: every request arrives at ts_ms 0: a speed sweep has no span to scale "
                    "(sweep --concurrency needs none)",
                    base.replay.trace_path));
}

SweepStep step_of(const RunSummary& s, double load, double offered_rps) {
  SweepStep step;
  step.load = load;
  step.offered_rps = offered_rps;
  step.achieved_rps = s.throughput_rps;
  step.requests = s.requests;
  step.failed = s.failed;
  step.mean_us = s.total.mean_us;
  std::vector<double> sample = s.latency_sample_us;
  std::sort(sample.begin(), sample.end());
  const auto estimate = [&](double q, double value) {
    const QuantileInterval i = quantile_interval(sample, q);
    // The summary's percentile (every request) with the sample's interval around it.
    return PercentileEstimate{value, std::min(i.low, value), std::max(i.high, value)};
  };
  step.p50 = estimate(0.50, s.total.p50_us);
  step.p90 = estimate(0.90, s.total.p90_us);
  step.p99 = estimate(0.99, s.total.p99_us);
  step.queue_share = s.stages[static_cast<std::size_t>(Stage::queue)].share;
  for (std::size_t i = 0; i < kStageCount; ++i)
    step.stage_mean_us[i] = s.stages[i].mean_us;
  step.cpu = s.total.cpu;
  step.cpu_mean_us = s.total.cpu_mean_us;
  return step;
}

std::string stop_reason(SweepLoad load, double slo_ms, const SweepStep& step) {
  const std::string at = load_text(load, step.load);
  if (step.over_slo)
    return fmt::format("p99 {:.1f} ms past the {:g} ms objective at {}", step.p99.value_us / 1000, slo_ms, at);
  if (sweep_open_loop(load))
    return fmt::format("saturated at {}: {:.1f} of {:.1f} req/s offered served", at, step.achieved_rps,
                       step.offered_rps);
  return fmt::format("saturated at {}: {:.1f} req/s, under {:.0f}% more than one worker fewer", at, step.achieved_rps,
                     (kConcurrencyGain - 1) * 100);
}

// The replay of one step: `replay` numbers it within its configuration (its Redis namespace).
RunConfig step_config(const SweepConfig& c, std::size_t configuration, std::size_t replay, double load,
                      const SweepCurve& curve) {
  RunConfig run = c.base;
  if (!curve.model_path.empty()) run.model_path = curve.model_path;
  if (curve.profile_index >= 0) run.profile = c.profiles[static_cast<std::size_t>(curve.profile_index)];
  run.output.out_dir.clear();
  run.caches.tiers = curve.tiers;
  run.caches.key_namespace = fmt::format("sweep-{}-{}-{}", ::getpid(), configuration, replay);
  run.replay.queue_samples = sweep_open_loop(c.load) && curve.max_batch == 1 && c.slo_ms > 0;
  if (sweep_open_loop(c.load)) {
    run.replay.drive = Drive::open_loop;
    if (c.load == SweepLoad::speed)
      run.replay.speed = load;
    else
      run.replay.poisson_rps = load;
    run.replay.max_batch = curve.max_batch;
    if (curve.max_batch == 1) run.replay.batch_delay_us = 0;
    run.replay.concurrency = curve.workers;
  } else {
    run.replay.drive = Drive::closed_loop;
    run.replay.concurrency = static_cast<int>(load);
  }
  return run;
}

// One step of configuration i at `load`, judged against `before`; nullopt when an
// interrupt cut it short (or came before its first request): a partial step is not a step.
std::optional<SweepStep> replay_step(const SweepConfig& c, SweepResult& r, std::size_t i, std::size_t replay,
                                     double load, const SweepStep* before, SweepServiceTimes& model) {
  RunOutcome outcome;
  try {
    outcome = run_replay(step_config(c, i, replay, load, r.curves[i]));
  } catch (const Error&) {
    if (!lifecycle::interrupted()) throw;
    return std::nullopt;
  }
  const RunSummary& s = outcome.summary;
  if (s.info.interrupted()) return std::nullopt;
  r.replay_s += s.info.wall_s;
  double offered = 0;
  if (c.load == SweepLoad::speed)
    offered = static_cast<double>(r.trace_requests - r.measure_after) / ((r.trace_span_s - r.measured_from_s) / load);
  else if (c.load == SweepLoad::rate)
    offered = load;
  SweepStep step = step_of(s, load, offered);
  judge_step(c.load, c.slo_ms, before, step);
  model.add(s.queue_samples, load, offered);
  for (const std::string& w : s.info.warnings)
    r.warnings.push_back(fmt::format("{} at {}: {}", r.curves[i].name, load_text(c.load, load), w));
  return step;
}

// A step past the objective, replayed until c.tries tries or until most of
// them are past it (the median then is), and its try with the median p99:
// a configuration ends on a typical replay at that load, not one burst.
// Tries are numbered after the steps and bisection rounds (their Redis namespaces).
SweepStep median_try(const SweepConfig& c, SweepResult& r, std::size_t i, std::size_t k, const SweepStep& first,
                     const SweepStep* before, SweepServiceTimes& model) {
  std::vector<SweepStep> tries{first};
  const auto past = [&] {
    return std::count_if(tries.begin(), tries.end(), [](const SweepStep& s) { return s.over_slo; });
  };
  const std::size_t n = static_cast<std::size_t>(c.tries);
  const std::size_t first_number = c.loads.size() + static_cast<std::size_t>(c.refine) + k * n;
  while (tries.size() < n && static_cast<std::size_t>(past()) <= n / 2 && !lifecycle::interrupted()) {
    std::optional<SweepStep> again = replay_step(c, r, i, first_number + tries.size(), first.load, before, model);
    if (!again) break;
    tries.push_back(*again);
  }
  return median_of_tries(tries);
}

// --refine: each round, one more step per configuration halfway between its last
// step within the objective and its first past it (or saturated), as a binary search.
void refine(const SweepConfig& c, SweepResult& r, std::vector<SweepServiceTimes>& models) {
  for (int round = 0; round < c.refine && !lifecycle::interrupted(); ++round)
    for (std::size_t i = 0; i < r.curves.size() && !lifecycle::interrupted(); ++i) {
      SweepCurve& curve = r.curves[i];
      const double load = bisection_load(curve);
      if (load <= 0) continue;
      std::optional<SweepStep> step =
          replay_step(c, r, i, c.loads.size() + static_cast<std::size_t>(round), load, nullptr, models[i]);
      if (!step) return;
      step->refined = true;
      const auto at =
          std::find_if(curve.steps.begin(), curve.steps.end(), [&](const SweepStep& s) { return s.load > load; });
      curve.steps.insert(at, *step);
    }
}

void write_files(const SweepConfig& c, SweepResult& r, const std::vector<SweepServiceTimes>& models) {
  if (c.out_dir.empty()) return;
  std::vector<std::pair<const char*, std::string>> files = {
      {"sweep.json", render_sweep_json(r)}, {"sweep.csv", render_sweep_csv(r)}, {"report.html", render_sweep_html(r)}};
  if (c.service_times) files.emplace_back("service_times.csv", render_service_times_csv(r, models));
  for (const auto& [name, content] : files) {
    write_file_atomic(c.out_dir, name, content);
    r.files.push_back(c.out_dir + "/" + name);
  }
}

}  // namespace

void judge_step(SweepLoad load, double slo_ms, const SweepStep* before, SweepStep& step) {
  if (sweep_open_loop(load))
    step.saturated = step.achieved_rps < kServedShare * step.offered_rps;
  else
    step.saturated = before != nullptr && step.achieved_rps < kConcurrencyGain * before->achieved_rps;
  step.over_slo = slo_ms > 0 && step.p99.value_us > slo_ms * 1000;
}

SweepStep median_of_tries(const std::vector<SweepStep>& tries) {
  if (tries.empty()) return {};
  std::vector<std::size_t> order(tries.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return tries[a].p99.value_us < tries[b].p99.value_us; });
  // Of an even count (tries cut short once most were past the objective,
  // every one of them past it), the lower middle one: a median of all the
  // tries would lie between the two.
  SweepStep out = tries[order[(tries.size() - 1) / 2]];
  out.tries_p99_us.clear();
  if (tries.size() > 1)
    for (const SweepStep& t : tries)
      out.tries_p99_us.push_back(t.p99.value_us);
  return out;
}

void summarize_curve(double slo_ms, SweepCurve& curve) {
  const auto& steps = curve.steps;
  // The knee: the step before the last steps' run above twice the lightest step's p99 (a
  // single noisy p99 that the next step undoes is not one); none when the last step is below it.
  curve.knee = -1;
  std::size_t above = steps.size();
  while (above > 0 && steps[above - 1].p99.value_us > kKneeFactor * steps[0].p99.value_us)
    --above;
  if (above > 0 && above < steps.size()) curve.knee = static_cast<int>(above) - 1;
  std::size_t good = 0;  // steps before the first that saturated or missed the objective
  while (good < steps.size() && !steps[good].saturated && !steps[good].over_slo)
    ++good;
  curve.capacity_found = good > 0 || (slo_ms <= 0 && !steps.empty());
  curve.capacity_at_edge = good == steps.size() && !steps.empty();
  curve.capacity_rps = 0;
  if (slo_ms <= 0) {
    // No objective: the most it served, saturated or not (a saturated open loop serves its capacity).
    for (const SweepStep& s : steps)
      curve.capacity_rps = std::max(curve.capacity_rps, s.achieved_rps);
    return;
  }
  if (good == 0) return;
  const SweepStep& last = steps[good - 1];
  curve.capacity_rps = last.achieved_rps;
  if (good < steps.size() && steps[good].over_slo && steps[good].achieved_rps > last.achieved_rps &&
      steps[good].p99.value_us > last.p99.value_us) {
    // Between the last step within the objective and the first past it, where p99 crosses it.
    const SweepStep& next = steps[good];
    const double f = (slo_ms * 1000 - last.p99.value_us) / (next.p99.value_us - last.p99.value_us);
    curve.capacity_rps = last.achieved_rps + f * (next.achieved_rps - last.achieved_rps);
  }
}

void SweepServiceTimes::add(const std::vector<QueueSample>& samples, double load, double offered_rps) {
  if (samples.empty() || !(load > 0)) return;
  if (service_us.empty()) {
    for (const QueueSample& q : samples) {
      unit_arrivals_us.push_back(q.arrival_us * load);
      measured.push_back(q.measured);
    }
    offered_per_load = offered_rps / load;
  }
  // A step that served another set of requests (an interrupt, a skipped input) is left out.
  if (samples.size() != unit_arrivals_us.size()) return;
  std::vector<float>& s = service_us.emplace_back(samples.size());
  for (std::size_t k = 0; k < samples.size(); ++k)
    s[k] = static_cast<float>(samples[k].service_us);
  loads.push_back(load);
  top_load = std::max(top_load, load);
}

namespace {

// The load (in units of the trace's arrivals) where the model's p99 meets
// `slo_us`, searched up to `high`: 0 when not even a light load meets it,
// `high` (and at_edge) when it still does there.
double model_capacity_load(const std::function<double(double)>& p99_at, double slo_us, double low, double high,
                           bool& at_edge) {
  at_edge = false;
  if (p99_at(low) > slo_us) return 0;
  at_edge = p99_at(high) <= slo_us;
  if (at_edge) return high;
  // The p99 of a FIFO queue rises with the load (shorter gaps, the same services): bisection.
  for (int round = 0; round < 40; ++round) {
    const double mid = (low + high) / 2;
    (p99_at(mid) <= slo_us ? low : high) = mid;
  }
  return low;
}

}  // namespace

void model_curve(double slo_ms, const SweepServiceTimes& in, SweepCurve& curve) {
  curve.modelled = curve.model_capacity_found = curve.model_capacity_at_edge = false;
  curve.model_capacity_rps = curve.model_capacity_low_rps = curve.model_capacity_high_rps = 0;
  curve.model_pace_min = curve.model_pace_max = 1;
  curve.model_capacity_low_at_edge = curve.model_capacity_high_at_edge = false;
  for (SweepStep& s : curve.steps)
    s.model_p99_us = s.service_pace = 0;
  if (in.service_us.empty() || slo_ms <= 0 || curve.max_batch > 1 || curve.steps.empty()) return;
  const std::size_t n = in.unit_arrivals_us.size();
  std::vector<double> service(n), each(in.service_us.size());
  for (std::size_t k = 0; k < n; ++k) {
    for (std::size_t s = 0; s < each.size(); ++s)
      each[s] = in.service_us[s][k];
    service[k] = median_of(each);
  }
  // Each step's pace: its total service over the medians' (1.2: its requests
  // took 20% longer, through the machine's drift or the load's contention).
  // A request's median drops its own spikes, so the medians' total is below
  // every step's: the model serves them at the mean pace of the replays (its
  // point: all of the configuration's service time, shared out as the
  // medians are; steadier between sweeps than any one step's), and at the
  // slowest and fastest step's, which bound how much the capacity depends
  // on which service times hold near it.
  const double typical = std::accumulate(service.begin(), service.end(), 0.0);
  if (typical > 0) {
    std::vector<double> paces;
    for (const std::vector<float>& step : in.service_us)
      paces.push_back(std::accumulate(step.begin(), step.end(), 0.0) / typical);
    const auto [low, high] = std::minmax_element(paces.begin(), paces.end());
    const double mean = std::accumulate(paces.begin(), paces.end(), 0.0) / static_cast<double>(paces.size());
    for (double& s : service)
      s *= mean;
    curve.model_pace_min = *low / mean;
    curve.model_pace_max = *high / mean;
    for (SweepStep& step : curve.steps) {
      std::vector<double> tries;
      for (std::size_t j = 0; j < paces.size(); ++j)
        if (in.loads[j] == step.load) tries.push_back(paces[j] / mean);
      if (!tries.empty()) step.service_pace = median_of(tries);
    }
  }
  std::vector<double> arrivals(n), measured, latency;
  // At pace p, services p times as long queue as the same services at
  // arrivals p times as close, with latencies p times as long.
  const auto p99_at_pace = [&](double load, double pace) {
    for (std::size_t k = 0; k < n; ++k)
      arrivals[k] = in.unit_arrivals_us[k] / (load * pace);
    latency = fifo_latencies_us(arrivals, service, curve.workers);
    measured.clear();
    for (std::size_t k = 0; k < n; ++k)
      if (in.measured[k]) measured.push_back(latency[k] * pace);
    return nearest_rank_quantile(measured, 0.99);
  };
  const auto at_pace = [&](double pace) {
    return [&p99_at_pace, pace](double load) { return p99_at_pace(load, pace); };
  };
  for (SweepStep& s : curve.steps)
    s.model_p99_us = p99_at_pace(s.load, 1);
  curve.modelled = true;
  const double slo_us = slo_ms * 1000, low = curve.steps.front().load / 16, high = 1.25 * in.top_load;
  const double load = model_capacity_load(at_pace(1), slo_us, low, high, curve.model_capacity_at_edge);
  curve.model_capacity_found = load > 0;
  curve.model_capacity_rps = in.offered_per_load * load;
  curve.model_capacity_low_rps = in.offered_per_load * model_capacity_load(at_pace(curve.model_pace_max), slo_us, low,
                                                                           high, curve.model_capacity_low_at_edge);
  curve.model_capacity_high_rps = in.offered_per_load * model_capacity_load(at_pace(curve.model_pace_min), slo_us, low,
                                                                            high, curve.model_capacity_high_at_edge);
}

double bisection_load(const SweepCurve& curve) {
  std::size_t good = 0;
  while (good < curve.steps.size() && !curve.steps[good].saturated && !curve.steps[good].over_slo)
    ++good;
  if (good == 0 || good == curve.steps.size()) return 0;
  return (curve.steps[good - 1].load + curve.steps[good].load) / 2;
}

namespace {

// The curves: each model or profile (when several are given) × each cache
// configuration × each number of workers × each batch size. Tiers are resolved here, before any
// replay: a bad spec fails at once.
std::vector<SweepCurve> make_curves(const SweepConfig& c) {
  const bool batched = std::any_of(c.max_batches.begin(), c.max_batches.end(), [](int n) { return n > 1; });
  const std::vector<int> workers = c.workers.empty() ? std::vector<int>{c.base.replay.concurrency} : c.workers;
  const std::size_t variants = std::max({c.models.size(), c.profiles.size(), std::size_t{1}});
  std::vector<SweepCurve> out;
  for (std::size_t v = 0; v < variants; ++v) {
    const Profile& profile = c.profiles.empty() ? c.base.profile : c.profiles[v];
    const std::string variant = !c.models.empty()     ? model_label(c.models, v)
                                : !c.profiles.empty() ? profile_label(c.profiles, v)
                                                      : "";
    for (const std::string& caches : c.configurations) {
      const std::vector<TierSpec> tiers = resolve_tiers(profile, caches, c.overrides, c.redis_url, "");
      std::string label = caches;
      if (!variant.empty()) label = c.configurations.size() > 1 ? variant + " · " + caches : variant;
      for (int w : workers)
        for (int n : c.max_batches) {
          SweepCurve curve;
          curve.name = label;
          if (workers.size() > 1) curve.name += fmt::format(" · {} worker{}", w, w == 1 ? "" : "s");
          if (batched && n > 1) curve.name += fmt::format(" · batch {}", n);
          curve.caches = caches;
          curve.model_path = c.models.empty() ? "" : c.models[v];
          curve.profile = c.profiles.empty() ? "" : profile_label(c.profiles, v);
          curve.profile_index = c.profiles.empty() ? -1 : static_cast<int>(v);
          curve.tiers = tiers;
          curve.max_batch = n;
          curve.workers = workers_for(w, n);
          out.push_back(std::move(curve));
        }
    }
  }
  return out;
}

SweepResult sweep_all(const SweepConfig& c) {
  check_config(c);
  const auto started = std::chrono::steady_clock::now();
  SweepResult r;
  r.model_path = c.base.model_path;
  r.trace_path = c.base.replay.trace_path;
  r.profile_name = c.base.profile.name;
  r.device = c.base.profile.model.device;
  r.load = c.load;
  r.loads = c.loads;
  r.slo_ms = c.slo_ms;
  r.concurrency = c.base.replay.concurrency;
  scan_trace(c.base, c.load, r);
  r.curves = make_curves(c);
  if (!c.out_dir.empty()) output::claim_dir(c.out_dir);  // an unwritable --out fails before the first replay
  ReplayObserver* observer = c.base.output.observer.get();
  const std::size_t total = c.loads.size() * r.curves.size();
  std::size_t done = 0;
  std::vector<SweepServiceTimes> models(r.curves.size());
  for (std::size_t k = 0; k < c.loads.size() && !lifecycle::interrupted(); ++k) {
    for (std::size_t i = 0; i < r.curves.size() && !lifecycle::interrupted(); ++i) {
      SweepCurve& curve = r.curves[i];
      if (!curve.stopped.empty()) continue;
      if (observer) {
        const double eta =
            done > 0 ? seconds_since(started) / static_cast<double>(done) * static_cast<double>(total - done) : 0;
        observer->context(fmt::format("step {}/{} · {} at {}{}", k + 1, c.loads.size(), curve.name,
                                      load_text(c.load, c.loads[k]),
                                      done > 0 ? fmt::format(" · sweep ETA ≤ {:.0f} s", eta) : ""));
      }
      const SweepStep* before = curve.steps.empty() ? nullptr : &curve.steps.back();
      std::optional<SweepStep> step = replay_step(c, r, i, k, c.loads[k], before, models[i]);
      ++done;
      if (!step) break;
      if (step->over_slo && !step->saturated && sweep_open_loop(c.load) && c.tries > 1)
        step = median_try(c, r, i, k, *step, before, models[i]);
      curve.steps.push_back(*step);
      if (step->saturated || step->over_slo) curve.stopped = stop_reason(c.load, c.slo_ms, *step);
    }
  }
  if (c.refine > 0 && sweep_open_loop(c.load)) {
    if (observer) observer->context(fmt::format("bisecting the capacities ({} rounds)", c.refine));
    refine(c, r, models);
  }
  if (observer) observer->context("");
  if (lifecycle::interrupted()) {
    r.interrupted_by = lifecycle::interrupt_name();
    const bool any =
        std::any_of(r.curves.begin(), r.curves.end(), [](const SweepCurve& s) { return !s.steps.empty(); });
    if (!any)
      throw Error(static_cast<ExitCode>(lifecycle::interrupted_exit_code()),
                  fmt::format("interrupted by {} before any step completed: nothing to report", r.interrupted_by));
    r.warnings.push_back(
        fmt::format("interrupted by {}: the figures cover the steps that completed", r.interrupted_by));
  }
  for (std::size_t i = 0; i < r.curves.size(); ++i) {
    summarize_curve(c.slo_ms, r.curves[i]);
    model_curve(c.slo_ms, models[i], r.curves[i]);
  }
  r.wall_s = seconds_since(started);
  write_files(c, r, models);
  return r;
}

}  // namespace

SweepResult run_sweep(const SweepConfig& c) {
  // A failed sweep leaves no report, nor the --out folder it created for them.
  std::error_code ec;
  const bool created = !c.out_dir.empty() && !std::filesystem::exists(c.out_dir, ec);
  try {
    return sweep_all(c);
  } catch (...) {
    if (created) std::filesystem::remove(c.out_dir, ec);  // only while empty
    throw;
  }
}

}  // namespace inferprof
