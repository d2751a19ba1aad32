#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "base/atomic_file.hpp"
#include "base/text.hpp"
#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "inferprof/cache.hpp"
#include "inferprof/compare.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "inferprof/merge.hpp"
#include "inferprof/printable.hpp"
#include "inferprof/replica_group.hpp"
#include "inferprof/replicas.hpp"
#include "replay/pass_process.hpp"
#include "replay/replica_handshake.hpp"
#include "report/format.hpp"
#include "report/saved_run.hpp"

namespace inferprof::cli {

namespace {

namespace fs = std::filesystem;
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
  // (also on a signal; one a SIGKILL left stays: it is not this process's).
  lifecycle::PrivateFolder scratch;
  launch.out_dir = launch.merged_dir = out;
  if (out.empty()) {
    scratch = lifecycle::PrivateFolder("inferprof-replicas");
    launch.out_dir = scratch.path();
  }
  const MergeResult r = run_replicas(launch);
  scratch.remove();
  // The merged run (over every replica's requests), then a row per replica;
  // the machine formats print the replica table alone (the merged run is summary.json).
  const bool people = args.format == report::Format::table || args.format == report::Format::markdown;
  if (people && r.run.requests > 0) std::fputs((report::render(args.format, r.run, "a run") + "\n").c_str(), stdout);
  std::fputs(report::render(args.format, r.replicas, "the replica table").c_str(), stdout);
  if (!out.empty() && args.format == report::Format::table)
    std::printf(
        "\nreports written to %s/: the merged run's (summary.json, requests.csv, ...), replicas.json, "
        "replica-N/ (each replica's reports), replica-N.log\n",
        out.c_str());
  if (r.replicas.failed > 0) {
    std::fprintf(stderr, "inferprof: error: %d of %d replicas failed (see the table)\n", r.replicas.failed, replicas);
    if (!lifecycle::interrupted()) return static_cast<int>(ExitCode::runtime);
  }
  if (lifecycle::interrupted()) return interrupted_exit();
  return 0;
}

// --replica K/N, or the scheduler's variables: $JOB_COMPLETION_INDEX (a
// Kubernetes Indexed Job's) and $INFERPROF_REPLICAS.
std::pair<int, int> group_position(const std::string& flag) {
  std::string text = flag;
  if (text.empty()) {
    const char* k = std::getenv("JOB_COMPLETION_INDEX");
    const char* n = std::getenv("INFERPROF_REPLICAS");
    if (!k || !n)
      throw bad_input(
          fmt::format("--group needs this replica's place: --replica K/N, or $JOB_COMPLETION_INDEX and "
                      "$INFERPROF_REPLICAS (unset: {})",
                      !k && !n ? "both" : (!k ? "JOB_COMPLETION_INDEX" : "INFERPROF_REPLICAS")));
    text = fmt::format("{}/{}", k, n);
  }
  // K/N, each a whole number (no sign, no spaces), 0 <= K < N <= the bound.
  const auto number = [](std::string_view digits, long long& v) {
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    return !digits.empty() && digits.front() != '-' && ec == std::errc() && end == digits.data() + digits.size();
  };
  const std::string from = flag.empty() ? " (from $JOB_COMPLETION_INDEX/$INFERPROF_REPLICAS)" : "";
  const std::string shown = printable(text.substr(0, 60)) + (text.size() > 60 ? "..." : "");
  const std::size_t slash = text.find('/');
  long long k = -1, n = 0;
  if (slash == std::string::npos || !number(std::string_view(text).substr(0, slash), k) ||
      !number(std::string_view(text).substr(slash + 1), n) || k < 0 || n < 1 || k >= n)
    throw bad_input(fmt::format("--replica {}: expected K/N with 0 <= K < N{}", shown, from));
  if (n > ReplicaGroup::kMaxReplicas)
    throw bad_input(
        fmt::format("--replica {}: a group has at most {} replicas{}", shown, ReplicaGroup::kMaxReplicas, from));
  return {static_cast<int>(k), static_cast<int>(n)};
}

// --group: this replica's role in a group that meets in Redis; the group's
// replicas share one cache namespace, emptied by the one that starts them.
std::shared_ptr<ReplicaGroup> join_group(const ReplayArgs& args, const std::string& name, const std::string& flag,
                                         int timeout_s, Split split, RunConfig& config) {
  const std::string url = redis_url(args);
  if (url.empty()) throw bad_input("--group needs --redis URL: the replicas meet there");
  const auto [k, n] = group_position(flag);
  config.caches.key_namespace = "group-" + name;
  ReplicaGroup::Options o;
  o.redis_url = url;
  o.name = name;
  o.index = k;
  o.count = n;
  o.shard_by = split == Split::hash ? "key" : "round-robin";
  o.timeout_s = timeout_s;
  o.warn = [](const std::string& line) { std::fprintf(stderr, "inferprof: warning: %s\n", line.c_str()); };
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  o.member = fmt::format("{} {}", host, ::getpid());
  o.before_start = o.after_all = [url, ns = config.caches.key_namespace] { make_redis_backend(url, ns)->clear(); };
  auto members = std::make_shared<ReplicaGroup>(std::move(o));
  config.replica.index = k;
  config.replica.count = n;
  config.replica.split = split;
  config.replica.group = name;
  if (!config.store.url.empty()) config.replica.update_channel = url;
  config.replica.on_ready = [members] { members->join([] { return lifecycle::interrupted(); }); };
  return members;
}

// Says this replica is done and waits for the group; the one that removes the
// group's keys also empties the shared cache namespace.
// --merge-into: the replica that finished last merges the group's folders,
// the siblings of its own --out (a shared volume) whose summary.json says it
// is a replica of this group and size, into `into`: a stale folder of another
// run beside them (yesterday's replica-0) is left out and named.
void merge_group(const std::string& name, const std::string& out, const std::string& into, int count) {
  MergeOptions merge;
  merge.out_dir = into;
  merge.replicas = count;
  std::error_code ec;
  const fs::path parent = fs::absolute(out, ec).parent_path();
  std::string others;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    if (!entry.is_directory(ec) || fs::equivalent(entry.path(), into, ec) ||
        !fs::exists(entry.path() / "summary.json", ec))
      continue;
    bool member = false;
    try {
      const report::SavedRun run = report::read_saved_run(entry.path().string(), report::SummaryCheck::partial);
      member = run.replica.group == name && run.replica.count == count;
    } catch (const Error&) {  // not a run of ours: not a member either
    }
    if (member)
      merge.dirs.push_back(entry.path().string());
    else
      others += fmt::format("{}'{}'", others.empty() ? "" : ", ", printable(entry.path().filename().string()));
  }
  if (!others.empty())
    std::fprintf(stderr, "inferprof: group %s: left out of the merge, not replicas of this group of %d: %s\n",
                 printable(name).c_str(), count, others.c_str());
  std::sort(merge.dirs.begin(), merge.dirs.end());
  try {
    const MergeResult r = merge_runs(merge);
    std::fprintf(stderr, "inferprof: group %s: merged %zu replicas' reports into %s (%s requests%s)\n", name.c_str(),
                 merge.dirs.size(), into.c_str(), report::group_thousands(r.run.requests).c_str(),
                 r.replicas.failed > 0
                     ? fmt::format("; {} of {} replicas failed: see replicas.json", r.replicas.failed, count).c_str()
                     : "");
  } catch (const Error& e) {
    std::fprintf(stderr, "inferprof: error: group %s: the merge into %s failed: %s\n", name.c_str(), into.c_str(),
                 e.what());
  }
}

void report_group_end(ReplicaGroup& members, const std::string& name, const std::string& out,
                      const std::string& merge_into, int count) {
  const ReplicaGroup::Finish f = members.finish([] { return lifecycle::interrupted(); });
  if (!f.problem.empty()) {
    std::fprintf(stderr, "inferprof: warning: %s (this replica's reports are complete; the group's keys expire)\n",
                 f.problem.c_str());
    return;
  }
  if (!f.started) {  // interrupted at the start barrier: the run's own line reports the interrupt
    std::fprintf(stderr, "inferprof: group %s: left the start barrier before the start; the others go on without it\n",
                 name.c_str());
    return;
  }
  std::vector<std::string> dead;
  for (int k : f.dead)
    dead.push_back(std::to_string(k));
  if (!dead.empty())
    std::fprintf(stderr, "inferprof: warning: group %s: replica%s %s stopped without finishing (no heartbeat)\n",
                 name.c_str(), f.dead.size() > 1 ? "s" : "", report::join_abbreviated(dead).c_str());
  if (f.left_running)
    std::fprintf(stderr,
                 "inferprof: group %s: stopped waiting for the others (interrupted, or --group-timeout-s passed); the "
                 "last of them removes the keys\n",
                 name.c_str());
  // "every replica done" only when it is true: none dead, this one not interrupted.
  if (f.last && merge_into.empty()) {
    if (dead.empty() && !lifecycle::interrupted())
      std::fprintf(stderr, "inferprof: group %s: every replica done; merge their folders with 'inferprof merge'\n",
                   name.c_str());
    else
      std::fprintf(stderr,
                   "inferprof: group %s: the last to leave (%s); removed the group's keys; merge the folders with "
                   "'inferprof merge'\n",
                   name.c_str(), lifecycle::interrupted() ? "this replica interrupted" : "the others done or dead");
  }
  if (f.last && !merge_into.empty()) merge_group(name, out, merge_into, count);
}

// compare's own options (ReplayArgs holds those it shares with run).
struct CompareArgs {
  std::string out;
  std::vector<std::string> configs, models, gates;
  int repeat = 1;
  bool flamegraph_diff = false;
  std::optional<CompareMode> mode;
  CompareIntervals intervals = CompareIntervals::this_trace;
  std::optional<double> precision;
  double max_time = 600;
  std::optional<PassProcess> pass_process;
  std::optional<int> pass_only;  // a pass process's hidden flags
  std::string pass_file;
};

CompareConfig make_compare_config(ReplayArgs args, const CompareArgs& c) {
  const std::vector<std::string> models = models_to_replay(args, c.models, "compare");
  CompareConfig config;
  config.base = make_run_config(args);
  if (models.size() > 1) config.models = models;
  config.profiles = profiles_to_replay(args);
  config.configurations = c.configs;
  const bool others_vary = models.size() > 1 || args.profiles.size() > 1;
  if (config.configurations.empty() && others_vary) config.configurations = {"none"};
  if (config.configurations.empty()) config.configurations = config.base.profile.compare_caches;
  if (config.configurations.empty()) config.configurations = {"none", "l1", "l1,l2", "l1,l2,l3"};
  config.overrides = tier_overrides(args);
  config.redis_url = redis_url(args);
  config.repeat = c.repeat;
  config.out_dir = c.out;
  config.flamegraph_diff = c.flamegraph_diff;
  config.mode = c.mode;
  config.intervals = c.intervals;
  config.precision_pct = c.precision;
  config.max_time_s = c.max_time;
  config.pass_process = c.pass_process;
  config.command_line = command_line();
  if (c.pass_only) config.pass_only = CompareConfig::PassOnly{*c.pass_only, c.pass_file};
  if (!c.gates.empty()) {
    std::string all;
    for (const std::string& g : c.gates)
      all += (all.empty() ? "" : ",") + g;
    config.gates = parse_gates(all, "--gate");
  }
  if (c.flamegraph_diff && c.out.empty()) throw bad_input("--flamegraph-diff needs --out DIR to write the graphs to");
  return config;
}

// run's options for replicas: on this host (--replicas) or a group started elsewhere (--group).
struct ReplicaArgs {
  int replicas = 1;
  Split split = Split::round_robin;
  std::string shard_by, replica, cache_ns, group, merge_into;
  int replica_timeout = 0, group_timeout = 300;
};

void add_replica_options(CLI::App* cmd, ReplicaArgs& r) {
  cmd->add_option("--replicas", r.replicas,
                  "Start N replica processes that split the trace and share the Redis tiers (--redis); model "
                  "updates reach them over Redis pub/sub")
      ->check(whole_at_least(1, r.replicas));
  cmd->add_option("--shard-by", r.shard_by,
                  "How replicas (--replicas, --group) share the trace: round-robin, or key (a hash of the key: each "
                  "key on one replica, as a consistent-hash load balancer does)")
      ->check(CLI::IsMember({"round-robin", "key"}));
  // The older spelling of --shard-by, still read (a hidden option would have no name in its errors).
  add_enum_option(cmd, "--split", r.split, "The older spelling of --shard-by: rr (round-robin) or hash (key)");
  cmd->add_option("--group", r.group,
                  "Join a group of replicas started separately (a Kubernetes Indexed Job, a scheduler, ssh; "
                  "docs/scale-out.md): they meet in Redis (--redis), start together and each replays its shard; "
                  "with --replica K/N");
  cmd->add_option("--merge-into", r.merge_into,
                  "With --group: the replica that finishes last merges the group's reports (each replica's --out, "
                  "siblings in one folder) into this folder");
  cmd->add_option("--group-timeout-s", r.group_timeout, "How long a --group replica waits for the others to be ready")
      ->check(whole_at_least(1, r.group_timeout))
      ->capture_default_str();
  cmd->add_option("--replica-timeout-s", r.replica_timeout,
                  "Kill replicas still running after S seconds (default: no limit)")
      ->check(whole_at_least(1, r.replica_timeout));
  cmd->add_option(replica_handshake::kReplicaFlag, r.replica,
                  "With --group: this replica's index K (from 0) and the group's size N (default: "
                  "$JOB_COMPLETION_INDEX and $INFERPROF_REPLICAS)");
  // Set by the parent of --replicas for each replica; not for people.
  cmd->add_option(replica_handshake::kNamespaceFlag, r.cache_ns)->group("");
}

}  // namespace

Runner add_run_command(CLI::App& app) {
  auto args = std::make_shared<ReplayArgs>();
  auto out = std::make_shared<std::string>();
  auto caches = std::make_shared<std::string>("none");
  auto rep = std::make_shared<ReplicaArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Replay a trace once and print where each request's time goes");
  add_replay_options(cmd, *args);
  add_format_option<RunSummary>(cmd, args->format);
  cmd->add_option("--out", *out, "Write the report files to this folder");
  cmd->add_option("--caches", *caches,
                  "The one cache configuration to replay with: none, or tiers joined by commas (l1,l2,l3); "
                  "compare measures several")
      ->capture_default_str();
  add_replica_options(cmd, *rep);

  return [args, out, caches, rep] {
    auto* replicas = &rep->replicas;
    auto* split = &rep->split;
    auto* shard_by = &rep->shard_by;
    auto* group = &rep->group;
    auto* group_timeout = &rep->group_timeout;
    auto* merge_into = &rep->merge_into;
    auto* replica = &rep->replica;
    auto* cache_ns = &rep->cache_ns;
    auto* replica_timeout = &rep->replica_timeout;
    if (!shard_by->empty()) *split = *shard_by == "key" ? Split::hash : Split::round_robin;
    lifecycle::GracefulScope graceful;  // a first SIGINT/SIGTERM keeps what was measured
    if (args->profiles.size() > 1)
      throw bad_input(
          fmt::format("run replays one profile ({} given); 'inferprof compare --profile A --profile B' measures "
                      "several against each other",
                      args->profiles.size()));
    if (!group->empty() && *replicas > 1)
      throw bad_input("--group joins replicas started elsewhere and --replicas starts them here: use one");
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
    std::shared_ptr<ReplicaGroup> members;
    if (!group->empty()) {
      if (!merge_into->empty() && out->empty())
        throw bad_input("--merge-into merges the group's --out folders: give each replica --out DIR/replica-K");
      members = join_group(*args, *group, *replica, *group_timeout, *split, config);
    } else if (!replica->empty()) {
      config.replica = replica_handshake::join(*replica, *split);
      if (!config.store.url.empty()) config.replica.update_channel = redis_url(*args);
    }
    RunOutcome outcome = run_replay(config);
    if (members) report_group_end(*members, *group, *out, *merge_into, config.replica.count);
    const RunSummary& s = outcome.summary;
    std::fputs(report::render(args->format, s, "a run").c_str(), stdout);
    print_files(outcome.files, config.output.out_dir, args->format == report::Format::table, {{"", &s}});
    if (!outcome.reports_error.empty()) {
      // The table above is the run's; only the files are missing.
      std::fprintf(stderr, "inferprof: error: %s: no report was written to %s (the output above holds the figures)\n",
                   outcome.reports_error.c_str(), printable(config.output.out_dir).c_str());
      return static_cast<int>(ExitCode::runtime);
    }
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
  auto c = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Replay a trace under several configurations (caches, models or profiles) and report the measured speedup "
      "of each against the first");
  add_replay_options(cmd, *args, false);
  add_format_option<CompareResult>(cmd, args->format);
  cmd->add_option("--caches", c->configs,
                  "A configuration to replay (repeatable; the first is the baseline): none, l1, l1,l2, l1,l2,l3 "
                  "(default: the profile's [compare] caches, else those four; with several models or profiles: none)")
      ->allow_extra_args(false);
  cmd->add_option("--model", c->models,
                  "A model to replay (repeatable; MODEL, when given, comes first and is the baseline): compares "
                  "models on one trace, request by request")
      ->allow_extra_args(false);
  cmd->add_option("--gate", c->gates,
                  "Lockstep: fail (exit 1) when a configuration is slower than the first past a threshold with its "
                  "whole 95% interval, e.g. total.cpu.mean=5% or preprocess.mean=10%+0.1ms (diff's grammar, on "
                  "means); exit 4 when an interval straddles it (repeatable, or comma-separated)")
      ->allow_extra_args(false);
  cmd->add_option("--repeat", c->repeat, "Replay each configuration N times, interleaved")
      ->check(whole_at_least(1, c->repeat))
      ->capture_default_str();
  cmd->add_option("--out", c->out,
                  "Write compare.csv, compare.json, report.html and each configuration's reports here");
  add_enum_option(cmd, "--mode", c->mode,
                  "lockstep: one process, each request served under every configuration in turn, paired interval "
                  "(default for a closed loop with --concurrency 1); sequential: whole replays one after another "
                  "(default otherwise)");
  add_enum_option(cmd, "--intervals", c->intervals,
                  "this-trace: the table shows each speedup's interval for this trace (noise only, the trace held "
                  "fixed; the verdicts read it); both: also the interval for traffic like this trace (requests "
                  "resampled). compare.json and compare.csv always have both");
  cmd->add_option("--precision", c->precision,
                  "Lockstep: repeat passes (each from cold caches; --repeat is then the least) until every "
                  "configuration's this-trace 95% interval is within +-PCT% of its speedup, e.g. 3");
  cmd->add_option("--max-time", c->max_time, "With --precision: stop starting passes after this many seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--flamegraph-diff", c->flamegraph_diff,
                "With --out: a differential flame graph of each configuration vs the first");
  add_enum_option(cmd, "--pass-process", c->pass_process,
                  "Lockstep: where the passes after the first run. fresh: each in a process of its own, so the "
                  "interval covers what differs between processes (default with --precision or --gate); same: all "
                  "in this one (default otherwise); the first pass's reports are kept");
  // Set by compare for a pass in its own process; not for people.
  cmd->add_option(detail::kPassOnlyFlag, c->pass_only)->group("");
  cmd->add_option(detail::kPassFileFlag, c->pass_file)->group("");

  return [args, c] {
    lifecycle::GracefulScope graceful;  // a first SIGINT/SIGTERM keeps the configurations completed
    CompareConfig config = make_compare_config(*args, *c);
    if (config.pass_only) {
      run_compare_pass(config);  // its figures in the file; compare's own process reports them
      return lifecycle::interrupted() ? lifecycle::interrupted_exit_code() : 0;
    }
    CompareResult result = run_compare(config);
    std::fputs(report::render(args->format, result, "a comparison").c_str(), stdout);
    std::vector<std::pair<std::string, const RunSummary*>> runs;
    for (const CompareRow& row : result.rows)
      runs.emplace_back(row.folder, &row.last);
    print_files(result.files, config.out_dir, args->format == report::Format::table, runs);
    if (result.verify_mismatches > 0) {
      std::fprintf(stderr, "inferprof: verification failed: %llu cached results differ from recomputed ones\n",
                   static_cast<unsigned long long>(result.verify_mismatches));
      if (!lifecycle::interrupted()) return static_cast<int>(ExitCode::check_failed);
    }
    if (lifecycle::interrupted()) return interrupted_exit();
    if (result.regressions > 0)
      std::fprintf(stderr, "inferprof: compare --gate: %d regression%s past the gate (see the gates above)\n",
                   result.regressions, result.regressions == 1 ? "" : "s");
    else if (result.unstable > 0)
      std::fprintf(stderr,
                   "inferprof: compare --gate: %d gate%s not decided: the interval straddles the limit; more "
                   "pairs settle it (--precision, --repeat)\n",
                   result.unstable, result.unstable == 1 ? "" : "s");
    return result.gate_exit_code();
  };
}

}  // namespace inferprof::cli
