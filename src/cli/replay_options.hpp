#pragma once
// Options `run` and `compare` share: what to replay and how.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "inferprof/replay.hpp"

namespace inferprof::cli {

struct ReplayArgs {
  std::string model, trace, profile, format = "table", redis;
  int warmup = -1, threads = -1, concurrency = 1;
  bool open_loop = false, ops = false, no_progress = false, skip_invalid = false;
  double speed = 1.0;
  std::uint64_t limit = 0, trace_json_requests = 20000;
  std::vector<std::string> tiers;  // --tier l1=lru:1000
  double verify = -1;              // --verify[=FRACTION]; -1: off
  std::string store, store_redis, update;  // the model store
  bool store_zstd = false;
  double preload_lead_ms = 1000;
  std::string device;              // --device; empty: the profile's
  bool pinned = false;
  std::string gpu_trace = "on";
  std::string model_sha256;        // --model-sha256 HEX
};

void add_replay_options(CLI::App* cmd, ReplayArgs& args);
// Validated RunConfig (profile loaded) from the parsed options.
RunConfig make_run_config(const ReplayArgs& args);
// --tier l1=lru:1000 ... parsed into specs; --redis or INFERPROF_REDIS_URL.
std::vector<TierSpec> tier_overrides(const ReplayArgs& args);
// Each "TIER=SPEC" of --tier through parse_tier_spec.
std::vector<TierSpec> parse_tier_options(const std::vector<std::string>& tiers);
std::string redis_url(const ReplayArgs& args);

}  // namespace inferprof::cli
