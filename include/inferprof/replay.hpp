#pragma once
// Replaying a trace through the pipeline: closed loop (each worker takes the
// next request when it finishes one) or open loop (requests are released at
// their ts_ms, scaled by speed; the wait before service is the queue stage).
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "inferprof/profile.hpp"
#include "inferprof/report.hpp"
#include "inferprof/run_config.hpp"

namespace inferprof {

// What a replay tells whoever shows its progress (the CLI's progress line,
// src/cli/progress.cpp). Called from the replay's threads: implementations
// are thread-safe and return at once; the replay never waits on them.
struct ReplayCounters {
  std::atomic<std::uint64_t> done{0};      // requests completed
  std::atomic<std::uint64_t> total{0};     // requests the replay serves, once known exactly; 0: not yet
  std::atomic<std::uint64_t> estimate{0};  // total estimated from the trace's size (or --limit); 0: none
};
class ReplayObserver {
 public:
  enum class Phase { loading_model, warming_up, replaying, writing_reports, finished };
  virtual ~ReplayObserver() = default;
  // Which replay of several this is (compare: "configuration 2/4 (l1) · repeat 1/3").
  virtual void context(const std::string& /*label*/) {}
  virtual void phase(Phase /*phase*/) {}
  virtual void warmup(int /*done*/, int /*total*/) {}
  // The replay's clock started; `counters` stay valid until phase(writing_reports or finished).
  virtual void replaying(const ReplayCounters& /*counters*/) {}
};

struct RunOutcome {
  RunSummary summary;
  std::vector<std::string> files;                             // report files written
  std::vector<std::pair<std::string, std::uint64_t>> folded;  // the flame graph's stacks (µs)
  // Set when the replay completed but its report files could not be written
  // (a full disk): none was, and the summary still holds every figure.
  std::string reports_error;
};

// Loads the model, warms up, replays, aggregates and (with out_dir) writes the
// reports. Throws Error; on any error no report file is left behind. A
// completed replay whose reports cannot be written returns its summary with
// reports_error set, so that the measurements are not lost.
// A first SIGINT/SIGTERM (lifecycle.hpp) stops releasing requests: the ones in
// flight finish and the outcome covers what completed, with
// info.interrupted_by set; interrupted before any request completed, it throws
// Error with exit code 128 + the signal.
RunOutcome run_replay(const RunConfig& config);

}  // namespace inferprof
