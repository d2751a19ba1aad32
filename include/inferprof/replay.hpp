#pragma once
// Replaying a trace through the pipeline: closed loop (each worker takes the
// next request when it finishes one) or open loop (requests are released at
// their ts_ms, scaled by speed; the wait before service is the queue stage).
#include <cstdint>
#include <string>
#include <vector>

#include "inferprof/profile.hpp"
#include "inferprof/report.hpp"

namespace inferprof {

// Validated settings of one replay. The CLI fills it; nothing below the CLI
// sees CLI11. Negative numbers mean "take the profile's value".
struct RunConfig {
  std::string model_path;
  std::string trace_path;
  Profile profile;
  int warmup = -1;
  int threads = -1;
  int concurrency = 1;
  bool open_loop = false;
  double speed = 1.0;
  std::uint64_t limit = 0;  // 0: the whole trace
  std::string out_dir;      // empty: no report files
  bool ops = false;
  bool progress = false;    // a live progress line on stderr (only when it is a terminal)
  bool skip_invalid = false;
  std::uint64_t trace_json_max_requests = 20000;
};

struct RunOutcome {
  RunSummary summary;
  std::vector<std::string> files;  // report files written
};

// Loads the model, warms up, replays, aggregates and (with out_dir) writes the
// reports. Throws Error; on any error no report file is left behind.
RunOutcome run_replay(const RunConfig& config);

}  // namespace inferprof
