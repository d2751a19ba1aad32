#include "cli/replay_options.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "cli/progress.hpp"
#include "inferprof/error.hpp"

namespace inferprof::cli {

void add_replay_options(CLI::App* cmd, ReplayArgs& args) {
  cmd->add_option("model", args.model, "TorchScript model file (model.pt), or NAME[@VERSION] with --store")
      ->required();
  cmd->add_option("--trace", args.trace, "Request trace (JSON lines, see docs/trace-format.md)")->required();
  cmd->add_option("--profile", args.profile, "Pipeline profile: a name from profiles/ or a .toml path")
      ->default_str("default");
  cmd->add_option("--warmup", args.warmup, "Un-measured warm-up iterations per worker (default: the profile's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--threads", args.threads, "libtorch intra-op threads; 0 = one per core (default: the profile's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--concurrency", args.concurrency, "Replay workers sharing the loaded model")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--open-loop", args.open_loop, "Release requests at their ts_ms (queueing is measured)");
  cmd->add_option("--speed", args.speed, "Open loop: replay the trace this many times faster")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--limit", args.limit, "Replay at most N requests");
  cmd->add_option("--format", args.format, "What to print: table, json, csv or markdown")
      ->check(CLI::IsMember({"table", "json", "csv", "markdown"}));
  cmd->add_flag("--ops", args.ops, "Attribute compute to aten operators (RecordFunction observers)");
  cmd->add_flag("--no-progress", args.no_progress, "No live progress line on stderr");
  cmd->add_flag("--skip-invalid", args.skip_invalid, "Skip (and count) invalid trace lines instead of failing");
  cmd->add_option("--trace-json-requests", args.trace_json_requests,
                  "trace.json keeps the first N requests (0 = all); the other reports keep all");
  cmd->add_option("--tier", args.tiers,
                  "Tier policy and size, e.g. l1=lru:1000, l2=lfu:100000, l3=ttl:5000:10m (repeatable)");
  cmd->add_option("--redis", args.redis,
                  "Put L2 (and L3 unless the profile places it) on this Redis: redis://[:password@]host:port[/db] "
                  "(default: $INFERPROF_REDIS_URL)");
  cmd->add_option("--verify", args.verify,
                  "Recompute this share of the cache hits without caches and compare (exit 1 on a mismatch)")
      ->expected(0, 1)
      ->default_str("1.0");
  cmd->add_option("--store", args.store,
                  "Serve MODEL (NAME[@VERSION]) from this model store: file:///folder or http(s)://base-url; "
                  "model_update events in the trace then switch versions");
  cmd->add_option("--store-redis", args.store_redis,
                  "Keep model bytes in this Redis too, between the in-memory and the remote tier");
  cmd->add_flag("--store-zstd", args.store_zstd, "Compress model chunks in Redis with zstd");
  cmd->add_option("--update", args.update,
                  "How a model_update switches versions: sync (next request reloads), async (old version serves "
                  "while the new one loads), preload (load ahead, switch at the event) (default: the profile's)")
      ->check(CLI::IsMember({"sync", "async", "preload"}));
  cmd->add_option("--preload-lead", args.preload_lead_ms,
                  "--update preload, open loop: start loading a new version this many ms before its event "
                  "(closed loop: when the replay reads the event)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--device", args.device, "cpu, cuda or cuda:N (default: the profile's [model] device)");
  cmd->add_flag("--pinned", args.pinned, "cuda: stage inputs in pinned (page-locked) host memory before h2d");
  cmd->add_option("--gpu-trace", args.gpu_trace,
                  "cuda: on = CUPTI activity + NVTX ranges (GPU stage times); off = host times only")
      ->check(CLI::IsMember({"on", "off"}));
}

std::vector<TierSpec> tier_overrides(const ReplayArgs& args) { return parse_tier_options(args.tiers); }

std::vector<TierSpec> parse_tier_options(const std::vector<std::string>& tiers) {
  std::vector<TierSpec> out;
  for (const auto& t : tiers) {
    auto eq = t.find('=');
    std::string what = "--tier " + t;
    if (eq == std::string::npos)
      throw bad_input(fmt::format("{}: expected TIER=POLICY:CAPACITY, e.g. l1=lru:1000", what));
    out.push_back(parse_tier_spec(t.substr(0, eq), t.substr(eq + 1), what));
  }
  return out;
}

std::string redis_url(const ReplayArgs& args) {
  if (!args.redis.empty()) return args.redis;
  const char* env = std::getenv("INFERPROF_REDIS_URL");
  return env ? env : "";
}

RunConfig make_run_config(const ReplayArgs& args) {
  RunConfig config;
  config.model_path = args.model;
  config.trace_path = args.trace;
  config.profile = load_profile(args.profile);
  config.warmup = args.warmup;
  config.threads = args.threads;
  config.concurrency = args.concurrency;
  config.open_loop = args.open_loop;
  config.speed = args.speed;
  config.limit = args.limit;
  config.ops = args.ops;
  if (!args.no_progress) config.observer = make_progress_display();
  config.skip_invalid = args.skip_invalid;
  config.trace_json_max_requests = args.trace_json_requests;
  config.store_url = args.store;
  config.store_redis_url = args.store_redis;
  config.store_zstd = args.store_zstd;
  config.update_mode = args.update;
  config.preload_lead_ms = args.preload_lead_ms;
  if (args.store.empty() && (!args.store_redis.empty() || args.store_zstd))
    throw bad_input("--store-redis and --store-zstd apply to a model store: add --store URL");
  if (!args.device.empty()) {
    if (!is_device_name(args.device))
      throw bad_input(fmt::format("--device {}: expected cpu, cuda or cuda:N", args.device));
    config.profile.model.device = args.device;
  }
  if ((args.pinned || args.gpu_trace != "on") && config.profile.model.device == "cpu")
    throw bad_input("--pinned and --gpu-trace apply to --device cuda only (this run is on cpu)");
  config.pinned = args.pinned;
  config.gpu_trace = args.gpu_trace == "on";
  if (args.verify >= 0) {
    if (args.verify > 1) throw bad_input(fmt::format("--verify {}: expected a fraction between 0 and 1", args.verify));
    config.verify_fraction = args.verify;
  }
  return config;
}

}  // namespace inferprof::cli
