// compare --mode lockstep: one pass over the trace, every request served under
// every configuration in turn, with one loaded model and one cache state per
// configuration. Each configuration still gets its own summary and reports.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <filesystem>

#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "inferprof/replay.hpp"
#include "replay/dump.hpp"
#include "replay/engine.hpp"
#include "replay/machine.hpp"
#include "replay/model_updates.hpp"

namespace inferprof::detail {

namespace fs = std::filesystem;

LockstepPass run_lockstep_pass(const RunConfig& base, const std::vector<LockstepTarget>& targets) {
  check_replay_config(base);
  if (base.replay.drive == Drive::open_loop || base.replay.concurrency != 1)
    throw bad_input(
        "lockstep serves one request at a time under every configuration: it needs a closed loop with "
        "--concurrency 1");
  const std::size_t n = targets.size();
  ReplayObserver* observer = base.output.observer.get();
  ReplayCounters counters;  // before `finished`: the observer lets go of them there
  const ObserverFinish finished{observer};
  RunInfo info = describe_replay(base);
  TraceReader reader(base.replay.trace_path, TraceReader::Options{base.replay.skip_invalid, 1 << 20, base.replay.csv});
  std::deque<TraceRecord> early = read_trace_head(base, reader, info);
  const TraceRequest warmup_request = pick_warmup_request(base, early.back().request, info);

  // Backends first: an unreachable Redis fails fast, before the model load.
  std::vector<CacheState> states;
  for (const LockstepTarget& t : targets)
    states.push_back(build_cache_state(t.tiers, t.cache_namespace, false));
  LoadedPipeline loaded = load_pipeline(base, info, observer);
  PipelineServer server(*loaded.pipeline);
  if (info.warmup == 0)
    info.warnings.push_back(
        "no warm-up: the first requests include one-time costs (TorchScript profiling runs, allocator growth); "
        "use --warmup N");

  std::vector<lifecycle::Cleanup> temp_files;  // killed by a signal: no half-written reports
  for (const LockstepTarget& t : targets) {
    if (t.out_dir.empty()) continue;
    ensure_output_dir(t.out_dir);
    temp_files.emplace_back([dir = t.out_dir] { lifecycle::remove_own_temp_files(dir); });
  }
  std::vector<std::unique_ptr<Collector>> collectors;
  std::vector<LockstepLane> lanes(n);
  std::vector<std::unique_ptr<Verifier>> verifiers;
  for (std::size_t c = 0; c < n; ++c) {
    CollectorOptions copts;
    copts.out_dir = targets[c].out_dir;
    copts.trace_json_max_bytes = base.output.trace_json_max_bytes;
    copts.copies_applicable = info.copies_applicable;
    collectors.push_back(std::make_unique<Collector>(copts));
    lanes[c].caches = states[c].caches();
    lanes[c].collector = collectors.back().get();
    verifiers.push_back(std::make_unique<Verifier>(lanes[c].caches != nullptr, base.caches.verify_fraction));
    lanes[c].verifier = verifiers.back().get();
  }

  // One warm-up for all: the model and the allocator are shared; the caches start empty.
  // It comes after everything else the pass allocates (collectors, lanes): the first forward
  // after those allocations cost the CNN ~0.7 ms more (fresh pages for its activations, by all
  // signs), and the first request is served under the first configuration alone, a bias of
  // 0.15% on 60 requests in an A/A compare.
  if (observer) observer->phase(ReplayObserver::Phase::warming_up);
  WarmUpFastest fastest_warmup;
  warm_up(
      server, warmup_request, info.warmup, [] { return lifecycle::interrupted(); },
      [&](int k, double us) {
        info.warmup_us.push_back(us);
        if (observer) observer->warmup(k, info.warmup);
      },
      &fastest_warmup);
  const CpuSampling cpu = calibrate_cpu_sampling(fastest_warmup, base.replay.cpu_sample);
  info.driver = "lockstep";
  info.cpu_sample_every = cpu.every;
  info.cpu_clock_read_ns = cpu.read_ns;
  info.cpu_clock = cpu.clock;

  const Nanos epoch = now_ns();
  for (auto& collector : collectors)
    collector->set_epoch(epoch);

  if (base.replay.limit > 0) counters.estimate = base.replay.limit;
  if (observer) {
    observer->phase(ReplayObserver::Phase::replaying);
    observer->replaying(counters);
  }
  std::uint64_t ignored_events = 0;
  auto next = [&](TraceRequest& request, std::uint64_t& line) {
    TraceRecord rec;
    for (;;) {
      if (!early.empty()) {
        rec = std::move(early.front());
        early.pop_front();
      } else if (!reader.next(rec)) {
        return false;
      }
      if (rec.kind == TraceRecord::Kind::request) break;
      ++ignored_events;  // model updates need a replay of their own (run, or --mode sequential)
    }
    request = std::move(rec.request);
    line = rec.line;
    counters.done = counters.done.load() + 1;
    return true;
  };
  SkippedRequests skipped(base.replay.skip_invalid);
  const std::uint64_t served = drive_lockstep(
      server, lanes, next, [] { return lifecycle::interrupted(); }, base.replay.limit, &skipped, cpu);
  if (lifecycle::interrupted()) info.interrupted_by = lifecycle::interrupt_name();
  if (served == 0 && lifecycle::interrupted())
    throw Error(static_cast<ExitCode>(lifecycle::interrupted_exit_code()),
                fmt::format("interrupted by {} before any request completed: nothing to report", info.interrupted_by));
  info.skipped_invalid = reader.skipped() + skipped.count();
  info.skipped_examples = reader.skipped_examples();
  for (std::string& e : skipped.examples())
    if (info.skipped_examples.size() < 10) info.skipped_examples.push_back(std::move(e));
  if (served == 0)
    throw bad_input(
        fmt::format("{}: the trace has no valid requests{}", base.replay.trace_path,
                    info.skipped_invalid ? fmt::format(" ({} invalid requests skipped)", info.skipped_invalid) : ""));
  if (ignored_events)
    info.warnings.push_back(fmt::format(
        "{} events in the trace were not applied: lockstep serves one model version (use --mode sequential)",
        ignored_events));
  info.peak_rss_mb = peak_rss_mb();
  info.gpu = loaded.pipeline->finish_gpu();

  if (observer) observer->phase(ReplayObserver::Phase::writing_reports);
  LockstepPass pass;
  pass.requests = served;
  for (std::size_t c = 0; c < n; ++c) {
    RunInfo lane_info = info;
    // A configuration's replay time: the time its requests took (the others' are not its own).
    lane_info.wall_s = static_cast<double>(lanes[c].busy_ns) / 1e9;
    pass.outcomes.push_back(collect_run(*collectors[c], lane_info, states[c], *verifiers[c]));
  }
  // Outside the measurement; before the reports, so that a failed dump leaves none.
  dump_model_io(base, *loaded.pipeline);
  // Commit last: a failure before here leaves no configuration's reports.
  for (std::size_t c = 0; c < n; ++c)
    commit_run(*collectors[c], pass.outcomes[c], targets[c].out_dir);
  pass.input = std::move(lanes.front().input);
  for (auto& lane : lanes) {
    pass.latency_us.push_back(std::move(lane.latency_us));
    pass.outcome.push_back(std::move(lane.outcome));
    pass.cpu_us.push_back(std::move(lane.cpu_us));
  }
  return pass;
}

}  // namespace inferprof::detail
