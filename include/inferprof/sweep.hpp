#pragma once
// `inferprof sweep`: the trace replayed at each step of offered load (its own
// arrivals sped up, or more closed-loop workers) under each cache
// configuration, each step a whole replay from cold caches. A configuration
// stops at the first step that saturates or misses the p99 objective; the
// result is each one's curve and capacity (sweep_result.hpp).
#include <string>
#include <vector>

#include "inferprof/run_config.hpp"
#include "inferprof/run_result.hpp"
#include "inferprof/sweep_result.hpp"

namespace inferprof {

struct SweepConfig {
  RunConfig base;                           // model, trace, profile and replay settings; base.output.out_dir unused
  std::vector<std::string> configurations;  // "none", "l1", "l1,l2"; each resolved against the profile
  // Several models (--model) or profiles (--profile), one of them at a time:
  // each one's curves beside the others', every step in turn (as compare's
  // configurations). Empty: base.model_path and base.profile.
  std::vector<std::string> models;
  std::vector<Profile> profiles;
  std::vector<TierSpec> overrides;  // --tier
  std::string redis_url;            // --redis
  SweepLoad load = SweepLoad::speed;
  std::vector<double> loads;  // ascending
  double slo_ms = 0;          // p99 objective; 0: none (stop at saturation only)
  int refine = 0;             // speed sweeps: bisection rounds between the last good step and the first bad one
  // Speed and rate sweeps: a step past the objective (unsaturated) is replayed
  // up to this many times in all (odd), and its median try by p99 stands, so
  // one replay's burst does not end a configuration; 1: the first try decides.
  int tries = 3;
  // Speed and rate sweeps: each batch size (--max-batch) with each cache configuration;
  // a batched one gets max(workers, 2 N) workers, so that a batch forms while the one before runs.
  std::vector<int> max_batches{1};
  // Speed and rate sweeps: each number of replay workers (--workers 1,2,4: the
  // model instances serving the queue) with each configuration and batch size.
  // Empty: base.replay.concurrency.
  std::vector<int> workers;
  std::string out_dir;  // sweep.json, sweep.csv, report.html
  // --service-times: also service_times.csv in out_dir, every request's
  // arrival and service time in every replay (what the queueing model is fed),
  // so that the model can be rerun and checked outside the tool.
  bool service_times = false;
};

// Throws Error: bad input (exit 2) before anything runs, runtime (3) from a
// replay. Interrupted (lifecycle.hpp), it returns the steps that completed.
SweepResult run_sweep(const SweepConfig& config);

// The rules, apart so that they are tested without replays:
// marks `step` saturated or over the objective against the step before it (null: the first).
void judge_step(SweepLoad load, double slo_ms, const SweepStep* before, SweepStep& step);
// Fills the curve's capacity and knee from its steps (ascending load).
void summarize_curve(double slo_ms, SweepCurve& curve);
// The try with the median p99 (of an even count the lower middle one), with
// every try's p99 in tries_p99_us when there are several.
SweepStep median_of_tries(const std::vector<SweepStep>& tries);
// The load halfway between the curve's last step within the objective (and
// unsaturated) and the first that is not; 0 when it has no such pair.
double bisection_load(const SweepCurve& curve);

// What a curve's queueing model reads of its steps (SweepCurve::modelled):
// the requests' arrivals at unit load, the same in every step (the trace's
// order and arrivals, or the seeded Poisson clock, divided by the load), and
// each step's service time of every request.
struct SweepServiceTimes {
  std::vector<double> unit_arrivals_us;        // a request's arrival × its step's load
  std::vector<bool> measured;                  // false: before --measure-after's window
  double offered_per_load = 0;                 // a step's offered req/s over its load
  std::vector<std::vector<float>> service_us;  // [step][request], in arrival order
  std::vector<double> loads;                   // [step]: its load (a step's tries share one)
  double top_load = 0;                         // the heaviest step's load
  // A step's RunSummary::queue_samples at `load`, offering offered_rps.
  void add(const std::vector<QueueSample>& samples, double load, double offered_rps);
};
// The curve's queueing model (unbatched, with an objective; else nothing):
// each request's median service time, scaled to the steps' mean total, fed
// through a FIFO queue with the curve's workers at the unit arrivals over the
// load; sets every step's model_p99_us and service_pace, and the load where
// that p99 meets the objective (bisection up to 1.25× the heaviest step), as req/s.
void model_curve(double slo_ms, const SweepServiceTimes& in, SweepCurve& curve);
// service_times.csv: per curve (in r.curves' order, models[i] its replays'
// samples), one row per replay and request.
std::string render_service_times_csv(const SweepResult& r, const std::vector<SweepServiceTimes>& models);

}  // namespace inferprof
