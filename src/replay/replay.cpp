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

#include "base/atomic_file.hpp"
#include "base/output_owner.hpp"
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

namespace detail {

namespace {
void check_batching(const RunConfig& config) {
  const ReplayOptions& r = config.replay;
  if (r.max_batch < 1 || r.max_batch > kMaxBatch)
    throw bad_input(fmt::format("--max-batch {}: expected 1 to {}", r.max_batch, kMaxBatch));
  if (r.max_batch == 1) {
    if (r.batch_delay_us > 0)
      throw bad_input(
          fmt::format("--batch-delay-us {} applies to a batcher: add --max-batch N (N > 1)", r.batch_delay_us));
    return;
  }
  // At most a second: a batch's first request waits that long at most, and so does an interrupt.
  if (!(r.batch_delay_us >= 0 && r.batch_delay_us <= 1e6))
    throw bad_input(fmt::format("--batch-delay-us {}: expected 0 to 1000000 (a second)", r.batch_delay_us));
  // Each request waits for its batch on its worker's thread, as a request
  // handler does in a server: fewer workers than N could never fill a batch.
  if (r.concurrency < r.max_batch)
    throw bad_input(
        fmt::format("--max-batch {0} needs --concurrency {0} or more: a request waiting for its batch "
                    "holds its worker, so at most --concurrency requests can share a batch",
                    r.max_batch));
  if (config.output.ops)
    throw bad_input(
        "--ops attributes one request's forward to aten operators, but with --max-batch a forward serves a whole "
        "batch: drop one of them");
}
}  // namespace

void check_replay_config(const RunConfig& config) {
  if (config.replay.concurrency < 1) throw bad_input("--concurrency must be at least 1");
  if (!(config.replay.speed > 0)) throw bad_input("--speed must be greater than 0");
  if (!(config.replay.poisson_rps >= 0 && std::isfinite(config.replay.poisson_rps)))
    throw bad_input(fmt::format("--rate {}: expected requests per second above 0", config.replay.poisson_rps));
  if (config.replay.poisson_rps > 0 && config.replay.drive != Drive::open_loop)
    throw bad_input("--rate sets an open loop's arrivals: it needs --open-loop");
  if (config.replay.threads > kMaxThreads)
    throw bad_input(fmt::format("--threads {}: at most {} (0 means one per core)", config.replay.threads, kMaxThreads));
  if (!(config.caches.verify_fraction >= 0 && config.caches.verify_fraction <= 1))
    throw bad_input(fmt::format("--verify={}: expected a fraction between 0 and 1", config.caches.verify_fraction));
  check_batching(config);
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
  info.poisson_rps = config.replay.drive == Drive::open_loop ? config.replay.poisson_rps : 0;
  info.limit = config.replay.limit;
  info.ops = config.output.ops;
  info.max_batch = config.replay.max_batch;
  info.batch_delay_us = config.replay.batch_delay_us;
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
  PipelineOptions options{profile.model.device, config.output.ops, config.gpu.pinned, config.gpu.trace,
                          config.replay.trace_path};
  options.max_batch = config.replay.max_batch;
  options.batch_delay_ns = static_cast<Nanos>(config.replay.batch_delay_us * 1e3);
  out.pipeline = std::make_unique<Pipeline>(first_bytes, profile, options);
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
  if (config.replay.drive == Drive::open_loop && config.replay.poisson_rps <= 0 && !pending.request.ts_ms)
    throw bad_input(at_line(config.replay.trace_path, pending.line,
                            "open-loop replay needs 'ts_ms' on every request (this one has none); drop --open-loop "
                            "to replay closed-loop, or give --rate for Poisson arrivals"));
  std::error_code ec;
  info.trace_bytes = fs::file_size(config.replay.trace_path, ec);
  info.trace_hash = file_version(config.replay.trace_path);

  return read_early;
}

CollectorOptions collector_options(const RunConfig& config, const RunInfo& info, const std::string& out_dir) {
  CollectorOptions options;
  options.out_dir = out_dir;
  options.trace_json_max_bytes = config.output.trace_json_max_bytes;
  options.copies_applicable = info.copies_applicable;
  options.preprocess_ops = config.profile.preprocess_op_names();
  options.measure_from = config.replay.measure_after;
  options.queue_samples = config.replay.queue_samples;
  return options;
}

void warn_if_no_warmup(RunInfo& info) {
  if (info.warmup == 0)
    info.warnings.push_back(
        "no warm-up: the first requests include one-time costs (TorchScript profiling runs, allocator growth); "
        "use --warmup N");
}

void throw_interrupted_before_any_request() {
  throw Error(
      static_cast<ExitCode>(lifecycle::interrupted_exit_code()),
      fmt::format("interrupted by {} before any request completed: nothing to report", lifecycle::interrupt_name()));
}

void record_skipped(RunInfo& info, const TraceReader& reader, const SkippedRequests& skipped) {
  info.skipped_invalid = reader.skipped() + skipped.count();
  info.skipped_examples = reader.skipped_examples();
  for (std::string& e : skipped.examples())
    if (info.skipped_examples.size() < 10) info.skipped_examples.push_back(std::move(e));
}

void throw_no_valid_requests(const std::string& trace_path, std::uint64_t skipped) {
  throw bad_input(fmt::format("{}: the trace has no valid requests{}", trace_path,
                              skipped ? fmt::format(" ({} invalid requests skipped)", skipped) : ""));
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
  for (const char* f : kRunReportFiles)
    outcome.files.push_back((fs::path(out_dir) / f).string());
}

}  // namespace detail

namespace {

// The wall clock, in Unix milliseconds, at the steady-clock instant `at`.
double unix_ms_at(Nanos at) {
  const double now_unix_ms =
      std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
  return now_unix_ms + static_cast<double>(at - now_ns()) / 1e6;
}

// Whether this replay takes the inline driver (ReplayOptions::driver).
bool use_inline_driver(const RunConfig& config) {
  if (config.replay.driver != Driver::inline_worker) return false;
  if (config.replay.drive != Drive::closed_loop || config.replay.concurrency != 1)
    throw bad_input("--driver inline serves a closed loop with one worker: drop --open-loop and --concurrency");
  return true;
}

// One run's replay in named phases: set-up (the constructor: settings checked,
// trace head read, caches, model, updates), the feed and the warm-up gate,
// drive, collect, commit. The lockstep compare (lockstep.cpp) takes the same
// phases with one lane per configuration, through the same helpers.
class RunSession {
 public:
  explicit RunSession(const RunConfig& config);
  RunOutcome run() {
    const detail::DriveResult drove = drive();
    RunOutcome outcome = collect(drove);
    // Outside the measurement, and before the reports: a failed dump leaves none.
    detail::dump_model_io(config_, *loaded_.pipeline);
    commit(outcome);
    return outcome;
  }

 private:
  // Set-up's first step: the settings checked and the report folders ready, before any work.
  static bool checked(const RunConfig& config);
  void subscribe_to_updates();
  void warn_about_cores();
  std::unique_ptr<detail::JobFeed> make_feed();
  detail::Gate make_gate();
  detail::DriveResult drive();
  RunOutcome collect(const detail::DriveResult& drove);
  void warn_about_events();
  void on_update_event(const std::string& version);
  void merge_update_reports(RunOutcome& outcome, const std::vector<UpdateReport>& reports);
  void commit(RunOutcome& outcome);

  const RunConfig& config_;
  const bool inline_driver_;
  ReplayObserver* const observer_;
  ReplayCounters counters_;  // before `finished_`: the observer lets go of them there
  const detail::ObserverFinish finished_;
  RunInfo info_;
  // Validate the trace before paying for the model load. The reader's
  // buffers are allocated here, before the clock starts.
  TraceReader reader_;
  // Records read before the replay starts (events before the first request, then it), replayed first.
  std::deque<TraceRecord> read_early_;
  const TraceRequest warmup_request_;
  // Backends first: an unreachable Redis fails fast, before the model load.
  detail::CacheState tiers_;
  detail::Verifier verifier_;
  detail::LoadedPipeline loaded_;
  detail::PipelineServer server_;
  std::optional<ModelUpdates> updates_;
  // A replica's update events: those replica 0 published that this one heard, and those its own trace reached.
  // A replica waits at an event of its trace until it has heard that one (see on_update_event). Before
  // channel_, whose thread uses them until it is destroyed.
  std::mutex heard_mutex_;
  std::condition_variable heard_cv_;
  int heard_ = 0, reached_ = 0, unheard_ = 0;
  std::unique_ptr<UpdateChannel> channel_;
  std::unique_ptr<detail::JobFeed> feed_;
  detail::SkippedRequests skipped_requests_;
  std::unique_ptr<Collector> collector_;
  Nanos epoch_ = 0;
};

bool RunSession::checked(const RunConfig& config) {
  detail::check_replay_config(config);
  const bool inline_driver = use_inline_driver(config);
  detail::check_outputs(config.output, config.output.out_dir);
  if (!config.output.out_dir.empty()) output::claim_dir(config.output.out_dir);
  detail::check_dump_dirs(config.output);
  return inline_driver;
}

RunSession::RunSession(const RunConfig& config)
    : config_(config),
      inline_driver_(checked(config)),
      observer_(config.output.observer.get()),
      finished_{observer_},
      info_(detail::describe_replay(config)),
      reader_(config.replay.trace_path, TraceReader::Options{config.replay.skip_invalid, 1 << 20, config.replay.csv}),
      read_early_(detail::read_trace_head(config, reader_, info_)),
      warmup_request_(detail::pick_warmup_request(config, read_early_.back().request, info_)),
      tiers_(detail::build_cache_state(config.caches.tiers, config.caches.key_namespace, config.replica.is_replica())),
      verifier_(tiers_.caches() != nullptr || config.replay.max_batch > 1, config.caches.verify_fraction),
      loaded_(detail::load_pipeline(config, info_, observer_)),
      server_(*loaded_.pipeline),
      skipped_requests_(config.replay.skip_invalid) {
  info_.driver = enum_name(inline_driver_ ? Driver::inline_worker : Driver::threaded);
  const UpdateMode update_mode = config.store.update_mode.value_or(config.profile.model.update);
  if (loaded_.source->versioned()) updates_.emplace(*loaded_.pipeline, *loaded_.source, update_mode, tiers_.caches());
  subscribe_to_updates();
  detail::warn_if_no_warmup(info_);
  warn_about_cores();
}

// Replicas hear of updates from Redis pub/sub: replica 0 publishes the trace's events as its trace reaches
// them; the others count what they heard, and announce each when their own trace reaches it
// (on_update_event). Replica 0 ignores its own messages.
void RunSession::subscribe_to_updates() {
  if (!updates_ || config_.replica.update_channel.empty()) return;
  ModelSource* const source = loaded_.source.get();
  channel_ = std::make_unique<UpdateChannel>(config_.replica.update_channel,
                                             "inferprof:" + config_.caches.key_namespace + ":updates",
                                             [this, source](const ModelRef& ref) {
                                               if (config_.replica.index <= 0 || ref.name != source->name()) return;
                                               std::lock_guard<std::mutex> lock(heard_mutex_);
                                               ++heard_;
                                               heard_cv_.notify_all();
                                             });
  channel_->wait_subscribed();
}

// A model_update event reached its turn in this replica's trace. Alone: announced. Replica 0: announced here
// and published to the others. Another replica: announced once it has also heard replica 0's message for
// this event, so that the update takes effect at the same place in the trace on every replica, however far
// ahead or behind of replica 0 it is (announcing on the message instead, a closed-loop shard was often done
// before it came, and the update never went live there, or served requests before the event with the new
// version). A message that does not come within kUnheardWait is announced from the trace, and counted in a
// warning.
void RunSession::on_update_event(const std::string& version) {
  constexpr auto kUnheardWait = std::chrono::seconds(10);
  if (!channel_) return updates_->announce(version);
  if (config_.replica.index <= 0) {
    updates_->announce(version);
    return channel_->publish(ModelRef{loaded_.source->name(), version});
  }
  std::unique_lock<std::mutex> lock(heard_mutex_);
  const int n = ++reached_;
  if (!heard_cv_.wait_for(lock, kUnheardWait, [&] { return heard_ >= n || lifecycle::interrupted(); })) ++unheard_;
  lock.unlock();
  updates_->announce(version);
}

void RunSession::warn_about_cores() {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  // With a batcher one forward runs at a time: the other workers wait for it.
  if (config_.replay.max_batch == 1 && static_cast<unsigned>(info_.threads * config_.replay.concurrency) > cores)
    info_.warnings.push_back(
        fmt::format("{} workers x {} intra-op threads oversubscribe {} cores: compute time "
                    "includes waiting for a core",
                    config_.replay.concurrency, info_.threads, cores));
}

std::unique_ptr<detail::JobFeed> RunSession::make_feed() {
  detail::JobFeed::Options options;
  options.trace_path = config_.replay.trace_path;
  options.open_loop = (config_.replay.drive == Drive::open_loop);
  options.speed = config_.replay.speed;
  options.poisson_rps = config_.replay.poisson_rps;
  options.limit = config_.replay.limit;
  options.replica_index = config_.replica.index;
  options.replica_count = config_.replica.count;
  options.split = config_.replica.split;
  options.preload_lead_ms = config_.store.preload_lead_ms;
  options.trace_bytes = info_.trace_bytes;
  detail::JobFeed::ReadAhead read_ahead;
  if (updates_)
    read_ahead = [this](const std::string& version, Nanos not_before) { updates_->read_ahead(version, not_before); };
  return std::make_unique<detail::JobFeed>(options, reader_, std::move(read_early_), read_ahead, loaded_.source->name(),
                                           &counters_);
}

// The warm-up gate: every worker warm; CPU sampling calibrated, the clock started.
detail::Gate RunSession::make_gate() {
  return [this](const detail::WarmUpFastest& fastest_warmup) {
    // A replica: tell the parent it is ready and wait for the common start.
    if (config_.replica.on_ready) config_.replica.on_ready();
    detail::GateOpen open;
    open.cpu = detail::calibrate_cpu_sampling(fastest_warmup, config_.replay.cpu_sample);
    info_.cpu_sample_every = open.cpu.every;
    info_.cpu_clock_read_ns = open.cpu.read_ns;
    info_.cpu_clock = open.cpu.clock;
    // Everything is set up before the clock starts; the lead covers starting
    // the driver's threads and waking the workers, so none of it is charged to
    // the first requests (in open loop it would show as queueing).
    epoch_ = open.epoch = now_ns() + (inline_driver_ ? 0 : 2'000'000);
    info_.epoch_unix_ms = unix_ms_at(open.epoch);
    if (config_.replica.is_replica())
      info_.replica = {config_.replica.index, config_.replica.count, std::string(enum_name(config_.replica.split)),
                       config_.replica.group};
    collector_->set_epoch(open.epoch);
    if (updates_) updates_->set_epoch(open.epoch);
    if (config_.replay.limit > 0) counters_.estimate = config_.replay.limit;
    open.collector = collector_.get();
    if (observer_) {
      observer_->phase(ReplayObserver::Phase::replaying);
      observer_->replaying(counters_);
    }
    return open;
  };
}

detail::DriveResult RunSession::drive() {
  feed_ = make_feed();
  detail::DriveParts parts{server_,
                           tiers_.caches(),
                           updates_ ? &*updates_ : nullptr,
                           &verifier_,
                           &skipped_requests_,
                           &counters_.done,
                           [this](const std::string& version) { on_update_event(version); }};
  // The collector and the machine-speed probe come before the warm-up, so
  // that the warm-up, not the first request, follows the collector's
  // allocations and the probe's 4 MiB walk through the caches (in lockstep
  // that had cost the first request ~0.7 ms: lockstep.cpp).
  collector_ = std::make_unique<Collector>(detail::collector_options(config_, info_, config_.output.out_dir));
  info_.speed_before = probe_machine_speed();
  const detail::WarmUpPlan warmup{&warmup_request_, info_.warmup, [this](int done_warmups, double us) {
                                    info_.warmup_us.push_back(us);
                                    if (observer_) observer_->warmup(done_warmups, info_.warmup);
                                  }};
  if (observer_) observer_->phase(ReplayObserver::Phase::warming_up);
  return inline_driver_ ? detail::drive_inline(parts, *feed_, warmup, make_gate())
                        : detail::drive_threaded(parts, *feed_, config_.replay.concurrency, warmup, make_gate());
}

RunOutcome RunSession::collect(const detail::DriveResult& drove) {
  info_.speed_after = probe_machine_speed();
  const std::uint64_t done = counters_.done.load();
  if (drove.cut_short) info_.interrupted_by = lifecycle::interrupt_name();
  if (done == 0 && drove.cut_short && config_.replica.count <= 1) detail::throw_interrupted_before_any_request();
  // A replica may get no requests (a hash split over few keys): an empty report, not an error.
  detail::record_skipped(info_, reader_, skipped_requests_);
  if (done == 0 && config_.replica.count <= 1)
    detail::throw_no_valid_requests(config_.replay.trace_path, info_.skipped_invalid);
  // Verification stalls the workers between requests; take it out of the replay time.
  // With --measure-after the measured replay starts at its first request's arrival.
  const Nanos first = config_.replay.measure_after > 0 ? collector_->first_measured_arrival() : 0;
  const Nanos start = first > 0 ? first : epoch_;
  info_.wall_s = static_cast<double>(drove.end - start - verifier_.spent_ns() / config_.replay.concurrency) / 1e9;
  warn_about_events();
  if (unheard_ > 0)
    info_.warnings.push_back(
        fmt::format("{} model update{} did not arrive from replica 0 within 10 s of this replica's trace reaching {}: "
                    "announced from the trace",
                    unheard_, unheard_ == 1 ? "" : "s", unheard_ == 1 ? "it" : "them"));
  std::vector<UpdateReport> update_reports;
  channel_.reset();  // no announcement after this point
  if (updates_) update_reports = updates_->finish();
  info_.peak_rss_mb = detail::peak_rss_mb();
  info_.gpu = loaded_.pipeline->finish_gpu();

  if (observer_)
    observer_->phase(config_.output.out_dir.empty() ? ReplayObserver::Phase::finished
                                                    : ReplayObserver::Phase::writing_reports);
  RunOutcome outcome = detail::collect_run(*collector_, info_, tiers_, verifier_);
  merge_update_reports(outcome, update_reports);
  return outcome;
}

void RunSession::warn_about_events() {
  const std::uint64_t ignored_events = feed_->ignored_events();
  if (ignored_events && !updates_)
    info_.warnings.push_back(
        fmt::format("{} model_update events in the trace were not applied: a plain model file "
                    "has one version (serve from a model store with --store URL)",
                    ignored_events));
  else if (ignored_events)
    info_.warnings.push_back(fmt::format("{} events in the trace were not applied (not a model_update of '{}')",
                                         ignored_events, loaded_.source->name()));
}

// The collector grouped latencies by update phase; the update manager knows the rest.
void RunSession::merge_update_reports(RunOutcome& outcome, const std::vector<UpdateReport>& reports) {
  outcome.summary.updates.resize(reports.size());
  for (std::size_t k = 0; k < reports.size(); ++k) {
    UpdateReport& u = outcome.summary.updates[k];
    LatencyStats before = u.before, during = u.during, after = u.after;
    u = reports[k];
    u.before = before;
    u.during = during;
    u.after = after;
    if (!u.error.empty())
      outcome.summary.info.warnings.push_back(
          fmt::format("update to {}@{} failed, {} kept serving: {}", u.model, u.to_version, u.from_version, u.error));
  }
}

void RunSession::commit(RunOutcome& outcome) {
  try {
    detail::commit_run(*collector_, outcome, config_.output.out_dir);
  } catch (const Error& e) {
    if (e.code() != ExitCode::runtime) throw;
    outcome.files.clear();  // the commit writes all of them or none
    outcome.reports_error = e.what();
  }
}

}  // namespace

RunOutcome run_replay(const RunConfig& config) {
  // A failed run leaves no report, nor the --out folder it created for them (only what it created).
  try {
    return RunSession(config).run();
  } catch (...) {
    if (!config.output.out_dir.empty()) output::remove_created(config.output.out_dir);
    throw;
  }
}

}  // namespace inferprof
