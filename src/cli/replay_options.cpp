#include "cli/replay_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <string_view>

#include "cli/progress.hpp"
#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"

namespace inferprof::cli {

namespace {

// --tier, --redis, --verify: the result caches.
void add_cache_options(CLI::App* cmd, ReplayArgs& args) {
  cmd->add_option("--tier", args.tiers,
                  "Tier policy and size, e.g. l1=lru:1000, l2=lfu:100000, l3=ttl:5000:10m (repeatable)");
  cmd->add_option("--redis", args.redis,
                  "Put L2 (and L3 unless the profile places it) on this Redis: redis://[:password@]host:port[/db] "
                  "(default: $INFERPROF_REDIS_URL)");
  cmd->add_option("--verify", args.verify,
                  "Off unless given. Recompute this share of the cache hits (default 1 = all) "
                  "without caches and compare; exit 1 on a mismatch")
      ->expected(0, 1)
      ->type_name("[=FRACTION]")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            char* end = nullptr;
            const double v = std::strtod(s.c_str(), &end);
            if (s.empty() || end != s.c_str() + s.size() || !(v >= 0 && v <= 1))
              return fmt::format("expected a fraction between 0 and 1, got {}", s);
            return "";
          },
          ""));
}

// --store ... --model-sha256: where the model comes from and what it runs on.
void add_model_source_options(CLI::App* cmd, ReplayArgs& args) {
  cmd->add_option("--store", args.store,
                  "Serve MODEL (NAME[@VERSION]) from this model store: file:///folder or http(s)://base-url; "
                  "model_update events in the trace then switch versions");
  cmd->add_option("--store-redis", args.store_redis,
                  "Keep model bytes in this Redis too, between the in-memory and the remote tier");
  cmd->add_flag("--store-zstd", args.store_zstd, "Compress model chunks in Redis with zstd");
  add_enum_option(cmd, "--update", args.update,
                  "How a model_update switches versions: sync (next request reloads), async (old version serves "
                  "while the new one loads), preload (load ahead, switch at the event) (default: the profile's)");
  cmd->add_option("--preload-lead-ms", args.preload_lead_ms,
                  "--update preload, open loop: start loading a new version this many milliseconds before its "
                  "event (closed loop: when the replay reads the event)")
      ->check(number_at_least(0))
      ->capture_default_str();
  cmd->add_option("--device", args.device, "cpu, cuda or cuda:N (default: the profile's [model] device)");
  cmd->add_flag("--pinned", args.pinned, "cuda: stage inputs in pinned (page-locked) host memory before h2d");
  cmd->add_option_function<std::string>(
         "--gpu-trace", [&args](const std::string& s) { args.gpu_trace = s == "on"; },
         "cuda: on = CUPTI activity + NVTX ranges (GPU stage times); off = host times only")
      ->check(one_of({"on", "off"}))
      ->default_str("on");
  cmd->add_option("--model-sha256", args.model_sha256,
                  "Refuse to load a model whose sha256 is not HEX (libtorch does not detect a damaged file)");
}

}  // namespace

void add_replay_options(CLI::App* cmd, ReplayArgs& args, bool model_required) {
  cmd->add_option("model", args.model, "TorchScript model file (model.pt), or NAME[@VERSION] with --store")
      ->required(model_required);
  cmd->add_option("--trace", args.trace,
                  "Request trace: JSON lines (docs/trace-format.md), or a .csv with a header row (--csv-columns)")
      ->required();
  cmd->add_option("--csv-columns", args.csv_columns,
                  "A .csv trace's columns, e.g. ts=time,key=path,image=file (default ts=timestamp,key=key)");
  cmd->add_option("--profile", args.profiles, "Pipeline profile: a name from profiles/ or a .toml path")
      ->default_str("default")
      ->allow_extra_args(false);  // one value per --profile: the model path after it is not a second one
  cmd->add_option("--warmup", args.warmup, "Un-measured warm-up iterations per worker (default: the profile's)")
      ->check(whole_at_least(0, args.warmup));
  cmd->add_option("--warmup-from", args.warmup_from,
                  "Warm up on the first request with this key (default: the median-sized input of the trace's first "
                  "1,000 requests)");
  cmd->add_option("--threads", args.threads, "libtorch intra-op threads; 0 = one per core (default: the profile's)")
      ->check(whole_at_least(0, args.threads));
  cmd->add_option("--concurrency", args.concurrency, "Replay workers sharing the loaded model")
      ->check(whole_at_least(1, args.concurrency))
      ->capture_default_str();
  cmd->add_flag("--open-loop", args.open_loop, "Release requests at their ts_ms (queueing is measured)");
  cmd->add_option("--speed", args.speed, "With --open-loop: replay the trace this many times faster (default 1)")
      ->check(number_above(0));
  cmd->add_option("--rate", args.rate,
                  "With --open-loop: Poisson arrivals at this many requests per second instead of the trace's ts_ms "
                  "(a fixed seed: every replay of the trace sees the same arrivals)")
      ->check(number_above(0));
  cmd->add_option("--limit", args.limit, "Replay the first N requests (default: the whole trace)")
      ->check(whole_at_least(1, args.limit));
  cmd->add_option("--cpu-sample", args.cpu_sample,
                  "Read the thread CPU clock on 1 in N requests; 1 = every request (default: N from the clock's "
                  "cost against a warm-up request, so that the reads cost at most 1% of a request)")
      ->check(whole_at_least(1, args.cpu_sample));
  add_enum_option(cmd, "--driver", args.driver,
                  "How requests reach the worker: threaded (a reader and a collector thread beside the workers) or "
                  "inline (closed loop, one worker: it reads, serves and aggregates, no other thread)");
  cmd->add_option("--max-batch", args.max_batch,
                  "Dynamic batching: requests that need the model run in batches of up to N (inputs stacked along "
                  "dim 0, one forward per batch); needs --concurrency N or more (default 1: no batching)")
      ->check(whole_at_least(1, args.max_batch));
  cmd->add_option("--batch-delay-us", args.batch_delay_us,
                  "With --max-batch: how long a batch's first request waits for more before the batch runs (default "
                  "0: a batch takes the requests waiting when the model is free)")
      ->check(number_at_least(0));
  cmd->add_flag("--ops", args.ops, "Attribute compute to aten operators (RecordFunction observers)");
  cmd->add_flag("--no-progress", args.no_progress, "No live progress line on stderr");
  cmd->add_flag("--skip-invalid", args.skip_invalid, "Skip (and count) invalid trace lines instead of failing");
  cmd->add_option("--dump-inputs", args.dump_inputs,
                  "After the replay, write the tensors the model was given for each distinct key as .npy files "
                  "here (DIR/NNNNNN/input.ARGUMENT.npy, DIR/keys.csv): not timed");
  cmd->add_option("--dump-outputs", args.dump_outputs,
                  "Likewise the model's outputs (DIR/NNNNNN/output[.NAME].npy); may be the --dump-inputs folder");
  cmd->add_option("--trace-json-max-mb", args.trace_json_max_mb,
                  "trace.json keeps the first requests whose events fit in MB megabytes (10^6 bytes), so that a "
                  "viewer opens it; the other reports keep all")
      ->check(number_above(0))
      ->capture_default_str();
  add_cache_options(cmd, args);
  add_model_source_options(cmd, args);
}

std::vector<std::string> normalize_verify(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      out.insert(out.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    if (args[i] != "--verify") {
      out.push_back(args[i]);
      continue;
    }
    // A number after it is its value; anything else is the next argument.
    char* end = nullptr;
    const bool number = i + 1 < args.size() && !args[i + 1].empty() &&
                        (std::strtod(args[i + 1].c_str(), &end), end == args[i + 1].c_str() + args[i + 1].size());
    out.push_back(number ? "--verify=" + args[++i] : "--verify=1");
  }
  return out;
}

// A trace run and compare cannot read: say what reads it. The JSON-lines
// reader would report "malformed JSON" on line 1.
void check_trace_is_readable(const std::string& path) {
  auto ends_with = [&](std::string_view suffix) {
    if (path.size() < suffix.size()) return false;
    for (std::size_t i = 0; i < suffix.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(path[path.size() - suffix.size() + i])) != suffix[i]) return false;
    return true;
  };
  if (ends_with(".iptrace"))
    throw bad_input(fmt::format(
        "{}: an .iptrace (simulate's binary form, without inputs): run and compare read the JSON-lines trace it "
        "was converted from; use 'inferprof simulate --trace {}' for a cache what-if",
        path, path));
  TraceReader::check_regular(path);  // before peeking at it: a FIFO would block the peek
  if (TraceReader::is_csv(path)) return;
  // No telling extension: a first line that starts with a letter or digit
  // (no JSON value a trace line could be) and has commas is a CSV header or row.
  std::ifstream in(path);
  std::string line;
  while (in && std::getline(in, line)) {
    if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    if (std::isalnum(static_cast<unsigned char>(line[first])) && line.find(',') != std::string::npos)
      throw bad_input(
          fmt::format("{}: a CSV trace: name it .csv to have it read as one (docs/trace-format.md#csv-traces)", path));
    break;
  }
}

std::vector<TierSpec> tier_overrides(const ReplayArgs& args) {
  return parse_tier_options(args.tiers);
}

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

Profile load_run_profile(const ReplayArgs& args, const std::string& spec) {
  Profile profile = load_profile(spec);
  if (!args.device.empty()) {
    if (!is_device_name(args.device))
      throw bad_input(fmt::format("--device {}: expected cpu, cuda or cuda:N", args.device));
    profile.model.device = args.device;
  }
  if ((args.pinned || !args.gpu_trace) && profile.model.device == "cpu")
    throw bad_input("--pinned and --gpu-trace apply to --device cuda only (this run is on cpu)");
  return profile;
}

std::vector<std::string> models_to_replay(ReplayArgs& args, const std::vector<std::string>& more,
                                          std::string_view command) {
  std::vector<std::string> models = more;
  if (!args.model.empty()) models.insert(models.begin(), args.model);
  if (models.empty()) throw bad_input(fmt::format("{} needs a model: MODEL, or --model A.pt --model B.pt", command));
  if (models.size() > 1 && !args.model_sha256.empty())
    throw bad_input(fmt::format("--model-sha256 checks one model: {} several without it", command));
  args.model = models.front();
  return models;
}

std::vector<Profile> profiles_to_replay(const ReplayArgs& args) {
  std::vector<Profile> out;
  if (args.profiles.size() > 1)
    for (const std::string& p : args.profiles)
      out.push_back(load_run_profile(args, p));
  return out;
}

RunConfig make_run_config(const ReplayArgs& args) {
  // The timing code picks the CPU clock per thread, where it cannot report a
  // misspelt value: without this check it would silently mean the default.
  if (const char* clock = std::getenv("INFERPROF_CPU_CLOCK"); clock && *clock && std::string_view(clock) != "thread")
    throw bad_input(fmt::format(
        "INFERPROF_CPU_CLOCK={}: expected 'thread' (CLOCK_THREAD_CPUTIME_ID), or unset for the perf task clock",
        printable(clock)));
  RunConfig config;
  config.model_path = args.model;
  if (!args.model_sha256.empty()) {
    std::string hex = args.model_sha256;
    for (char& c : hex)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw bad_input(fmt::format("--model-sha256 '{}': expected 64 hex digits (as sha256sum prints)",
                                  printable(args.model_sha256)));
    config.model_sha256 = hex;
  }
  check_trace_is_readable(args.trace);

  ReplayOptions& replay = config.replay;
  replay.trace_path = args.trace;
  if (!args.csv_columns.empty()) {
    if (!TraceReader::is_csv(args.trace))
      throw bad_input(fmt::format("--csv-columns applies to a .csv trace; '{}' is read as JSON lines", args.trace));
    replay.csv = parse_csv_columns(args.csv_columns);
  }
  config.profile = load_run_profile(args, args.profiles.empty() ? "" : args.profiles.front());
  replay.warmup = args.warmup;
  replay.warmup_from = args.warmup_from;
  replay.threads = args.threads;
  replay.concurrency = args.concurrency;
  replay.drive = args.open_loop ? Drive::open_loop : Drive::closed_loop;
  // --speed scales ts_ms, which only an open-loop replay follows.
  if (args.speed > 0 && !args.open_loop)
    throw bad_input(
        fmt::format("--speed {} applies to --open-loop replays only: add --open-loop to release "
                    "requests at their ts_ms",
                    args.speed));
  replay.speed = args.speed > 0 ? args.speed : 1.0;
  if (args.rate > 0 && !args.open_loop)
    throw bad_input(fmt::format("--rate {} sets an open loop's arrivals: add --open-loop", args.rate));
  if (args.rate > 0 && args.speed > 0)
    throw bad_input("--rate replaces the trace's arrivals, which --speed scales: give one of them");
  replay.poisson_rps = args.rate;
  replay.limit = args.limit;
  replay.skip_invalid = args.skip_invalid;
  replay.driver = args.driver;
  replay.cpu_sample = args.cpu_sample;
  replay.max_batch = args.max_batch;
  replay.batch_delay_us = args.batch_delay_us;

  OutputOptions& output = config.output;
  output.ops = args.ops;
  if (!args.no_progress) output.observer = make_progress_display();
  // Clamped below 2^64 bytes, so that the conversion is defined for any value given.
  output.trace_json_max_bytes = static_cast<std::uint64_t>(std::min(args.trace_json_max_mb * 1e6, 1e19));
  output.dump_inputs = args.dump_inputs;
  output.dump_outputs = args.dump_outputs;

  if (args.verify >= 0) config.caches.verify_fraction = args.verify;

  ModelStoreOptions& store = config.store;
  if (args.store.empty() && (!args.store_redis.empty() || args.store_zstd))
    throw bad_input("--store-redis and --store-zstd apply to a model store: add --store URL");
  store.url = args.store;
  store.redis_url = args.store_redis;
  store.zstd = args.store_zstd;
  store.update_mode = args.update;
  store.preload_lead_ms = args.preload_lead_ms;

  config.gpu.pinned = args.pinned;
  config.gpu.trace = args.gpu_trace;
  return config;
}

}  // namespace inferprof::cli
