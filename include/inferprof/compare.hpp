#pragma once
// `inferprof compare`: the same trace replayed under several configurations
// that differ by caches (each from a cold, empty state), by model or by
// profile, with the speedup of each against the first and its 95% confidence
// interval, so noise is never read as a gain; --gate turns a change past a
// threshold into a failed check, as diff does for saved runs. Two modes:
//   lockstep    one process, one loaded model; request i is served under every
//               configuration in turn (order rotated per request), each with
//               its own caches: drift hits every configuration alike, and the
//               intervals are paired: one for this trace (noise with the trace
//               held fixed; the verdict reads it), one for traffic like it.
//   sequential  whole replays one after another, interleaved when repeated
//               (A B C A B C ...); the interval is a bootstrap over the pooled
//               requests, which cannot see drift between replays.
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inferprof/compare_result.hpp"
#include "inferprof/enum_names.hpp"
#include "inferprof/gate.hpp"
#include "inferprof/replay.hpp"

namespace inferprof {

// Which speedup intervals the table shows: the this-trace one (the verdict's),
// or both it and the traffic-like one (compare.json and compare.csv have both).
enum class CompareIntervals : std::uint8_t { this_trace, both };
template <>
struct EnumNames<CompareIntervals> {
  static constexpr std::array<std::string_view, 2> names{"this-trace", "both"};
};

struct CompareConfig {
  RunConfig base;                           // model, trace, profile and replay settings; base.out_dir unused
  std::vector<std::string> configurations;  // "none", "l1", "l1,l2", ...; the first is the baseline
  // One of the three may list several, the configurations then differ by it
  // (the first is the baseline); the others give one each (empty: the base's).
  std::vector<std::string> models;  // --model: TorchScript files, or NAME@VERSION with --store
  std::vector<Profile> profiles;    // --profile given more than once
  // --gate (lockstep): each gate applied to every configuration against the
  // first, on the mean per request, paired, with the this-trace interval.
  std::vector<GateSpec> gates;
  std::vector<TierSpec> overrides;  // --tier
  std::string redis_url;            // --redis
  int repeat = 1;
  std::string out_dir;           // compare.csv, compare.json, one folder per configuration
  bool flamegraph_diff = false;  // diff-<config>.svg against the baseline
  // nullopt: lockstep for a closed loop with one worker, else sequential.
  // Lockstep with --open-loop or --concurrency > 1 is bad input.
  std::optional<CompareMode> mode;
  CompareIntervals intervals = CompareIntervals::this_trace;
  // --precision PCT (lockstep): passes repeat, each from cold caches, until every
  // configuration's this-trace interval is within +-PCT% of its speedup, or
  // max_time_s has passed; `repeat` is then the least number of passes.
  std::optional<double> precision_pct;
  double max_time_s = 600;
  // --pass-process (lockstep): fresh runs each pass after the first in a
  // process of its own (`self` re-run with `command_line` and the hidden
  // --pass-only flags; it writes no reports), so that what differs between
  // processes differs between passes, which the this-trace interval widens
  // by; same runs every pass in this process. nullopt: fresh with
  // --precision or --gate (passes until an interval is narrow enough), same
  // otherwise.
  std::optional<PassProcess> pass_process;
  std::string self = "/proc/self/exe";
  std::vector<std::string> command_line;  // this compare's arguments, after argv[0]
  // In a pass process: run pass `index` (from 0) only and write its figures
  // to `file` (run_compare_pass).
  struct PassOnly {
    int index = 0;
    std::string file;
  };
  std::optional<PassOnly> pass_only;
};

CompareResult run_compare(const CompareConfig& config);

// A pass process's work (config.pass_only set): one lockstep pass, without
// reports or dumps, its figures written to pass_only->file. Throws Error; an
// interrupt ends the pass between requests, as in compare itself.
void run_compare_pass(const CompareConfig& config);

// How compare and sweep name a configuration that differs by model or profile:
// the model's file name (the path as given when another shares the file
// name); the profile's name (its source when another shares the name).
std::string model_label(const std::vector<std::string>& models, std::size_t i);
std::string profile_label(const std::vector<Profile>& profiles, std::size_t i);

}  // namespace inferprof
