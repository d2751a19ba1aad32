#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "inferprof/compare.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "inferprof/replicas.hpp"
#include "replay/replica_handshake.hpp"
#include "report/format.hpp"
#include "report/text.hpp"

namespace inferprof::cli {

namespace {
// "reports written to DIR/: ...", then for each trace.json that the size cap
// stopped early (`runs`: its folder under DIR, "" for DIR itself) how many
// requests it holds.
void print_files(const std::vector<std::string>& files, const std::string& dir, bool to_stdout,
                 const std::vector<std::pair<std::string, const RunSummary*>>& runs = {}) {
  if (files.empty()) return;
  std::FILE* to = to_stdout ? stdout : stderr;  // machine formats own stdout
  std::fprintf(to, "\nreports written to %s/:", dir.c_str());
  for (const auto& f : files) {
    std::string rel = f.rfind(dir + "/", 0) == 0 ? f.substr(dir.size() + 1) : f;
    std::fprintf(to, " %s", rel.c_str());
  }
  std::fprintf(to, "\n");
  for (const auto& [folder, run] : runs)
    if (run->trace_json_requests < run->requests)
      std::fprintf(to,
                   "%strace.json holds the first %s of %s requests (--trace-json-max-mb %s); the other reports "
                   "hold all\n",
                   folder.empty() ? "" : (folder + "/").c_str(),
                   report::group_thousands(run->trace_json_requests).c_str(),
                   report::group_thousands(run->requests).c_str(),
                   fmt::format("{}", static_cast<double>(run->trace_json_max_bytes) / 1e6).c_str());
}

// The exit of a command whose first interrupt it handled: what completed is
// reported above; the code says it was cut short (130 for SIGINT, 143 for SIGTERM).
int interrupted_exit() {
  std::fflush(stdout);
  std::fprintf(stderr, "inferprof: interrupted by %s: reported what completed before it\n",
               lifecycle::interrupt_name().c_str());
  return lifecycle::interrupted_exit_code();
}

int run_as_parent(const ReplayArgs& args, const std::string& out, int replicas, Split split, int timeout_s) {
  ReplicaLaunch launch;
  launch.replicas = replicas;
  launch.binary = "/proc/self/exe";
  launch.child_args = command_line();
  launch.split = split;
  launch.cache_namespace = fmt::format("replicas-{}", ::getpid());
  launch.redis_url = redis_url(args);
  launch.timeout_s = timeout_s;
  // Without --out the replicas' reports go to a scratch folder, removed after
  // (also on a signal; one a SIGKILL left is removed by a later run).
  lifecycle::PrivateFolder scratch;
  launch.out_dir = out;
  if (out.empty()) {
    scratch = lifecycle::PrivateFolder("inferprof-replicas");
    launch.out_dir = scratch.path();
  }
  ReplicaSummary s = run_replicas(launch);
  if (!out.empty()) write_file_atomic(out, "replicas.json", render_replicas_json(s));
  scratch.remove();
  std::fputs(report::render(args.format, s, "the replica table").c_str(), stdout);
  if (!out.empty() && args.format == report::Format::table)
    std::printf("\nreports written to %s/: replicas.json, replica-N/ (each replica's reports), replica-N.log\n",
                out.c_str());
  if (s.failed > 0) {
    std::fprintf(stderr, "inferprof: error: %d of %d replicas failed (see the table)\n", s.failed, replicas);
    if (!lifecycle::interrupted()) return static_cast<int>(ExitCode::runtime);
  }
  if (lifecycle::interrupted()) return interrupted_exit();
  return 0;
}

}  // namespace

Runner add_run_command(CLI::App& app) {
  auto args = std::make_shared<ReplayArgs>();
  auto out = std::make_shared<std::string>();
  auto caches = std::make_shared<std::string>("none");
  auto replicas = std::make_shared<int>(1);
  auto split = std::make_shared<Split>(Split::round_robin);
  auto replica = std::make_shared<std::string>();
  auto cache_ns = std::make_shared<std::string>();
  auto replica_timeout = std::make_shared<int>(0);
  CLI::App* cmd = app.add_subcommand("run", "Replay a trace once and print where each request's time goes");
  add_replay_options(cmd, *args);
  add_format_option<RunSummary>(cmd, args->format);
  cmd->add_option("--out", *out, "Write the report files to this folder");
  cmd->add_option("--caches", *caches,
                  "The one cache configuration to replay with: none, or tiers joined by commas (l1,l2,l3); "
                  "compare measures several")
      ->capture_default_str();
  cmd->add_option("--replicas", *replicas,
                  "Start N replica processes that split the trace and share the Redis tiers (--redis); model "
                  "updates reach them over Redis pub/sub")
      ->check(whole_at_least(1));
  add_enum_option(cmd, "--split", *split, "How replicas split the requests: rr (round-robin) or hash (of the key)");
  cmd->add_option("--replica-timeout-s", *replica_timeout,
                  "Kill replicas still running after S seconds (default: no limit)")
      ->check(whole_at_least(1));
  // Set by the parent of --replicas for each replica; not for people.
  cmd->add_option(replica_handshake::kReplicaFlag, *replica)->group("");
  cmd->add_option(replica_handshake::kNamespaceFlag, *cache_ns)->group("");

  return [args, out, caches, replicas, split, replica, cache_ns, replica_timeout] {
    lifecycle::GracefulScope graceful;  // a first SIGINT/SIGTERM keeps what was measured
    if (*replicas > 1) {
      if (!replica->empty()) throw bad_input("--replicas and --replica cannot be combined");
      if (!args->dump_inputs.empty() || !args->dump_outputs.empty())
        throw bad_input("--dump-inputs and --dump-outputs need one replica (drop --replicas)");
      report::require_format<ReplicaSummary>(args->format, "the replica table");
      // The replicas would each reject bad options; say it once, before starting them.
      (void)make_run_config(*args);
      return run_as_parent(*args, *out, *replicas, *split, *replica_timeout);
    }
    RunConfig config = make_run_config(*args);
    config.output.out_dir = *out;
    config.caches.tiers = resolve_tiers(config.profile, *caches, tier_overrides(*args), redis_url(*args), "");
    config.caches.key_namespace = cache_ns->empty() ? fmt::format("run-{}", ::getpid()) : *cache_ns;
    if (!replica->empty()) {
      config.replica = replica_handshake::join(*replica, *split);
      if (!config.store.url.empty()) config.replica.update_channel = redis_url(*args);
    }
    RunOutcome outcome = run_replay(config);
    const RunSummary& s = outcome.summary;
    std::fputs(report::render(args->format, s, "a run").c_str(), stdout);
    print_files(outcome.files, config.output.out_dir, args->format == report::Format::table, {{"", &s}});
    if (s.verify.mismatches > 0) {
      std::fprintf(stderr, "inferprof: verification failed: %llu cached results differ from recomputed ones\n",
                   static_cast<unsigned long long>(s.verify.mismatches));
      if (!lifecycle::interrupted()) return static_cast<int>(ExitCode::check_failed);
    }
    if (lifecycle::interrupted()) return interrupted_exit();
    return 0;
  };
}

Runner add_compare_command(CLI::App& app) {
  auto args = std::make_shared<ReplayArgs>();
  auto out = std::make_shared<std::string>();
  auto configs = std::make_shared<std::vector<std::string>>();
  auto repeat = std::make_shared<int>(1);
  auto diff = std::make_shared<bool>(false);
  auto mode = std::make_shared<std::optional<CompareMode>>();
  auto intervals = std::make_shared<CompareIntervals>(CompareIntervals::this_trace);
  auto precision = std::make_shared<std::optional<double>>();
  auto max_time = std::make_shared<double>(600);
  CLI::App* cmd = app.add_subcommand(
      "compare", "Replay a trace under several cache configurations and report the measured speedup of each");
  add_replay_options(cmd, *args);
  add_format_option<CompareResult>(cmd, args->format);
  cmd->add_option("--caches", *configs,
                  "A configuration to replay (repeatable; the first is the baseline): none, l1, l1,l2, l1,l2,l3 "
                  "(default: the profile's [compare] caches, else those four)");
  cmd->add_option("--repeat", *repeat, "Replay each configuration N times, interleaved")
      ->check(whole_at_least(1))
      ->capture_default_str();
  cmd->add_option("--out", *out, "Write compare.csv, compare.json and each configuration's reports here");
  add_enum_option(cmd, "--mode", *mode,
                  "lockstep: one process, each request served under every configuration in turn, paired interval "
                  "(default for a closed loop with --concurrency 1); sequential: whole replays one after another "
                  "(default otherwise)");
  add_enum_option(cmd, "--intervals", *intervals,
                  "this-trace: the table shows each speedup's interval for this trace (noise only, the trace held "
                  "fixed; the verdicts read it); both: also the interval for traffic like this trace (requests "
                  "resampled). compare.json and compare.csv always have both");
  cmd->add_option("--precision", *precision,
                  "Lockstep: repeat passes (each from cold caches; --repeat is then the least) until every "
                  "configuration's this-trace 95% interval is within +-PCT% of its speedup, e.g. 3");
  cmd->add_option("--max-time", *max_time, "With --precision: stop starting passes after this many seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--flamegraph-diff", *diff,
                "With --out: a differential flame graph of each configuration vs the first");

  return [args, out, configs, repeat, diff, mode, intervals, precision, max_time] {
    lifecycle::GracefulScope graceful;  // a first SIGINT/SIGTERM keeps the configurations completed
    CompareConfig config;
    config.base = make_run_config(*args);
    config.configurations = *configs;
    if (config.configurations.empty()) config.configurations = config.base.profile.compare_caches;
    if (config.configurations.empty()) config.configurations = {"none", "l1", "l1,l2", "l1,l2,l3"};
    config.overrides = tier_overrides(*args);
    config.redis_url = redis_url(*args);
    config.repeat = *repeat;
    config.out_dir = *out;
    config.flamegraph_diff = *diff;
    config.mode = *mode;
    config.intervals = *intervals;
    config.precision_pct = *precision;
    config.max_time_s = *max_time;
    if (*diff && out->empty()) throw bad_input("--flamegraph-diff needs --out DIR to write the graphs to");
    CompareResult result = run_compare(config);
    std::fputs(report::render(args->format, result, "a comparison").c_str(), stdout);
    std::vector<std::pair<std::string, const RunSummary*>> runs;
    for (const CompareRow& row : result.rows) {
      std::string folder = row.name;  // compare's folder for "l1,l2" is l1+l2
      std::replace(folder.begin(), folder.end(), ',', '+');
      runs.emplace_back(folder, &row.last);
    }
    print_files(result.files, config.out_dir, args->format == report::Format::table, runs);
    if (result.verify_mismatches > 0) {
      std::fprintf(stderr, "inferprof: verification failed: %llu cached results differ from recomputed ones\n",
                   static_cast<unsigned long long>(result.verify_mismatches));
      if (!lifecycle::interrupted()) return static_cast<int>(ExitCode::check_failed);
    }
    if (lifecycle::interrupted()) return interrupted_exit();
    return 0;
  };
}

}  // namespace inferprof::cli
