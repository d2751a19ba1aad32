#pragma once
// `inferprof sweep`: the trace replayed at each step of offered load (its own
// arrivals sped up, or more closed-loop workers) under each cache
// configuration, each step a whole replay from cold caches. A configuration
// stops at the first step that saturates or misses the p99 objective; the
// result is each one's curve and capacity (sweep_result.hpp).
#include <string>
#include <vector>

#include "inferprof/run_config.hpp"
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
  // Speed sweeps: each batch size (--max-batch) with each cache configuration;
  // a batched one gets max(base workers, 2 N) workers, so that a batch forms while the one before runs.
  std::vector<int> max_batches{1};
  std::string out_dir;  // sweep.json, sweep.csv, report.html
};

// Throws Error: bad input (exit 2) before anything runs, runtime (3) from a
// replay. Interrupted (lifecycle.hpp), it returns the steps that completed.
SweepResult run_sweep(const SweepConfig& config);

// The rules, apart so that they are tested without replays:
// marks `step` saturated or over the objective against the step before it (null: the first).
void judge_step(SweepLoad load, double slo_ms, const SweepStep* before, SweepStep& step);
// Fills the curve's capacity and knee from its steps (ascending load).
void summarize_curve(double slo_ms, SweepCurve& curve);
// The load halfway between the curve's last step within the objective (and
// unsaturated) and the first that is not; 0 when it has no such pair.
double bisection_load(const SweepCurve& curve);

}  // namespace inferprof
