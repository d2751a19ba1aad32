#include "inferprof/replay.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "inferprof/pipeline.hpp"
#include "inferprof/printable.hpp"
#include "inferprof/store.hpp"
#include "inferprof/trace.hpp"
#include "replay/driver.hpp"
#include "replay/dump.hpp"
#include "replay/engine.hpp"
#include "replay/machine.hpp"
#include "replay/model_updates.hpp"

namespace inferprof {

namespace fs = std::filesystem;

std::vector<TierSpec> resolve_tiers(const Profile& profile, const std::string& which,
                                    const std::vector<TierSpec>& overrides, const std::string& redis_url,
                                    const std::string& scratch_dir) {
  std::vector<TierSpec> out;
  if (which.empty() || which == "none") return out;
  std::vector<CacheLevel> named;
  std::string part;
  for (std::size_t i = 0; i <= which.size(); ++i) {
    if (i == which.size() || which[i] == ',' || which[i] == '+') {
      const std::optional<CacheLevel> level = parse_enum<CacheLevel>(part);
      if (!level)
        throw bad_input(
            fmt::format("cache configuration '{}': expected none or tiers l1, l2, l3 joined by commas "
                        "(e.g. l1,l2)",
                        which));
      if (std::find(named.begin(), named.end(), *level) != named.end())
        throw bad_input(fmt::format("cache configuration '{}' names {} twice", which, part));
      named.push_back(*level);
      part.clear();
    } else {
      part += which[i];
    }
  }
  for (CacheLevel tier : {CacheLevel::l1, CacheLevel::l2, CacheLevel::l3}) {
    if (std::find(named.begin(), named.end(), tier) == named.end()) continue;
    const std::optional<TierSpec>& configured = tier == CacheLevel::l1   ? profile.cache.l1
                                                : tier == CacheLevel::l2 ? profile.cache.l2
                                                                         : profile.cache.l3;
    TierSpec spec;
    if (configured) {
      spec = *configured;
    } else {
      // The built-in tiers: a small L1 and a large L2 in this process, L3 on LMDB.
      spec.tier = tier;
      spec.policy = Policy::lru;
      spec.max_entries = tier == CacheLevel::l1 ? 1000 : tier == CacheLevel::l2 ? 100000 : 0;
      spec.backend = tier == CacheLevel::l3 ? TierBackend::lmdb : TierBackend::memory;
    }
    // --tier sets the policy and limits; where the tier lives stays as configured.
    for (const TierSpec& o : overrides)
      if (o.tier == spec.tier) {
        spec.policy = o.policy;
        spec.max_entries = o.max_entries;
        spec.max_bytes = o.max_bytes;
        spec.ttl_s = o.ttl_s;
      }
    if (!redis_url.empty() && (tier == CacheLevel::l2 || (tier == CacheLevel::l3 && !profile.cache.l3))) {
      spec.backend = TierBackend::redis;
      spec.location = redis_url;
    }
    if (spec.backend == TierBackend::redis && spec.location.empty())
      throw bad_input(
          fmt::format("{} is on Redis but no URL is given: use --redis URL or INFERPROF_REDIS_URL, or "
                      "url = \"redis://host:port\" in [cache.{}]",
                      enum_name(tier), enum_name(tier)));
    if (spec.backend == TierBackend::lmdb && spec.location.empty() && !scratch_dir.empty())
      spec.location = (fs::path(scratch_dir) / "l3.lmdb").string();
    out.push_back(spec);
  }
  return out;
}

namespace detail {

void check_replay_config(const RunConfig& config) {
  if (config.replay.concurrency < 1) throw bad_input("--concurrency must be at least 1");
  if (!(config.replay.speed > 0)) throw bad_input("--speed must be greater than 0");
  if (config.replay.threads > kMaxThreads)
    throw bad_input(fmt::format("--threads {}: at most {} (0 means one per core)", config.replay.threads, kMaxThreads));
  if (!(config.caches.verify_fraction >= 0 && config.caches.verify_fraction <= 1))
    throw bad_input(fmt::format("--verify={}: expected a fraction between 0 and 1", config.caches.verify_fraction));
  const int warmup = config.replay.warmup >= 0 ? config.replay.warmup : config.profile.model.warmup;
  if (!config.replay.warmup_from.empty() && warmup == 0)
    throw bad_input(
        fmt::format("--warmup-from {} picks the warm-up request, but there is no warm-up ({}): give "
                    "--warmup N, or drop --warmup-from",
                    printable(config.replay.warmup_from),
                    config.replay.warmup == 0 ? "--warmup 0" : "the profile's [model] warmup is 0"));
}

RunInfo describe_replay(const RunConfig& config) {
  const Profile& profile = config.profile;
  RunInfo info;
  info.tool_version = INFERPROF_VERSION;
  info.libtorch_version = libtorch_version();
  detail::record_machine_facts(info);
  info.trace_path = config.replay.trace_path;
  info.profile_name = profile.name;
  info.profile_source = profile.source;
  info.device = profile.model.device;
  info.concurrency = config.replay.concurrency;
  info.mode = enum_name(config.replay.drive);
  info.speed = config.replay.speed;
  info.limit = config.replay.limit;
  info.ops = config.output.ops;
  info.warmup = config.replay.warmup >= 0 ? config.replay.warmup : profile.model.warmup;

  return info;
}

LoadedPipeline::LoadedPipeline() = default;
LoadedPipeline::LoadedPipeline(LoadedPipeline&&) noexcept = default;
LoadedPipeline& LoadedPipeline::operator=(LoadedPipeline&&) noexcept = default;
LoadedPipeline::~LoadedPipeline() = default;

LoadedPipeline load_pipeline(const RunConfig& config, RunInfo& info, ReplayObserver* observer) {
  const Profile& profile = config.profile;
  LoadedPipeline out;
  std::string first_version;
  if (config.store.url.empty()) {
    out.source = make_file_source(config.model_path);
  } else {
    auto at = config.model_path.find('@');
    out.source = make_store_source(config, config.model_path.substr(0, at));
    if (at != std::string::npos) first_version = config.model_path.substr(at + 1);
  }

  info.threads = configure_threads(config.replay.threads >= 0 ? config.replay.threads : profile.model.threads);
  if (observer) observer->phase(ReplayObserver::Phase::loading_model);
  const ModelBytes first_bytes = out.source->fetch(first_version);
  // libtorch checks no CRC: a damaged archive can load and run. A plain file's
  // sha256 is reported, and checked before loading when the user gave one.
  if (!out.source->versioned() || !config.model_sha256.empty()) {
    const std::string sha = sha256_hex(*first_bytes.bytes);
    if (!out.source->versioned()) info.model_sha256 = sha;
    if (!config.model_sha256.empty() && sha != config.model_sha256)
      throw bad_input(fmt::format("model '{}': sha256 is {}, but --model-sha256 expects {}",
                                  printable(config.model_path), sha, config.model_sha256));
  }
  out.pipeline = std::make_unique<Pipeline>(first_bytes, profile,
                                            PipelineOptions{profile.model.device, config.output.ops, config.gpu.pinned,
                                                            config.gpu.trace, config.replay.trace_path});
  const ModelInfo& model = out.pipeline->model();
  info.model_path = model.path;
  info.model_version = model.version;
  info.model_served_by = model.served_by;
  info.model_hash = model.hash;
  info.model_arch = model.meta.arch;
  info.model_parameters = model.parameters;
  info.model_bytes = model.file_bytes;
  info.load_ms = model.load_ms;
  info.copies_applicable = profile.model.device != "cpu";

  return out;
}

std::deque<TraceRecord> read_trace_head(const RunConfig& config, TraceReader& reader, RunInfo& info) {
  std::deque<TraceRecord> read_early;
  bool have_pending = false;
  for (TraceRecord rec; !have_pending && reader.next(rec);) {
    have_pending = rec.kind == TraceRecord::Kind::request;
    read_early.push_back(std::move(rec));
  }
  if (!have_pending) throw bad_input(fmt::format("{}: the trace has no requests", config.replay.trace_path));
  const TraceRecord& pending = read_early.back();
  if (config.replay.drive == Drive::open_loop && !pending.request.ts_ms)
    throw bad_input(at_line(config.replay.trace_path, pending.line,
                            "open-loop replay needs 'ts_ms' on every request (this one has none); drop --open-loop "
                            "to replay closed-loop"));
  std::error_code ec;
  info.trace_bytes = fs::file_size(config.replay.trace_path, ec);
  info.trace_hash = file_version(config.replay.trace_path);

  return read_early;
}

RunOutcome collect_run(const Collector& collector, const RunInfo& info, const CacheState& caches,
                       const Verifier& verifier) {
  RunOutcome outcome;
  outcome.summary = collector.summarize(info);
  outcome.summary.caches = caches.reports();
  outcome.summary.verify = verifier.report();
  outcome.folded = collector.folded();
  return outcome;
}

void commit_run(Collector& collector, RunOutcome& outcome, const std::string& out_dir) {
  if (out_dir.empty()) return;
  collector.commit(outcome.summary);
  for (const char* f :
       {"summary.json", "requests.csv", "stages.csv", "stacks.folded", "flamegraph.svg", "trace.json", "report.html"})
    outcome.files.push_back((fs::path(out_dir) / f).string());
}

}  // namespace detail

namespace {

// Whether this replay takes the inline driver (ReplayOptions::driver).
bool use_inline_driver(const RunConfig& config) {
  if (config.replay.driver != Driver::inline_worker) return false;
  if (config.replay.drive != Drive::closed_loop || config.replay.concurrency != 1)
    throw bad_input("--driver inline serves a closed loop with one worker: drop --open-loop and --concurrency");
  return true;
}

}  // namespace

RunOutcome run_replay(const RunConfig& config) {
  // ---- Set-up: settings checked, trace head read, caches, model, updates ----
  const Profile& profile = config.profile;
  detail::check_replay_config(config);
  const bool inline_driver = use_inline_driver(config);
  if (!config.output.out_dir.empty()) ensure_output_dir(config.output.out_dir);
  detail::check_dump_dirs(config.output);
  // Killed by a signal, the run's half-written reports go with it.
  lifecycle::Cleanup temp_files;
  if (!config.output.out_dir.empty()) temp_files = lifecycle::temp_files_cleanup(config.output.out_dir);
  ReplayObserver* observer = config.output.observer.get();
  ReplayCounters counters;  // before `finished`: the observer lets go of them there
  const detail::ObserverFinish finished{observer};

  RunInfo info = detail::describe_replay(config);
  info.driver = enum_name(inline_driver ? Driver::inline_worker : Driver::threaded);

  // Validate the trace before paying for the model load. The reader's
  // buffers are allocated here, before the clock starts.
  TraceReader reader(config.replay.trace_path,
                     TraceReader::Options{config.replay.skip_invalid, 1 << 20, config.replay.csv});
  // Records read before the replay starts (events before the first request, then it), replayed first.
  std::deque<TraceRecord> read_early = detail::read_trace_head(config, reader, info);
  const TraceRequest warmup_request = detail::pick_warmup_request(config, read_early.back().request, info);

  // Backends first: an unreachable Redis fails fast, before the model load.
  detail::CacheState tiers =
      detail::build_cache_state(config.caches.tiers, config.caches.key_namespace, config.replica.is_replica());
  const CacheSet* caches = tiers.caches();
  detail::Verifier verifier(caches != nullptr, config.caches.verify_fraction);

  const UpdateMode update_mode = config.store.update_mode.value_or(profile.model.update);
  detail::LoadedPipeline loaded = detail::load_pipeline(config, info, observer);
  ModelSource* const source = loaded.source.get();
  Pipeline& pipeline = *loaded.pipeline;
  detail::PipelineServer server(pipeline);
  std::optional<ModelUpdates> updates;
  if (source->versioned()) updates.emplace(pipeline, *source, update_mode, caches);
  // Replicas hear of updates from Redis pub/sub (replica 0 publishes the trace's events).
  std::unique_ptr<UpdateChannel> channel;
  if (updates && !config.replica.update_channel.empty()) {
    channel = std::make_unique<UpdateChannel>(config.replica.update_channel,
                                              "inferprof:" + config.caches.key_namespace + ":updates",
                                              [&](const ModelRef& ref) {
                                                if (ref.name == source->name()) updates->announce(ref.version);
                                              });
    channel->wait_subscribed();
  }
  if (info.warmup == 0)
    info.warnings.push_back(
        "no warm-up: the first requests include one-time costs (TorchScript profiling runs, allocator growth); "
        "use --warmup N");
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (static_cast<unsigned>(info.threads * config.replay.concurrency) > cores)
    info.warnings.push_back(
        fmt::format("{} workers x {} intra-op threads oversubscribe {} cores: compute time "
                    "includes waiting for a core",
                    config.replay.concurrency, info.threads, cores));

  detail::JobFeed::Options feed_options;
  feed_options.trace_path = config.replay.trace_path;
  feed_options.open_loop = (config.replay.drive == Drive::open_loop);
  feed_options.speed = config.replay.speed;
  feed_options.limit = config.replay.limit;
  feed_options.replica_index = config.replica.index;
  feed_options.replica_count = config.replica.count;
  feed_options.split = config.replica.split;
  feed_options.preload_lead_ms = config.store.preload_lead_ms;
  feed_options.trace_bytes = info.trace_bytes;
  detail::JobFeed::ReadAhead read_ahead;
  if (updates)
    read_ahead = [&](const std::string& version, Nanos not_before) { updates->read_ahead(version, not_before); };
  detail::JobFeed feed(feed_options, reader, std::move(read_early), read_ahead, source->name(), &counters);
  detail::SkippedRequests skipped_requests(config.replay.skip_invalid);
  detail::DriveParts parts{server,
                           caches,
                           updates ? &*updates : nullptr,
                           &verifier,
                           &skipped_requests,
                           &counters.done,
                           [&](const std::string& version) {
                             if (!channel)
                               updates->announce(version);
                             else if (config.replica.index <= 0)
                               channel->publish(ModelRef{source->name(), version});
                           }};

  // The collector and the machine-speed probe come before the warm-up, so
  // that the warm-up, not the first request, follows the collector's
  // allocations and the probe's 4 MiB walk through the caches (in lockstep
  // that had cost the first request ~0.7 ms: lockstep.cpp).
  CollectorOptions copts;
  copts.out_dir = config.output.out_dir;
  copts.trace_json_max_bytes = config.output.trace_json_max_bytes;
  copts.copies_applicable = info.copies_applicable;
  copts.preprocess_ops = config.profile.preprocess_op_names();
  auto collector = std::make_unique<Collector>(copts);
  info.speed_before = probe_machine_speed();

  // ---- Warm-up gate: every worker warm; CPU sampling calibrated, the clock started ----
  Nanos epoch = 0;
  const detail::Gate gate = [&](const detail::WarmUpFastest& fastest_warmup) {
    // A replica: tell the parent it is ready and wait for the common start.
    if (config.replica.on_ready) config.replica.on_ready();
    detail::GateOpen open;
    open.cpu = detail::calibrate_cpu_sampling(fastest_warmup, config.replay.cpu_sample);
    info.cpu_sample_every = open.cpu.every;
    info.cpu_clock_read_ns = open.cpu.read_ns;
    info.cpu_clock = open.cpu.clock;
    // Everything is set up before the clock starts; the lead covers starting
    // the driver's threads and waking the workers, so none of it is charged to
    // the first requests (in open loop it would show as queueing).
    epoch = open.epoch = now_ns() + (inline_driver ? 0 : 2'000'000);
    collector->set_epoch(open.epoch);
    if (updates) updates->set_epoch(open.epoch);
    if (config.replay.limit > 0) counters.estimate = config.replay.limit;
    open.collector = collector.get();
    if (observer) {
      observer->phase(ReplayObserver::Phase::replaying);
      observer->replaying(counters);
    }
    return open;
  };
  const detail::WarmUpPlan warmup{&warmup_request, info.warmup, [&](int done_warmups, double us) {
                                    info.warmup_us.push_back(us);
                                    if (observer) observer->warmup(done_warmups, info.warmup);
                                  }};
  if (observer) observer->phase(ReplayObserver::Phase::warming_up);

  // ---- Drive ----
  const detail::DriveResult drove = inline_driver
                                        ? detail::drive_inline(parts, feed, warmup, gate)
                                        : detail::drive_threaded(parts, feed, config.replay.concurrency, warmup, gate);

  // ---- Collect ----
  info.speed_after = probe_machine_speed();
  const std::uint64_t done = counters.done.load();
  if (drove.cut_short) info.interrupted_by = lifecycle::interrupt_name();
  if (done == 0 && drove.cut_short && config.replica.count <= 1)
    throw Error(static_cast<ExitCode>(lifecycle::interrupted_exit_code()),
                fmt::format("interrupted by {} before any request completed: nothing to report", info.interrupted_by));
  // A replica may get no requests (a hash split over few keys): an empty report, not an error.
  std::uint64_t skipped = reader.skipped() + skipped_requests.count();
  std::vector<std::string> skipped_examples = reader.skipped_examples();
  for (std::string& e : skipped_requests.examples())
    if (skipped_examples.size() < 10) skipped_examples.push_back(std::move(e));
  if (done == 0 && config.replica.count <= 1)
    throw bad_input(fmt::format("{}: the trace has no valid requests{}", config.replay.trace_path,
                                skipped ? fmt::format(" ({} invalid requests skipped)", skipped) : ""));
  // Verification stalls the workers between requests; take it out of the replay time.
  info.wall_s = static_cast<double>(drove.end - epoch - verifier.spent_ns() / config.replay.concurrency) / 1e9;
  info.skipped_invalid = skipped;
  info.skipped_examples = skipped_examples;
  const std::uint64_t ignored_events = feed.ignored_events();
  if (ignored_events && !updates)
    info.warnings.push_back(
        fmt::format("{} model_update events in the trace were not applied: a plain model file "
                    "has one version (serve from a model store with --store URL)",
                    ignored_events));
  else if (ignored_events)
    info.warnings.push_back(fmt::format("{} events in the trace were not applied (not a model_update of '{}')",
                                        ignored_events, source->name()));
  std::vector<UpdateReport> update_reports;
  channel.reset();  // no announcement after this point
  if (updates) update_reports = updates->finish();
  info.peak_rss_mb = detail::peak_rss_mb();
  info.gpu = pipeline.finish_gpu();

  if (observer)
    observer->phase(config.output.out_dir.empty() ? ReplayObserver::Phase::finished
                                                  : ReplayObserver::Phase::writing_reports);
  RunOutcome outcome = detail::collect_run(*collector, info, tiers, verifier);
  // The collector grouped latencies by update phase; the update manager knows the rest.
  outcome.summary.updates.resize(update_reports.size());
  for (std::size_t k = 0; k < update_reports.size(); ++k) {
    UpdateReport& u = outcome.summary.updates[k];
    LatencyStats before = u.before, during = u.during, after = u.after;
    u = update_reports[k];
    u.before = before;
    u.during = during;
    u.after = after;
    if (!u.error.empty())
      outcome.summary.info.warnings.push_back(
          fmt::format("update to {}@{} failed, {} kept serving: {}", u.model, u.to_version, u.from_version, u.error));
  }

  // Outside the measurement, and before the reports: a failed dump leaves none.
  detail::dump_model_io(config, pipeline);

  // ---- Commit ----
  try {
    detail::commit_run(*collector, outcome, config.output.out_dir);
  } catch (const Error& e) {
    if (e.code() != ExitCode::runtime) throw;
    outcome.files.clear();  // the commit writes all of them or none
    outcome.reports_error = e.what();
  }
  return outcome;
}

}  // namespace inferprof
