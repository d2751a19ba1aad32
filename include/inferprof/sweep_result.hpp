#pragma once
// `inferprof sweep`: one trace replayed at steps of offered load under each
// cache configuration (sweep.hpp runs it); the latency–throughput curve of
// each and the traffic it takes within a latency objective.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/cache.hpp"
#include "inferprof/timing.hpp"

namespace inferprof {

// What a sweep varies from step to step.
enum class SweepLoad : std::uint8_t {
  speed,        // open loop: the trace's own arrivals, ts_ms divided by the step (its burstiness kept)
  concurrency,  // closed loop: the step's number of workers, each taking the next request when it finishes one
  rate,         // open loop: Poisson arrivals at the step's req/s (the trace's requests in order, not its ts_ms)
};

// A percentile with its 95% interval (distribution-free, from order statistics
// of the step's requests: which requests a replay like it would draw).
struct PercentileEstimate {
  double value_us = 0, low_us = 0, high_us = 0;
};

// One step: one replay of the trace at one load.
struct SweepStep {
  double load = 0;          // the speed (×), the Poisson rate (req/s) or the number of workers
  double offered_rps = 0;   // speed: the trace's requests over its span at this speed; rate: the rate; concurrency: 0
  double achieved_rps = 0;  // requests completed / replay wall time
  std::uint64_t requests = 0, failed = 0;
  double mean_us = 0;
  PercentileEstimate p50, p90, p99;
  double queue_share = 0;  // of the summed request time, the share spent queued before service (open loop)
  std::array<double, kStageCount> stage_mean_us{};  // µs per request of each stage (queue included)
  bool cpu = false;                                 // CPU time read on some of its requests
  double cpu_mean_us = 0;                           // thread CPU time per request
  bool saturated = false;  // speed: achieved < 95% of offered; concurrency: < 5% more than the step before
  bool over_slo = false;   // p99 past --slo-ms
  bool refined = false;    // a bisection step (--refine), between two of the steps asked for
  // A step past the objective is replayed (--tries) and the try with the
  // median p99 stands: each try's p99 in the order run; empty: one try.
  std::vector<double> tries_p99_us;
  double model_p99_us = 0;  // the curve's queueing model at this step's load (SweepCurve::modelled); 0: none
  // Its requests' total service time over the model's (1: the model's pace;
  // 1.2: served 20% slower); of its tries, the median. 0: not modelled.
  double service_pace = 0;
};

// One cache configuration's steps, until it saturated or missed the objective.
struct SweepCurve {
  std::string name;             // "none", "l1", "l1,l2"; "l1 · batch 8" with a batcher
  std::string caches;           // its cache configuration: "none", "l1", ...
  std::string model_path;       // several models swept: this curve's; empty: the sweep's
  std::string profile;          // several profiles swept: this curve's (its label); empty: the sweep's
  int profile_index = -1;       // that profile in SweepConfig::profiles; -1: the sweep's
  std::vector<TierSpec> tiers;  // resolved: what each tier was
  int max_batch = 1;            // --max-batch (1: unbatched)
  int workers = 1;              // replay workers (speed and rate sweeps)
  std::vector<SweepStep> steps;
  std::string stopped;  // why its sweep ended before the last step ("saturated at 3×"); empty: every step ran
  // The most traffic it serves within the objective (or, without one, unsaturated):
  // interpolated on p99 between the last step within it and the first past it.
  double capacity_rps = 0;
  bool capacity_found = false;    // false: not even the first step met the objective
  bool capacity_at_edge = false;  // the last step still met it: the capacity is at least this
  int knee = -1;                  // the last step whose p99 is within twice the lightest step's; -1: none
  // The queueing model (speed and rate sweeps, unbatched, with --slo-ms): each
  // request's service time, its median over the steps scaled to the steps'
  // mean total, fed at the trace's arrivals scaled to any load through a
  // FIFO queue with the curve's workers.
  // The capacity is the load where its p99 meets the objective (bisection):
  // what the measured service times allow for this trace, without one
  // replay's bursts of bad luck in its p99.
  bool modelled = false;
  double model_capacity_rps = 0;
  bool model_capacity_found = false;    // false: not even a light load met the objective
  bool model_capacity_at_edge = false;  // still met at 1.25× the heaviest step: at least this
  // The service pace over the curve's steps (a step's total service over
  // the steps' mean; 1.2: 20% slower: the machine's drift, the load's
  // contention) and the model's capacity with every service time at the
  // slowest (low) and fastest (high) of them. 0: not met at that pace.
  double model_pace_min = 1, model_pace_max = 1;
  double model_capacity_low_rps = 0, model_capacity_high_rps = 0;
  bool model_capacity_low_at_edge = false, model_capacity_high_at_edge = false;  // at least these
};

struct SweepResult {
  std::string model_path, trace_path, profile_name, device = "cpu";
  SweepLoad load = SweepLoad::speed;
  std::vector<double> loads;         // the steps asked for, in order
  double slo_ms = 0;                 // p99 objective; 0: none
  std::uint64_t trace_requests = 0;  // requests a step replays (--limit applied)
  double trace_span_s = 0;           // the last request's ts_ms, in s (speed sweeps)
  // --measure-after N: each step's first N requests are served, not measured;
  // measured_from_s is the arrival (ts_ms, in s) of the first measured one.
  std::uint64_t measure_after = 0;
  double measured_from_s = 0;
  int concurrency = 1;  // workers of a speed or rate sweep
  std::vector<SweepCurve> curves;
  double wall_s = 0;    // the whole sweep, model loads and warm-ups included
  double replay_s = 0;  // of it, the steps' replays
  std::vector<std::string> warnings;
  std::vector<std::string> files;  // written with --out
  std::string interrupted_by;      // a first SIGINT/SIGTERM: the steps that completed
};

inline std::string_view sweep_load_name(SweepLoad l) {
  return l == SweepLoad::speed ? "speed" : l == SweepLoad::rate ? "rate" : "concurrency";
}
// Speed and rate steps offer load (open loop); concurrency steps add workers.
inline bool sweep_open_loop(SweepLoad l) {
  return l != SweepLoad::concurrency;
}

std::string render_sweep_table(const SweepResult& r);
std::string render_sweep_json(const SweepResult& r);
std::string render_sweep_csv(const SweepResult& r);  // one row per (configuration, step)
std::string render_sweep_markdown(const SweepResult& r);
std::string render_sweep_html(const SweepResult& r);  // report.html: the curves, the SLO line, the capacities

}  // namespace inferprof
