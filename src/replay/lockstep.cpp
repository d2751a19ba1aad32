// compare --mode lockstep: one pass over the trace, every request served under
// every configuration in turn, with one cache state per configuration and one
// loaded pipeline per distinct (model, profile): configurations that differ by
// caches share theirs, those that differ by model or profile each have their
// own. Each configuration still gets its own summary and reports.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <filesystem>

#include "base/atomic_file.hpp"
#include "base/output_owner.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "inferprof/replay.hpp"
#include "replay/driver.hpp"
#include "replay/dump.hpp"
#include "replay/engine.hpp"
#include "replay/machine.hpp"
#include "replay/model_updates.hpp"

namespace inferprof::detail {
namespace {

namespace fs = std::filesystem;

// One loaded pipeline and what the reports of the configurations it serves say about it.
struct Variant {
  RunConfig config;  // the base with this model and profile
  RunInfo info;      // the pass's facts with this model's and profile's
  LoadedPipeline loaded;
  std::unique_ptr<PipelineServer> server;
  WarmUpFastest fastest;  // its warm-up's fastest request (CPU sampling's calibration)
};

const Profile& profile_of(const RunConfig& base, const LockstepTarget& t) {
  return t.profile ? *t.profile : base.profile;
}
const std::string& model_of(const RunConfig& base, const LockstepTarget& t) {
  return t.model_path.empty() ? base.model_path : t.model_path;
}

// The variants the targets need, in the order first needed, and each target's.
std::vector<std::size_t> group_targets(const RunConfig& base, const std::vector<LockstepTarget>& targets,
                                       std::vector<std::pair<std::string, const Profile*>>& keys) {
  std::vector<std::size_t> of;
  for (const LockstepTarget& t : targets) {
    const std::pair<std::string, const Profile*> key{model_of(base, t), &profile_of(base, t)};
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) it = keys.insert(keys.end(), key);
    of.push_back(static_cast<std::size_t>(it - keys.begin()));
  }
  return of;
}

// libtorch's intra-op thread count is one per process: profiles that ask for
// different counts cannot both have theirs in one lockstep pass.
void check_one_thread_count(const RunConfig& base, const std::vector<std::pair<std::string, const Profile*>>& keys) {
  if (base.replay.threads >= 0) return;
  for (const auto& [model, profile] : keys)
    if (profile->model.threads != keys.front().second->model.threads)
      throw bad_input(fmt::format(
          "profiles {} and {} ask for {} and {} intra-op threads ([model] threads): lockstep serves every "
          "configuration from one process, which has one thread count; give --threads N, or --mode sequential",
          keys.front().second->name, profile->name, keys.front().second->model.threads, profile->model.threads));
}

std::vector<Variant> load_variants(const RunConfig& base,
                                   const std::vector<std::pair<std::string, const Profile*>>& keys, const RunInfo& info,
                                   ReplayObserver* observer) {
  std::vector<Variant> variants(keys.size());
  for (std::size_t v = 0; v < keys.size(); ++v) {
    Variant& variant = variants[v];
    variant.config = base;
    variant.config.model_path = keys[v].first;
    variant.config.profile = *keys[v].second;
    // The pass's facts (trace, machine, warm-up request), then this model's and profile's.
    const RunInfo own = describe_replay(variant.config);
    variant.info = info;
    variant.info.profile_name = own.profile_name;
    variant.info.profile_source = own.profile_source;
    variant.info.device = own.device;
    variant.info.warmup = own.warmup;
    variant.loaded = load_pipeline(variant.config, variant.info, observer);
    variant.server = std::make_unique<PipelineServer>(*variant.loaded.pipeline);
  }
  return variants;
}

// Each pipeline's warm-up (the caches start empty), and the CPU sampling that
// suits the fastest: one rule for every lane keeps them paired.
CpuSampling warm_up_variants(std::vector<Variant>& variants, const TraceRequest& request, std::uint32_t forced,
                             ReplayObserver* observer) {
  if (observer) observer->phase(ReplayObserver::Phase::warming_up);
  CpuSampling cpu;
  for (Variant& v : variants) {
    warm_up(
        *v.server, request, v.info.warmup, [] { return lifecycle::interrupted(); },
        [&](int k, double us) {
          v.info.warmup_us.push_back(us);
          if (observer) observer->warmup(k, v.info.warmup);
        },
        &v.fastest);
    const CpuSampling own = calibrate_cpu_sampling(v.fastest, forced);
    if (&v == &variants.front() || own.every > cpu.every) cpu = own;
  }
  return cpu;
}

// Each target's lane: its pipeline's server, its caches, collector and --verify sample.
struct Lanes {
  std::vector<std::unique_ptr<Collector>> collectors;
  std::vector<std::unique_ptr<Verifier>> verifiers;
  std::vector<LockstepLane> lanes;
  Lanes(const RunConfig& base, const std::vector<LockstepTarget>& targets, const std::vector<Variant>& variants,
        const std::vector<std::size_t>& variant_of, const std::vector<CacheState>& states)
      : lanes(targets.size()) {
    for (std::size_t c = 0; c < targets.size(); ++c) {
      const Variant& variant = variants[variant_of[c]];
      const CollectorOptions copts = collector_options(variant.config, variant.info, targets[c].out_dir);
      RequestSeries& series = lanes[c].series;
      for (const std::string& op : copts.preprocess_ops)
        series.op_names.push_back("preprocess." + op);
      series.op_us.resize(series.op_names.size());
      series.op_cpu_us.resize(series.op_names.size());
      collectors.push_back(std::make_unique<Collector>(copts));
      lanes[c].server = variant.server.get();
      lanes[c].caches = states[c].caches();
      lanes[c].collector = collectors.back().get();
      verifiers.push_back(std::make_unique<Verifier>(lanes[c].caches != nullptr, base.caches.verify_fraction));
      lanes[c].verifier = verifiers.back().get();
    }
  }
  // The per-request series of every lane, handed to the pass.
  void move_series_into(LockstepPass& pass) {
    pass.input = std::move(lanes.front().input);
    for (auto& lane : lanes)
      pass.series.push_back(std::move(lane.series));
  }
};

// What the pass learnt after its last request, for every variant's reports.
void finish_infos(std::vector<Variant>& variants, const TraceReader& reader, const SkippedRequests& skipped,
                  std::uint64_t ignored_events, const CpuSampling& cpu) {
  for (Variant& v : variants) {
    RunInfo& info = v.info;
    if (lifecycle::interrupted()) info.interrupted_by = lifecycle::interrupt_name();
    info.driver = "lockstep";
    info.cpu_sample_every = cpu.every;
    info.cpu_clock_read_ns = cpu.read_ns;
    info.cpu_clock = cpu.clock;
    record_skipped(info, reader, skipped);
    warn_if_no_warmup(info);
    if (ignored_events)
      info.warnings.push_back(fmt::format(
          "{} events in the trace were not applied: lockstep serves one model version (use --mode sequential)",
          ignored_events));
    info.peak_rss_mb = peak_rss_mb();
    info.gpu = v.loaded.pipeline->finish_gpu();
  }
}

// Every configuration's result, then its reports: a failure before the last
// commit leaves no configuration's reports.
LockstepPass collect_and_commit(const RunConfig& base, const std::vector<LockstepTarget>& targets,
                                const std::vector<Variant>& variants, const std::vector<std::size_t>& variant_of,
                                const std::vector<CacheState>& states, Lanes& lanes, std::uint64_t served) {
  LockstepPass pass;
  pass.requests = served;
  for (std::size_t c = 0; c < targets.size(); ++c) {
    RunInfo lane_info = variants[variant_of[c]].info;
    // A configuration's replay time: the time its requests took (the others' are not its own).
    lane_info.wall_s = static_cast<double>(lanes.lanes[c].busy_ns) / 1e9;
    pass.outcomes.push_back(collect_run(*lanes.collectors[c], lane_info, states[c], *lanes.verifiers[c]));
  }
  // Outside the measurement; before the reports, so that a failed dump leaves none.
  dump_model_io(base, *variants.front().loaded.pipeline);
  for (std::size_t c = 0; c < targets.size(); ++c)
    commit_run(*lanes.collectors[c], pass.outcomes[c], targets[c].out_dir);
  lanes.move_series_into(pass);
  return pass;
}

}  // namespace

LockstepPass run_lockstep_pass(const RunConfig& base, const std::vector<LockstepTarget>& targets) {
  check_replay_config(base);
  if (base.replay.drive == Drive::open_loop || base.replay.concurrency != 1)
    throw bad_input(
        "lockstep serves one request at a time under every configuration: it needs a closed loop with "
        "--concurrency 1");
  std::vector<std::pair<std::string, const Profile*>> keys;
  const std::vector<std::size_t> variant_of = group_targets(base, targets, keys);
  check_one_thread_count(base, keys);
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
  std::vector<Variant> variants = load_variants(base, keys, info, observer);

  for (const LockstepTarget& t : targets)
    if (!t.out_dir.empty()) output::claim_dir(t.out_dir);
  Lanes lanes(base, targets, variants, variant_of, states);

  // One warm-up per pipeline, shared by its configurations; the caches start empty.
  // It comes after everything else the pass allocates (collectors, lanes): the first forward
  // after those allocations cost the CNN ~0.7 ms more (fresh pages for its activations, by all
  // signs), and the first request is served under the first configuration alone, a bias of
  // 0.15% on 60 requests in an A/A compare.
  const CpuSampling cpu = warm_up_variants(variants, warmup_request, base.replay.cpu_sample, observer);
  const Nanos epoch = now_ns();
  for (auto& collector : lanes.collectors)
    collector->set_epoch(epoch);

  if (base.replay.limit > 0) counters.estimate = base.replay.limit;
  if (observer) {
    observer->phase(ReplayObserver::Phase::replaying);
    observer->replaying(counters);
  }
  // The trace after its head, requests only: model updates need a replay of
  // their own (run, or --mode sequential), so no read-ahead.
  JobFeed::Options feed_options;
  feed_options.trace_path = base.replay.trace_path;
  feed_options.trace_bytes = info.trace_bytes;
  JobFeed feed(feed_options, reader, std::move(early), nullptr, "", &counters);
  Job job;
  const auto next = [&](TraceRequest& request, std::uint64_t& line) {
    if (!feed.next(job)) return false;
    std::swap(request, job.request);
    line = job.line;
    counters.done = counters.done.load() + 1;
    return true;
  };
  SkippedRequests skipped(base.replay.skip_invalid);
  const std::uint64_t served = drive_lockstep(
      *variants.front().server, lanes.lanes, next, [] { return lifecycle::interrupted(); }, base.replay.limit, &skipped,
      cpu);
  if (served == 0 && lifecycle::interrupted()) throw_interrupted_before_any_request();
  finish_infos(variants, reader, skipped, feed.ignored_events(), cpu);
  if (served == 0) throw_no_valid_requests(base.replay.trace_path, variants.front().info.skipped_invalid);

  if (observer) observer->phase(ReplayObserver::Phase::writing_reports);
  return collect_and_commit(base, targets, variants, variant_of, states, lanes, served);
}

}  // namespace inferprof::detail
