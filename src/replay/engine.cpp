#include "replay/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "replay/model_updates.hpp"

namespace inferprof::detail {

namespace {
// Served and recomputed outputs of the same deterministic computation agree
// to the bit on one machine; the tolerance only absorbs float reassociation.
constexpr double kVerifyTolerance = 1e-4;

// Deterministic sample of the hits to verify: the same requests every run.
bool sampled(std::uint64_t seq, double fraction) {
  if (fraction >= 1) return true;
  std::uint64_t x = seq * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return static_cast<double>(x >> 11) * 0x1.0p-53 < fraction;
}
}  // namespace

CacheState::~CacheState() {
  // The run's keys are deleted when it ends, also when it fails: a shared
  // Redis keeps nothing of it.
  for (auto& tier : owned) {
    if (keep_remote && tier->spec().backend == TierBackend::redis) continue;
    try {
      tier->clear();
    } catch (...) {
    }
  }
  remote_cleanup.release();
  owned.clear();  // close LMDB environments before removing their folders
  for (auto& dir : scratch)
    dir.remove();
}

std::vector<CacheTierReport> CacheState::reports() const {
  std::vector<CacheTierReport> out;
  for (std::size_t i = 0; i < owned.size(); ++i) {
    CacheTierReport report;
    report.spec = owned[i]->spec();
    report.where = where[i];
    report.stats = owned[i]->stats();
    out.push_back(report);
  }
  return out;
}

CacheState build_cache_state(const std::vector<TierSpec>& tiers, const std::string& name_space, bool keep_remote) {
  CacheState t;
  t.keep_remote = keep_remote;
  for (const TierSpec& spec : tiers) {
    std::unique_ptr<CacheTier> tier;
    if (spec.backend == TierBackend::memory) {
      tier = make_memory_tier(spec);
      t.where.push_back("in-process");
    } else if (spec.backend == TierBackend::redis) {
      auto backend = make_redis_backend(spec.location, name_space);
      if (!t.keep_remote) {
        t.remote.emplace_back(spec.location, name_space);
        t.remote_cleanup = lifecycle::Cleanup([remote = t.remote] {
          for (const auto& [url, ns] : remote) {
            try {
              make_redis_backend(url, ns)->clear();
            } catch (...) {  // unreachable now: its keys expire (redis_backend.cpp)
            }
          }
        });
      }
      t.where.push_back(backend->describe());
      tier = make_backend_tier(spec, std::move(backend));
    } else {
      std::string path = spec.location;
      if (path.empty()) {
        // No path configured: a private folder for this state alone.
        t.scratch.emplace_back("inferprof-l3");
        path = t.scratch.back().path();
      }
      auto backend = make_lmdb_backend(path, name_space);
      t.where.push_back(backend->describe());
      tier = make_backend_tier(spec, std::move(backend));
    }
    if (!(t.keep_remote && spec.backend == TierBackend::redis)) tier->clear();  // a cold, empty start
    switch (spec.tier) {
      case CacheLevel::l1:
        t.set.l1 = tier.get();
        break;
      case CacheLevel::l2:
        t.set.l2 = tier.get();
        break;
      case CacheLevel::l3:
        t.set.l3 = tier.get();
        break;
    }
    t.owned.push_back(std::move(tier));
  }
  return t;
}

Verifier::Verifier(bool caches, double fraction) {
  report_.enabled = caches && fraction > 0;
  report_.fraction = fraction;
}

bool Verifier::wants(std::uint64_t seq) const {
  return report_.enabled && sampled(seq, report_.fraction);
}

void Verifier::check(RequestServer& server, const TraceRequest& request, const RequestRecord& record,
                     const Blob& served, const ModelHandle& model) {
  // A computed result is checked when it came out of a batch (its rows of a batched forward).
  if (record.batch <= 1 && (record.cache_outcome == CacheOutcome::miss || record.cache_outcome == CacheOutcome::none))
    return;
  Nanos v0 = now_ns();
  double diff = server.verify(request, served, model);
  spent_ns_.fetch_add(now_ns() - v0, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  ++report_.checked;
  report_.max_abs_diff = std::max(report_.max_abs_diff, diff);
  if (!(diff <= kVerifyTolerance)) {
    ++report_.mismatches;
    if (report_.examples.size() < 5)
      report_.examples.push_back(fmt::format("request {} ({}): max abs difference {:.6g}", request.id,
                                             outcome_name(record.cache_outcome), diff));
  }
}

VerifyReport Verifier::report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return report_;
}

void serve_step(RequestServer& server, const CacheSet* caches, ModelUpdates* updates, Verifier* verifier,
                const ServeJob& job, RequestRecord& r) {
  const TraceRequest& request = *job.request;
  r.reset();
  r.seq = job.seq;
  r.id = request.id;
  r.line = job.line;
  r.key = request.key;
  r.worker = job.worker;
  if (job.due != 0) r.arrival = job.due;
  r.begin(job.cpu);  // start, and (sampled) the thread CPU clock
  const bool check = verifier && verifier->wants(job.seq);
  Blob served;
  ModelHandle use;
  if (updates) use = updates->begin_request(r, request);
  // Verified against the version that served it: pin it, so a swap in between cannot differ.
  if (check && !use) use = server.active();
  server.serve(request, r, caches, check ? &served : nullptr, use);
  r.finish();
  if (updates) updates->end_request(r, request);
  // Outside the measured request: recompute without caches and compare.
  if (check) verifier->check(server, request, r, served, use);
}

void warm_up(RequestServer& server, const TraceRequest& request, int times, const std::function<bool()>& stop,
             const std::function<void(int, double)>& each, WarmUpFastest* fastest) {
  RequestRecord r;
  auto serve = [&](bool cpu) {
    r.reset();
    r.begin(cpu);
    r.arrival = r.start;
    server.serve(request, r, nullptr, nullptr, nullptr);
    r.finish();
  };
  auto keep_fastest = [&](bool first) {
    if (fastest && (first || r.total() < fastest->with_cpu.total())) std::swap(fastest->with_cpu, r);
  };
  int served = 0;
  for (; served < times && !stop(); ++served) {
    serve(true);
    if (each) each(served + 1, static_cast<double>(r.total()) / 1e3);
    keep_fastest(served == 0);
  }
  // A few warm-ups leave a short request well above its steady state (the
  // third MLP request takes ~1.5x a later one), and CPU sampling is
  // calibrated from the fastest: serve it a little longer, up to kSettle
  // times or kSettleNs, when it is short enough for sampling to matter at
  // all, every other time without the CPU clock, so that the two fastest
  // tell what the reads cost.
  constexpr int kSettle = 64;
  constexpr Nanos kSettleBelow = 1'000'000, kSettleNs = 2'000'000;
  if (!fastest || served == 0 || fastest->with_cpu.total() >= kSettleBelow) return;
  const Nanos until = now_ns() + kSettleNs;
  for (int i = 0; i < kSettle && now_ns() < until && !stop(); ++i) {
    const bool cpu = i % 2 == 1;
    serve(cpu);
    if (cpu)
      keep_fastest(false);
    else if (fastest->without_cpu == 0 || r.total() < fastest->without_cpu)
      fastest->without_cpu = r.total();
  }
}

CpuSampling calibrate_cpu_sampling(const WarmUpFastest& warmup, std::uint32_t forced) {
  CpuSampling s;
  s.read_ns = measure_cpu_clock_read_ns();
  s.clock = thread_cpu_clock_name();
  if (forced >= 1) {
    s.every = forced;
    return s;
  }
  const RequestRecord& with_cpu = warmup.with_cpu;
  if (!with_cpu.cpu_measured()) return s;  // no warm-up to go by: every request
  // begin() reads once, every stage's close once; opens and finish() reuse those.
  int reads = 1;
  for (const Span& span : with_cpu.spans)
    if (span.cpu >= 0) ++reads;
  Nanos cost = static_cast<Nanos>(s.read_ns * reads);
  Nanos request = with_cpu.total() - cost;
  if (warmup.without_cpu > 0) {
    cost = std::max(cost, with_cpu.total() - warmup.without_cpu);
    request = warmup.without_cpu;
  }
  s.every = cpu_sample_every(static_cast<double>(cost), 1, std::max<Nanos>(1, request));
  return s;
}

bool SkippedRequests::absorb(const Error& e) {
  if (!enabled_ || e.code() != ExitCode::bad_input) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  ++count_;
  if (examples_.size() < 5) examples_.emplace_back(e.what());
  return true;
}

std::uint64_t SkippedRequests::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return count_;
}

std::vector<std::string> SkippedRequests::examples() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return examples_;
}

void RequestSeries::append(RequestSeries&& more) {
  const auto add = [](std::vector<double>& to, const std::vector<double>& from) {
    to.insert(to.end(), from.begin(), from.end());
  };
  add(latency_us, more.latency_us);
  add(cpu_us, more.cpu_us);
  outcome.insert(outcome.end(), more.outcome.begin(), more.outcome.end());
  for (std::size_t s = 0; s < kStageCount; ++s) {
    add(stage_us[s], more.stage_us[s]);
    add(stage_cpu_us[s], more.stage_cpu_us[s]);
  }
  op_names = std::move(more.op_names);
  op_us.resize(op_names.size());
  op_cpu_us.resize(op_names.size());
  for (std::size_t k = 0; k < op_names.size() && k < more.op_us.size(); ++k) {
    add(op_us[k], more.op_us[k]);
    add(op_cpu_us[k], more.op_cpu_us[k]);
  }
}

const std::vector<double>* RequestSeries::named(const std::string& name, bool on_cpu) const {
  if (name == "total") return on_cpu ? &cpu_us : &latency_us;
  const auto s = std::find(kStageNames.begin(), kStageNames.end(), name);
  if (s != kStageNames.end()) {
    const auto i = static_cast<std::size_t>(s - kStageNames.begin());
    return on_cpu ? &stage_cpu_us[i] : &stage_us[i];
  }
  const auto k = std::find(op_names.begin(), op_names.end(), name);
  if (k == op_names.end()) return nullptr;
  const auto i = static_cast<std::size_t>(k - op_names.begin());
  return on_cpu ? &op_cpu_us[i] : &op_us[i];
}

std::uint64_t drive_lockstep(RequestServer& server, std::vector<LockstepLane>& lanes,
                             const std::function<bool(TraceRequest&, std::uint64_t&)>& next,
                             const std::function<bool()>& stop, std::uint64_t limit, SkippedRequests* skipped,
                             const CpuSampling& cpu) {
  const std::size_t n = lanes.size();
  if (n == 0) return 0;
  // Served under every lane first, then committed: a request skipped in one
  // lane leaves no trace in the others.
  std::vector<RequestRecord> records(n);
  TraceRequest request;
  std::uint64_t line = 0, seq = 0;
  while ((limit == 0 || seq < limit) && !stop() && next(request, line)) {
    ServeJob job{&request, seq, line, 0, 0};
    job.cpu = cpu.wants(seq);
    try {
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t l = (seq + k) % n;
        serve_step(lanes[l].server ? *lanes[l].server : server, lanes[l].caches, nullptr, lanes[l].verifier, job,
                   records[l]);
      }
    } catch (const Error& e) {
      if (skipped && skipped->absorb(e)) continue;
      throw;
    }
    const std::uint64_t input = std::hash<std::string>{}(request.key);  // once: the same in every lane
    for (std::size_t l = 0; l < n; ++l) {
      LockstepLane& lane = lanes[l];
      const RequestRecord& record = records[l];
      RequestSeries& out = lane.series;
      out.latency_us.push_back(static_cast<double>(record.total()) / 1e3);
      out.outcome.push_back(record.cache_outcome);
      out.cpu_us.push_back(record.cpu_measured() ? static_cast<double>(record.cpu_total()) / 1e3
                                                 : std::numeric_limits<double>::quiet_NaN());
      lane.input.push_back(input);
      for (std::size_t s = 0; s < kStageCount; ++s) {
        out.stage_us[s].push_back(static_cast<double>(record.stage[s]) / 1e3);
        out.stage_cpu_us[s].push_back(record.cpu_measured() ? static_cast<double>(record.stage_cpu[s]) / 1e3
                                                            : std::numeric_limits<double>::quiet_NaN());
      }
      for (std::size_t k = 0; k < out.op_us.size(); ++k) {
        const bool ran = k < record.preprocess_op.size();  // a cache hit runs no preprocessing: 0
        out.op_us[k].push_back(ran ? static_cast<double>(record.preprocess_op[k]) / 1e3 : 0);
        out.op_cpu_us[k].push_back(!record.cpu_measured() ? std::numeric_limits<double>::quiet_NaN()
                                   : ran                  ? static_cast<double>(record.preprocess_op_cpu[k]) / 1e3
                                                          : 0);
      }
      lane.busy_ns += record.total();
      if (lane.collector) lane.collector->add(record);
    }
    ++seq;
  }
  return seq;
}

}  // namespace inferprof::detail
