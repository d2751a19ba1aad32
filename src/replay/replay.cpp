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
#include "replay/bounded_queue.hpp"
#include "replay/engine.hpp"
#include "replay/machine.hpp"
#include "replay/model_updates.hpp"

namespace inferprof {
namespace {

// Open loop: how long after the start a record at `ts_ms` is due. A double past
// the int64 range would make the cast undefined (and the replay wait forever).
Nanos due_after(double ts_ms, double t0, double speed, const std::string& trace, std::uint64_t line) {
  const double ns = (ts_ms - t0) * 1e6 / speed;
  if (!(std::fabs(ns) < 9.2e18))
    throw bad_input(
        at_line(trace, line,
                fmt::format("'ts_ms' {} at --speed {} is more than 290 years from the first request", ts_ms, speed)));
  return static_cast<Nanos>(ns);
}

namespace fs = std::filesystem;
using detail::BoundedQueue;

struct Job {
  bool event = false;   // a model update to announce when a worker reaches it
  std::string version;  // (event) the version it publishes
  TraceRequest request;
  std::uint64_t line = 0;
  std::uint64_t seq = 0;
  Nanos due = 0;  // open loop: when it arrives; closed loop: 0 (arrives when taken)
};

// Records travel to the collector thread in batches, so a worker pays one
// queue operation per kBatch requests and none of the aggregation work.
constexpr std::size_t kBatch = 64;
using Batch = std::vector<RequestRecord>;

// Sleeps most of the way, then spins: nanosleep alone overshoots by tens of
// µs, which would show up as phantom queueing in open-loop replays. False
// when an interrupt came first: what it waited for is not released.
bool wait_until(Nanos due) {
  constexpr Nanos kSpin = 200'000;
  constexpr Nanos kSlice = 50'000'000;  // how soon a sleeping worker sees an interrupt
  for (Nanos now = now_ns(); due - now > kSpin; now = now_ns()) {
    if (lifecycle::interrupted()) return false;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(kSlice, due - now - kSpin)));
  }
  while (now_ns() < due) {
  }
  return true;
}

// First error wins; everything else stops.
class FailureLatch {
 public:
  void set(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = e;
    failed_ = true;
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  void rethrow() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

}  // namespace

std::vector<TierSpec> resolve_tiers(const Profile& profile, const std::string& which,
                                    const std::vector<TierSpec>& overrides, const std::string& redis_url,
                                    const std::string& scratch_dir) {
  std::vector<TierSpec> out;
  if (which.empty() || which == "none") return out;
  std::vector<std::string> names;
  std::string part;
  for (std::size_t i = 0; i <= which.size(); ++i) {
    if (i == which.size() || which[i] == ',' || which[i] == '+') {
      if (part != "l1" && part != "l2" && part != "l3")
        throw bad_input(
            fmt::format("cache configuration '{}': expected none or tiers l1, l2, l3 joined by commas "
                        "(e.g. l1,l2)",
                        which));
      if (std::find(names.begin(), names.end(), part) != names.end())
        throw bad_input(fmt::format("cache configuration '{}' names {} twice", which, part));
      names.push_back(part);
      part.clear();
    } else {
      part += which[i];
    }
  }
  for (const char* tier : {"l1", "l2", "l3"}) {
    if (std::find(names.begin(), names.end(), tier) == names.end()) continue;
    const std::optional<TierSpec>& configured = std::string(tier) == "l1"   ? profile.cache.l1
                                                : std::string(tier) == "l2" ? profile.cache.l2
                                                                            : profile.cache.l3;
    TierSpec spec;
    if (configured) {
      spec = *configured;
    } else {
      spec.tier = tier;
      spec.policy = Policy::lru;
      spec.max_entries = spec.tier == "l1" ? 1000 : spec.tier == "l2" ? 100000 : 0;
      spec.backend = spec.tier == "l3" ? "lmdb" : "memory";
    }
    // --tier sets the policy and limits; where the tier lives stays as configured.
    for (const TierSpec& o : overrides)
      if (o.tier == spec.tier) {
        spec.policy = o.policy;
        spec.max_entries = o.max_entries;
        spec.max_bytes = o.max_bytes;
        spec.ttl_s = o.ttl_s;
      }
    if (!redis_url.empty() && (spec.tier == "l2" || (spec.tier == "l3" && !profile.cache.l3))) {
      spec.backend = "redis";
      spec.location = redis_url;
    }
    if (spec.backend == "redis" && spec.location.empty())
      throw bad_input(
          fmt::format("{} is on Redis but no URL is given: use --redis URL or INFERPROF_REDIS_URL, or "
                      "url = \"redis://host:port\" in [cache.{}]",
                      spec.tier, spec.tier));
    if (spec.backend == "lmdb" && spec.location.empty() && !scratch_dir.empty())
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
  for (const char* f : {"summary.json", "requests.csv", "stages.csv", "stacks.folded", "flamegraph.svg", "trace.json"})
    outcome.files.push_back((fs::path(out_dir) / f).string());
}

}  // namespace detail

RunOutcome run_replay(const RunConfig& config) {
  const Profile& profile = config.profile;
  detail::check_replay_config(config);
  if (!config.output.out_dir.empty()) ensure_output_dir(config.output.out_dir);
  // Killed by a signal, the run's half-written reports go with it.
  lifecycle::Cleanup temp_files;
  if (!config.output.out_dir.empty())
    temp_files = lifecycle::Cleanup([dir = config.output.out_dir] { lifecycle::remove_own_temp_files(dir); });
  ReplayObserver* observer = config.output.observer.get();
  ReplayCounters counters;  // before `finished`: the observer lets go of them there
  const detail::ObserverFinish finished{observer};

  RunInfo info = detail::describe_replay(config);

  // Validate the trace before paying for the model load. The reader's
  // buffers are allocated here, before the clock starts.
  TraceReader reader(config.replay.trace_path,
                     TraceReader::Options{config.replay.skip_invalid, 1 << 20, config.replay.csv});
  // Records read before the producer starts (events before the first request, then it), replayed first.
  std::deque<TraceRecord> read_early = detail::read_trace_head(config, reader, info);
  const TraceRequest warmup_request = read_early.back().request;

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
  std::uint64_t ignored_events = 0;
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

  FailureLatch failure;
  BoundedQueue<Job> jobs(256 * static_cast<std::size_t>(config.replay.concurrency));
  BoundedQueue<Batch> to_collector(64);
  BoundedQueue<Batch> recycled(64);
  std::atomic<std::uint64_t>& done = counters.done;
  std::uint64_t skipped = 0;
  std::vector<std::string> skipped_examples;
  detail::SkippedRequests skipped_requests(config.replay.skip_invalid);
  auto abort_all = [&] {
    jobs.abort();
    to_collector.abort();
  };
  // A first SIGINT/SIGTERM releases no more requests: the queued ones are
  // dropped, sleeping workers wake (wait_until), the ones in flight finish and
  // reach the collector, which is never aborted for it.
  std::atomic<bool> cut_short{false};
  std::optional<lifecycle::OnInterrupt> stop_hook;
  stop_hook.emplace([&] {
    cut_short = true;
    jobs.abort();
  });

  // Start gate: every worker warms up on its own thread (thread-local state in
  // libtorch is per thread), then waits; the replay starts for all at `epoch`.
  std::mutex gate_mutex;
  std::condition_variable gate_cv;
  int warmed = 0;
  bool gate_open = false;
  Nanos epoch = 0;
  std::unique_ptr<Collector> collector;
  std::vector<std::thread> workers;
  std::thread producer, collector_thread;
  auto open_gate = [&] {
    {
      std::lock_guard<std::mutex> lock(gate_mutex);
      gate_open = true;
    }
    gate_cv.notify_all();
  };
  // A thread that cannot start (a limit on threads or memory under
  // --concurrency 5000) fails the run with one line, after the threads
  // already running have stopped: a joinable std::thread must never be destroyed.
  auto cannot_start = [&](const std::system_error& e, const std::string& what) {
    failure.set(std::current_exception());
    abort_all();
    open_gate();
    for (auto& t : workers)
      t.join();
    if (producer.joinable()) producer.join();
    if (collector_thread.joinable()) collector_thread.join();
    return runtime_failure(
        fmt::format("cannot start {}: {} (lower --concurrency, or raise the limit on threads "
                    "and memory)",
                    what, e.code().message()));
  };
  if (observer) observer->phase(ReplayObserver::Phase::warming_up);
  for (int w = 0; w < config.replay.concurrency; ++w) {
    auto work = [&, w] {
      try {
        {
          // Warm-up: the first request's input, served N times, never measured.
          detail::warm_up(
              server, warmup_request, info.warmup, [&] { return failure.failed() || lifecycle::interrupted(); },
              [&](int done_warmups, double us) {
                if (w != 0) return;
                info.warmup_us.push_back(us);
                if (observer) observer->warmup(done_warmups, info.warmup);
              });
          std::unique_lock<std::mutex> lock(gate_mutex);
          ++warmed;
          gate_cv.notify_all();
          gate_cv.wait(lock, [&] { return gate_open; });
        }
        if (failure.failed() || !wait_until(epoch)) return;
        Batch batch(kBatch);
        std::size_t used = 0;
        Job job;
        while (jobs.pop(job)) {
          if (job.event) {
            if (job.due != 0 && !wait_until(job.due)) break;
            if (!channel)
              updates->announce(job.version);
            else if (config.replica.index <= 0)
              channel->publish(ModelRef{source->name(), job.version});
            continue;
          }
          if (job.due != 0 && !wait_until(job.due)) break;  // interrupted before it arrived: never released
          try {
            detail::serve_step(
                server, caches, updates ? &*updates : nullptr, &verifier,
                detail::ServeJob{&job.request, job.seq, job.line, job.due, static_cast<std::uint32_t>(w)}, batch[used]);
          } catch (const Error& e) {
            if (skipped_requests.absorb(e)) continue;
            throw;
          }
          done.fetch_add(1, std::memory_order_relaxed);
          if (++used == kBatch) {
            if (!to_collector.push(std::move(batch))) return;
            if (!recycled.try_pop(batch)) batch = Batch(kBatch);
            used = 0;
          }
        }
        batch.resize(used);
        if (used > 0) to_collector.push(std::move(batch));
      } catch (...) {
        failure.set(std::current_exception());
        abort_all();
        std::lock_guard<std::mutex> lock(gate_mutex);
        ++warmed;
        gate_cv.notify_all();
      }
    };
    try {
      workers.emplace_back(work);
    } catch (const std::system_error& e) {
      throw cannot_start(e, fmt::format("replay worker {} of {}", w + 1, config.replay.concurrency));
    }
  }

  {
    std::unique_lock<std::mutex> lock(gate_mutex);
    gate_cv.wait(lock, [&] { return warmed == config.replay.concurrency; });
  }
  // A replica: tell the parent it is ready and wait for the common start.
  if (config.replica.on_ready && !failure.failed()) {
    try {
      config.replica.on_ready();
    } catch (...) {
      failure.set(std::current_exception());
      abort_all();
    }
  }
  try {
    CollectorOptions copts;
    copts.out_dir = config.output.out_dir;
    copts.trace_json_max_bytes = config.output.trace_json_max_bytes;
    copts.copies_applicable = info.copies_applicable;
    collector = std::make_unique<Collector>(copts);
  } catch (...) {
    failure.set(std::current_exception());
    abort_all();
  }
  // Everything is set up before the clock starts; the lead covers starting the
  // producer and collector threads and waking the workers, so none of it is
  // charged to the first requests (in open loop it would show as queueing).
  epoch = now_ns() + 2'000'000;
  if (collector) collector->set_epoch(epoch);
  if (updates) updates->set_epoch(epoch);
  if (config.replay.limit > 0) counters.estimate = config.replay.limit;

  auto produce = [&] {
    try {
      TraceRecord rec;
      auto next_record = [&] {
        if (read_early.empty()) return reader.next(rec);
        rec = std::move(read_early.front());
        read_early.pop_front();
        return true;
      };
      std::uint64_t seq = 0;
      std::uint64_t nth = 0;  // requests in the trace, this replica's or not
      std::optional<double> t0;
      Nanos last_due = 0;
      bool pushed_all = true;
      while (!failure.failed() && (config.replay.limit == 0 || seq < config.replay.limit) && next_record()) {
        if (rec.kind == TraceRecord::Kind::event) {
          const TraceEvent& e = rec.event;
          if (!updates || e.type != "model_update" || e.model != source->name()) {
            ++ignored_events;
            continue;
          }
          Job job;
          job.event = true;
          job.version = e.version;
          job.line = rec.line;
          // Open loop: it happens at its ts_ms (or, without one, right after the request before it).
          if (config.replay.drive == Drive::open_loop) {
            if (e.ts_ms && !t0) t0 = *e.ts_ms;
            job.due = e.ts_ms
                          ? epoch + due_after(*e.ts_ms, *t0, config.replay.speed, config.replay.trace_path, rec.line)
                          : last_due;
          }
          // A version a store could hold ("v2"): an empty or path-like one is bad input here.
          parse_model_ref(e.model + "@" + e.version,
                          fmt::format("{}:{}: model_update", config.replay.trace_path, rec.line));
          updates->read_ahead(e.version,
                              job.due ? job.due - static_cast<Nanos>(config.store.preload_lead_ms * 1e6) : 0);
          if (!jobs.push(std::move(job))) {
            pushed_all = false;
            break;
          }
          continue;
        }
        if (config.replica.count > 1) {
          const std::uint64_t n =
              config.replica.split == Split::hash ? XXH3_64bits(rec.request.key.data(), rec.request.key.size()) : nth;
          ++nth;
          if (n % static_cast<std::uint64_t>(config.replica.count) != static_cast<std::uint64_t>(config.replica.index))
            continue;
        }
        Job job;
        job.line = rec.line;
        job.seq = seq++;
        if (config.replay.drive == Drive::open_loop) {
          if (!rec.request.ts_ms)
            throw bad_input(at_line(config.replay.trace_path, rec.line,
                                    "open-loop replay needs 'ts_ms' on every request (this one has none)"));
          if (!t0) t0 = *rec.request.ts_ms;
          job.due = epoch + due_after(*rec.request.ts_ms, *t0, config.replay.speed, config.replay.trace_path, rec.line);
          last_due = job.due;
        }
        job.request = std::move(rec.request);
        if (!jobs.push(std::move(job))) {
          pushed_all = false;
          break;
        }
        // The total from how far into the file these requests reached (the
        // progress line's "of ~N"); exact once the reader reaches the end.
        if ((seq & 1023) == 0 && reader.bytes() > 0 && info.trace_bytes > 0) {
          auto estimate = static_cast<std::uint64_t>(static_cast<double>(seq) * static_cast<double>(info.trace_bytes) /
                                                     static_cast<double>(reader.bytes()));
          if (config.replay.limit > 0) estimate = std::min<std::uint64_t>(estimate, config.replay.limit);
          counters.estimate = std::max(estimate, seq);
        }
      }
      if (pushed_all && !failure.failed()) counters.total = seq;
      skipped = reader.skipped();
      skipped_examples = reader.skipped_examples();
      jobs.close();
    } catch (...) {
      failure.set(std::current_exception());
      abort_all();
    }
  };
  auto collect = [&] {
    try {
      Batch batch;
      while (to_collector.pop(batch)) {
        for (const auto& r : batch)
          collector->add(r);
        if (batch.size() == kBatch) recycled.try_push(std::move(batch));
      }
    } catch (...) {
      failure.set(std::current_exception());
      abort_all();
    }
  };
  try {
    producer = std::thread(produce);
    collector_thread = std::thread(collect);
  } catch (const std::system_error& e) {
    throw cannot_start(e, "the trace reader and the collector");
  }
  open_gate();
  if (observer) {
    observer->phase(ReplayObserver::Phase::replaying);
    observer->replaying(counters);
  }

  producer.join();
  for (auto& t : workers)
    t.join();
  const Nanos replay_end = now_ns();
  to_collector.close();
  collector_thread.join();
  stop_hook.reset();  // an interrupt from here on cuts nothing short
  failure.rethrow();
  if (cut_short) info.interrupted_by = lifecycle::interrupt_name();
  if (done.load() == 0 && cut_short && config.replica.count <= 1)
    throw Error(static_cast<ExitCode>(lifecycle::interrupted_exit_code()),
                fmt::format("interrupted by {} before any request completed: nothing to report", info.interrupted_by));

  // A replica may get no requests (a hash split over few keys): an empty report, not an error.
  skipped += skipped_requests.count();
  for (std::string& e : skipped_requests.examples())
    if (skipped_examples.size() < 10) skipped_examples.push_back(std::move(e));
  if (done.load() == 0 && config.replica.count <= 1)
    throw bad_input(fmt::format("{}: the trace has no valid requests{}", config.replay.trace_path,
                                skipped ? fmt::format(" ({} invalid requests skipped)", skipped) : ""));
  // Verification stalls the workers between requests; take it out of the replay time.
  info.wall_s = static_cast<double>(replay_end - epoch - verifier.spent_ns() / config.replay.concurrency) / 1e9;
  info.skipped_invalid = skipped;
  info.skipped_examples = skipped_examples;
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
  detail::commit_run(*collector, outcome, config.output.out_dir);
  return outcome;
}

}  // namespace inferprof
