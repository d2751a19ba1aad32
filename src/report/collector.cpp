// The Collector: per-stage histograms, folded-stack totals by span path, op
// statistics, and the streamed requests.csv / trace.json temporary files.
#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>

#include "base/histogram.hpp"
#include "base/output_owner.hpp"
#include "base/text.hpp"
#include "inferprof/printable.hpp"
#include "inferprof/report.hpp"
#include "report/request_sinks.hpp"
#include "report/streams.hpp"

namespace inferprof {
namespace {

using report::Histogram;
using report::TempFile;

constexpr std::size_t kOverhead = static_cast<std::size_t>(Stage::overhead);
constexpr std::size_t kMaxFailedExamples = 5;
constexpr std::size_t kTopOps = 25;

// One node of the span-path trie; node 0 is the request root.
// Sums of ns are NanoSum (128 bits): a merge feeds rows of up to 1e15 ns, as many as its files hold.
using report::NanoSum;

struct PathNode {
  std::uint32_t parent = 0;
  std::uint32_t name = kRequestNameId;
  NanoSum self_ns = 0;
};

struct OpAcc {
  std::uint64_t calls = 0;
  NanoSum self_ns = 0;
  NanoSum total_ns = 0;
};

// Per-thread working space for add(), so the part done outside the lock
// allocates nothing once warm.
struct Scratch {
  std::vector<std::int32_t> parent;
  std::vector<Nanos> child_ns;
  std::vector<std::uint8_t> under_compute;
  std::vector<std::uint32_t> path;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

bool is_copy(std::size_t stage) {
  return stage == static_cast<std::size_t>(Stage::h2d) || stage == static_cast<std::size_t>(Stage::d2h);
}

LatencyStats latency_of(const Histogram& h) {
  LatencyStats l;
  l.count = h.count();
  l.mean_us = h.count() ? static_cast<double>(h.sum()) / static_cast<double>(h.count()) / 1e3 : 0;
  l.p50_us = h.quantile(0.50) / 1e3;
  l.p99_us = h.quantile(0.99) / 1e3;
  l.max_us = static_cast<double>(h.max()) / 1e3;
  return l;
}

// CPU figures of a stage from its CPU histogram and the wall time of the same requests.
void add_cpu(StageStats& s, const Histogram& cpu, NanoSum wall_ns, std::uint64_t requests) {
  if (requests == 0) return;
  s.cpu = true;
  s.cpu_mean_us = static_cast<double>(cpu.sum()) / static_cast<double>(requests) / 1e3;
  s.cpu_p50_us = cpu.quantile(0.50) / 1e3;
  s.cpu_p99_us = cpu.quantile(0.99) / 1e3;
  s.off_cpu =
      wall_ns > 0 ? std::clamp(1.0 - static_cast<double>(cpu.sum()) / static_cast<double>(wall_ns), 0.0, 1.0) : 0;
}

StageStats stats_of(const Histogram& h, std::uint64_t count, std::uint64_t requests) {
  StageStats s;
  s.count = count;
  s.total_us = static_cast<double>(h.sum()) / 1e3;
  s.mean_us = requests ? s.total_us / static_cast<double>(requests) : 0;
  s.p50_us = h.quantile(0.50) / 1e3;
  s.p90_us = h.quantile(0.90) / 1e3;
  s.p99_us = h.quantile(0.99) / 1e3;
  s.max_us = static_cast<double>(h.max()) / 1e3;
  s.min_us = static_cast<double>(h.min()) / 1e3;
  return s;
}

// The batches by size from the requests computed in a batch of each size.
BatchingStats batching_of(const std::vector<std::uint64_t>& batch_requests, int max_batch) {
  BatchingStats b;
  b.enabled = true;
  b.of_size.assign(static_cast<std::size_t>(max_batch) + 1, 0);
  for (std::size_t k = 1; k < batch_requests.size(); ++k) {
    b.computed += batch_requests[k];
    // Every request of a batch finishes with it; a batch cut by a failure, or by
    // --measure-after's boundary, counts as one.
    const std::uint64_t batches = (batch_requests[k] + k - 1) / k;
    if (k < b.of_size.size()) b.of_size[k] = batches;
    b.batches += batches;
  }
  return b;
}

// CollectorOptions::queue_samples: a served request's place in the queue.
struct ServedRequest {
  Nanos arrival, start, end;
  bool measured;
};

// The served requests in arrival order, times from the first arrival, in µs.
std::vector<QueueSample> queue_samples_of(std::vector<ServedRequest> served) {
  std::vector<QueueSample> out;
  if (served.empty()) return out;
  std::stable_sort(served.begin(), served.end(), [](const auto& a, const auto& b) { return a.arrival < b.arrival; });
  const Nanos first = served.front().arrival;
  out.reserve(served.size());
  for (const ServedRequest& q : served)
    out.push_back(QueueSample{static_cast<double>(q.arrival - first) / 1000,
                              q.start > 0 && q.end > q.start ? static_cast<double>(q.end - q.start) / 1000 : 0,
                              q.measured});
  return out;
}

// The kTopOps operators with the most self time, ties by name.
std::vector<OpStats> top_ops_of(const std::vector<OpAcc>& ops, double compute_us) {
  std::vector<std::uint32_t> ids;
  for (std::uint32_t id = 0; id < ops.size(); ++id)
    if (ops[id].calls > 0) ids.push_back(id);
  auto& names = NameTable::global();
  std::sort(ids.begin(), ids.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (ops[a].self_ns != ops[b].self_ns) return ops[a].self_ns > ops[b].self_ns;
    return names.name(a) < names.name(b);
  });
  if (ids.size() > kTopOps) ids.resize(kTopOps);
  std::vector<OpStats> out;
  for (std::uint32_t id : ids) {
    const OpAcc& op = ops[id];
    OpStats o;
    o.name = std::string(names.name(id));
    o.calls = op.calls;
    o.self_us = static_cast<double>(op.self_ns) / 1e3;
    o.total_us = static_cast<double>(op.total_ns) / 1e3;
    o.share_of_compute = compute_us > 0 ? o.self_us / compute_us : 0;
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

struct Collector::Impl {
  explicit Impl(CollectorOptions o)
      : options(std::move(o)),
        part_hist(options.preprocess_ops.size()),
        part_cpu_hist(options.preprocess_ops.size()),
        part_count(options.preprocess_ops.size()),
        part_cpu_wall(options.preprocess_ops.size()) {
    paths.push_back(PathNode{});
  }

  std::uint32_t path_of(std::uint32_t parent, std::uint32_t name) {
    const std::uint64_t key = (static_cast<std::uint64_t>(parent) << 32) | name;
    auto [it, inserted] = path_ids.try_emplace(key, static_cast<std::uint32_t>(paths.size()));
    if (inserted) paths.push_back(PathNode{parent, name, 0});
    return it->second;
  }

  // Stage, part and total times of one request; `present`: the stages it has a span of. Under the lock.
  void record_times(const RequestRecord& r, unsigned present) {
    for (std::size_t i = 0; i < kStageCount; ++i) {
      stage_hist[i].record(r.stage[i]);
      if (i == kOverhead || r.stage[i] != 0 || (present & (1u << i)) != 0) ++stage_count[i];
    }
    // A part the request did not run (a cache hit skips preprocessing) counts as 0, as a stage does.
    auto part = [](const std::vector<Nanos>& v, std::size_t k) { return k < v.size() ? v[k] : 0; };
    for (std::size_t k = 0; k < part_hist.size(); ++k) {
      part_hist[k].record(part(r.preprocess_op, k));
      if (part(r.preprocess_op, k) != 0) ++part_count[k];
    }
    total_hist.record(r.total());
    if (!r.cpu_measured()) return;
    ++cpu_requests;
    for (std::size_t i = 0; i < kStageCount; ++i) {
      if (i == static_cast<std::size_t>(Stage::queue)) continue;
      stage_cpu_hist[i].record(r.stage_cpu[i]);
      stage_cpu_wall[i] += r.stage[i];
    }
    for (std::size_t k = 0; k < part_hist.size(); ++k) {
      part_cpu_hist[k].record(part(r.preprocess_op_cpu, k));
      part_cpu_wall[k] += part(r.preprocess_op, k);
    }
    total_cpu_hist.record(r.cpu_total());
    // The root's CPU time covers start..end; the queue before it is off the CPU by definition.
    total_cpu_wall += r.end - r.start;
  }

  // Reservoir sample of request totals (Vitter's algorithm R). Under the lock, after ++requests.
  void sample_total(double total_us) {
    if (sample.size() < kSample) {
      sample.push_back(total_us);
      return;
    }
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    const std::uint64_t slot = rng % requests;  // requests already counts this record
    if (slot < kSample) sample[slot] = total_us;
  }

  CollectorOptions options;  // epoch is set once more, before the first add()
  mutable std::mutex mutex;

  std::uint64_t requests = 0;
  std::uint64_t failed = 0;
  std::uint64_t spans = 0;
  std::uint64_t trace_requests = 0;  // the requests every sink holds (trace.json's cap)
  bool sink_full = false;            // a sink holds no more requests
  std::array<Histogram, kStageCount> stage_hist;
  std::array<std::uint64_t, kStageCount> stage_count{};
  Histogram total_hist;
  // Thread CPU time per stage and of the whole request, over the requests
  // that measured it (cpu_requests); wall sums of those same requests give off-CPU shares.
  std::uint64_t cpu_requests = 0;
  std::array<Histogram, kStageCount> stage_cpu_hist;
  std::array<NanoSum, kStageCount> stage_cpu_wall{};
  Histogram total_cpu_hist;
  NanoSum total_cpu_wall = 0;
  // The preprocess stage's parts (options.preprocess_ops), counted as the stages are.
  std::vector<Histogram> part_hist, part_cpu_hist;
  std::vector<std::uint64_t> part_count;
  std::vector<NanoSum> part_cpu_wall;
  std::vector<std::string> failed_examples;
  // Latency by what served the request; a handful of outcomes, so a small map.
  std::map<CacheOutcome, Histogram> outcome_hist;  // in the enum's order, which is its names'
  // Request totals by model-update phase: [k + 1][pending] for RequestRecord::update == k.
  // At most kUpdatePhases updates are told apart (two histograms each).
  static constexpr std::size_t kUpdatePhases = 64;
  std::vector<std::array<Histogram, 2>> update_hist;
  // Reservoir sample of totals (Vitter's algorithm R, fixed seed: reproducible).
  static constexpr std::size_t kSample = 50000;
  std::vector<double> sample;
  std::uint64_t rng = 0x2545F4914F6CDD1Dull;

  std::unordered_map<std::uint64_t, std::uint32_t> path_ids;  // (parent path, name) -> path
  std::vector<PathNode> paths;
  std::vector<OpAcc> ops;  // by name id
  std::uint64_t gpu_kernels = 0, h2d_bytes = 0, d2h_bytes = 0;
  Nanos gpu_idle = 0;
  std::vector<std::uint64_t> batch_requests;  // [k]: requests computed in a batch of k (RequestRecord::batch)
  Nanos first_arrival = 0;                    // of the measured requests
  std::vector<ServedRequest> served;          // CollectorOptions::queue_samples: every request served

  // Streaming to out_dir: requests.csv and trace.json (request_sinks.hpp); empty once committed or discarded.
  std::vector<std::unique_ptr<report::RequestSink>> sinks;
  bool committed = false;
};

Collector::Collector(CollectorOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  if (impl_->options.out_dir.empty()) return;
  impl_->sinks = report::report_folder_sinks(impl_->options.out_dir, impl_->options);
}

Collector::~Collector() {
  if (!impl_->committed) discard();
}

void Collector::set_epoch(Nanos epoch) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->options.epoch = epoch;
  for (auto& sink : impl_->sinks)
    sink->set_epoch(epoch);
}

Nanos Collector::first_measured_arrival() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->first_arrival;
}

void Collector::add(const RequestRecord& r) {
  Impl& m = *impl_;
  if (m.options.queue_samples) {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.served.push_back({r.arrival, r.start, r.end, r.seq >= m.options.measure_from});
  }
  if (r.seq < m.options.measure_from) return;  // served to settle the replay, not measured
  Scratch& sc = scratch();
  const std::size_t n = r.spans.size();

  // Tree facts first, outside the lock: parents precede children, so one pass
  // gives each span its children's time and whether it lies under compute.
  sc.parent.resize(n);
  sc.child_ns.assign(n, 0);
  sc.under_compute.assign(n, 0);
  sc.path.resize(n);
  unsigned present = 0;  // stages with a top-level span
  for (std::size_t i = 0; i < n; ++i) {
    const Span& s = r.spans[i];
    // A malformed parent index (not earlier in the list) is read as top level
    // rather than trusted.
    const std::int32_t p = (s.parent >= 0 && static_cast<std::size_t>(s.parent) < i) ? s.parent : -1;
    sc.parent[i] = p;
    if (p < 0) {
      if (s.name < kStageCount) present |= 1u << s.name;
      continue;
    }
    const auto pu = static_cast<std::size_t>(p);
    sc.child_ns[pu] += s.dur;
    sc.under_compute[i] = sc.under_compute[pu] || (sc.parent[pu] < 0 && r.spans[pu].name == name_id(Stage::compute));
  }
  // The sinks are set before the first add() and only dropped after the last: read without the lock.
  for (auto& sink : m.sinks)
    sink->prepare(r);

  std::lock_guard<std::mutex> lock(m.mutex);
  ++m.requests;
  if (m.first_arrival == 0 || r.arrival < m.first_arrival) m.first_arrival = r.arrival;
  if (!r.ok) {
    ++m.failed;
    if (m.failed_examples.size() < kMaxFailedExamples)
      m.failed_examples.push_back(fmt::format("id {}: {}", r.id, printable(r.error)));  // one line, inert on a terminal
  }
  m.record_times(r, present);
  m.gpu_kernels += r.gpu.kernels;
  m.h2d_bytes += r.gpu.h2d_bytes;
  m.d2h_bytes += r.gpu.d2h_bytes;
  m.gpu_idle += r.gpu.gpu_idle;
  if (r.batch > 0) {
    if (m.batch_requests.size() <= r.batch) m.batch_requests.resize(r.batch + 1);
    ++m.batch_requests[r.batch];
  }
  if (r.cache_outcome != CacheOutcome::none) m.outcome_hist[r.cache_outcome].record(r.total());
  {
    // Requests before any update (update == -1) are update 0's "before".
    const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(r.update + 1), Impl::kUpdatePhases);
    if (m.update_hist.size() <= k) m.update_hist.resize(k + 1);
    m.update_hist[k][r.update_pending ? 1 : 0].record(r.total());
  }
  m.sample_total(static_cast<double>(r.total()) / 1e3);

  Nanos top_level_other = 0;  // top-level spans that are not stages: already inside overhead
  for (std::size_t i = 0; i < n; ++i) {
    const Span& s = r.spans[i];
    const std::int32_t p = sc.parent[i];
    const std::uint32_t path = m.path_of(p < 0 ? 0 : sc.path[static_cast<std::size_t>(p)], s.name);
    sc.path[i] = path;
    const Nanos self = s.dur - sc.child_ns[i];
    m.paths[path].self_ns += self;
    // An explicit overhead span (GPU: holding gpu_idle) is part of overhead too.
    if (p < 0 && (s.name >= kStageCount || s.name == name_id(Stage::overhead))) top_level_other += s.dur;
    if (sc.under_compute[i] && s.name >= kStageCount) {
      if (s.name >= m.ops.size()) m.ops.resize(s.name + 1);
      OpAcc& op = m.ops[s.name];
      ++op.calls;
      op.self_ns += self;
      op.total_ns += s.dur;
    }
  }
  // Overhead has no span; its folded line keeps every request's values
  // summing to its total.
  m.paths[m.path_of(0, name_id(Stage::overhead))].self_ns += r.stage[kOverhead] - top_level_other;

  // Every sink keeps the request, but trace.json only up to its cap (a contiguous prefix of the
  // replay): the summary counts the requests and spans every file holds.
  bool kept = true;
  for (auto& sink : m.sinks)
    kept = sink->write(r) && kept;
  if (!kept) m.sink_full = true;
  if (!m.sink_full) {
    ++m.trace_requests;
    m.spans += 1 + n;
  }
}

RunSummary Collector::summarize(const RunInfo& info) const {
  const Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  RunSummary s;
  s.info = info;
  s.requests = m.requests;
  s.cpu_requests = m.cpu_requests;
  s.failed = m.failed;
  s.failed_examples = m.failed_examples;
  s.total = stats_of(m.total_hist, m.requests, m.requests);
  s.total.share = m.requests ? 1.0 : 0.0;
  add_cpu(s.total, m.total_cpu_hist, m.total_cpu_wall, m.cpu_requests);
  const bool copies = m.options.copies_applicable || info.copies_applicable;
  for (std::size_t i = 0; i < kStageCount; ++i) {
    StageStats st = stats_of(m.stage_hist[i], m.stage_count[i], m.requests);
    st.share = s.total.total_us != 0 ? st.total_us / s.total.total_us : 0;
    // On a GPU, compute and the copies hold GPU time: host CPU time beside them would compare unlike things.
    const bool device_stage = is_copy(i) || i == static_cast<std::size_t>(Stage::compute);
    // No CPU figures for the queue (waiting uses none) or the overhead: the CPU clock is read only where a
    // stage closes, so the overhead's CPU time is a residual near 0 and its off-CPU share would read ~100%.
    // Nor for batch_wait: waiting for the batch's run, like the queue.
    const bool measured = i != static_cast<std::size_t>(Stage::queue) &&
                          i != static_cast<std::size_t>(Stage::overhead) &&
                          i != static_cast<std::size_t>(Stage::batch_wait);
    if (measured && !(device_stage && info.device != "cpu"))
      add_cpu(st, m.stage_cpu_hist[i], m.stage_cpu_wall[i], m.cpu_requests);
    if ((is_copy(i) && !copies) || (i == static_cast<std::size_t>(Stage::batch_wait) && info.max_batch <= 1)) {
      st = StageStats{};
      st.applicable = false;
    }
    s.stages[i] = st;
  }
  for (std::size_t k = 0; k < m.part_hist.size(); ++k) {
    StagePart part{"preprocess." + m.options.preprocess_ops[k], stats_of(m.part_hist[k], m.part_count[k], m.requests)};
    part.stats.share = s.total.total_us != 0 ? part.stats.total_us / s.total.total_us : 0;
    add_cpu(part.stats, m.part_cpu_hist[k], m.part_cpu_wall[k], m.cpu_requests);
    s.preprocess_ops.push_back(std::move(part));
  }
  {
    // The contention signal: with one intra-op thread on the CPU, compute
    // waits for nothing, so its time off the CPU is time other processes took.
    const StageStats& c = s.stages[static_cast<std::size_t>(Stage::compute)];
    // (With a batcher a batch's forward is on its leader's thread: the others' compute is off their CPU.)
    if (c.cpu && c.off_cpu > kNoisyOffCpuShare && info.device == "cpu" && info.threads == 1 && info.max_batch <= 1)
      s.info.warnings.push_back(
          fmt::format("descheduled for {:.0f}% of compute: noisy run (thread CPU {} of {} wall per request); "
                      "wall-time comparisons with it are unreliable",
                      c.off_cpu * 100, report::human_duration_us(c.cpu_mean_us), report::human_duration_us(c.mean_us)));
  }
  if (info.max_batch > 1) s.batching = batching_of(m.batch_requests, info.max_batch);
  s.throughput_rps = info.wall_s > 0 ? static_cast<double>(m.requests) / info.wall_s : 0;
  s.latency_sample_us = m.sample;
  s.queue_samples = queue_samples_of(m.served);
  for (const auto& [outcome, h] : m.outcome_hist) {
    const LatencyStats l = latency_of(h);
    s.outcomes.push_back(OutcomeStats{outcome, l.count, l.mean_us, l.p50_us, l.p99_us});
  }
  // Update k's "before" is the settled phase of update k - 1 (or of no update).
  for (std::size_t k = 0; k + 1 < m.update_hist.size(); ++k) {
    UpdateReport u;
    u.before = latency_of(m.update_hist[k][0]);
    u.during = latency_of(m.update_hist[k + 1][1]);
    u.after = latency_of(m.update_hist[k + 1][0]);
    s.updates.push_back(std::move(u));
  }

  s.top_ops = top_ops_of(m.ops, s.stages[static_cast<std::size_t>(Stage::compute)].total_us);
  s.spans = m.spans;
  s.gpu_kernels = m.gpu_kernels;
  s.h2d_bytes = m.h2d_bytes;
  s.d2h_bytes = m.d2h_bytes;
  s.gpu_idle_us = static_cast<double>(m.gpu_idle) / 1e3;
  s.trace_json_requests = m.trace_requests;
  s.trace_json_max_bytes = m.options.trace_json_max_bytes;
  s.csv_rows = m.requests;
  return s;
}

std::vector<std::pair<std::string, std::uint64_t>> Collector::folded() const {
  const Impl& m = *impl_;
  std::vector<std::pair<std::string, NanoSum>> values;
  NanoSum total_ns = 0;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    auto& names = NameTable::global();
    // Children are created after their parents, so one forward pass builds every path.
    std::vector<std::string> path(m.paths.size());
    path[0] = "request";
    values.reserve(m.paths.size());
    for (std::size_t i = 1; i < m.paths.size(); ++i) {
      std::string name(names.name(m.paths[i].name));
      // ';' separates frames and the last space the value; a newline would end the line.
      for (char& c : name)
        if (c == ';')
          c = ':';
        else if (c == '\n' || c == '\r')
          c = ' ';
      path[i] = path[m.paths[i].parent] + ";" + name;
      values.emplace_back(path[i], m.paths[i].self_ns);
    }
    total_ns = m.total_hist.sum();
  }
  return report::round_folded(std::move(values), total_ns);
}

void Collector::commit(const RunSummary& summary) {
  Impl& m = *impl_;
  if (m.sinks.empty() || m.committed) return;
  const std::string& dir = m.options.out_dir;
  const auto folded_stacks = folded();
  const std::string title =
      fmt::format("inferprof {} · {} · {} requests", summary.info.command, report::base_name(summary.info.model_path),
                  report::group_thousands(summary.requests));
  std::lock_guard<std::mutex> lock(m.mutex);
  std::array<TempFile, 5> whole;
  try {
    for (auto& sink : m.sinks)
      sink->finish(summary);
    const std::array<std::pair<const char*, std::string>, 5> contents = {{
        {"summary.json", render_summary_json(summary)},
        {"stages.csv", render_stages_csv(summary)},
        {"stacks.folded", render_folded(folded_stacks)},
        {"flamegraph.svg", render_flamegraph_svg(folded_stacks, title)},
        {"report.html", render_run_html(summary, folded_stacks, title)},
    }};
    for (std::size_t i = 0; i < contents.size(); ++i) {
      whole[i].open(dir, contents[i].first);
      whole[i].write(contents[i].second);
      whole[i].close();
      if (whole[i].error() != 0) throw report::write_error(whole[i].final_path(), whole[i].error());
    }
    // Every file is written before any is renamed, so a full disk leaves none.
    std::vector<TempFile*> order = {&whole[0], &whole[1], &whole[2], &whole[3], &whole[4]};
    for (auto& sink : m.sinks)
      order.push_back(&sink->file());
    std::size_t renamed = 0;
    try {
      for (; renamed < order.size(); ++renamed)
        order[renamed]->rename_into_place();
    } catch (...) {
      for (std::size_t i = 0; i < renamed; ++i)
        output::remove_created(order[i]->final_path());
      throw;
    }
  } catch (...) {
    for (auto& f : whole)
      f.remove();
    m.sinks.clear();  // removes their temporary files
    throw;
  }
  m.sinks.clear();
  m.committed = true;
}

void Collector::discard() noexcept {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  m.sinks.clear();  // removes their temporary files
}

}  // namespace inferprof
