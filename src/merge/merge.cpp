// merge: replicas' run folders into one report (inferprof/merge.hpp). Each
// requests.csv row is rebuilt into the record the replica's collector saw and
// fed to a fresh collector, replica after replica, so memory stays bounded by
// the collector's histograms, not by the number of requests.
#include "inferprof/merge.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_set>

#include "base/atomic_file.hpp"
#include "base/output_owner.hpp"
#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"
#include "inferprof/report.hpp"
#include "inferprof/trace.hpp"
#include "report/saved_run.hpp"

namespace inferprof {

namespace {

namespace fs = std::filesystem;

struct Input {
  std::string dir;
  report::SavedRun run;
  int index = 0;           // the replica's index: its summary's, else its position among the folders
  std::uint64_t rows = 0;  // the requests its requests.csv held (feed): the count its row shows
};

Input read_input(const std::string& dir, int position) {
  Input in;
  in.dir = dir;
  in.run = report::read_saved_run(dir, report::SummaryCheck::partial);
  if (in.run.csv_path.empty())
    throw bad_input(
        fmt::format("{}: no requests.csv beside summary.json (merge needs every request's record)", printable(dir)));
  in.index = in.run.replica.index >= 0 ? in.run.replica.index : position;
  return in;
}

// The facts that make runs replicas of one run: the same model, trace,
// profile, device, group, sharding rule and --limit, in a group of the same
// size. An empty string (an older summary) is not compared.
void check_one_run(const std::vector<Input>& in) {
  const Input& a = in.front();
  std::map<int, const Input*> by_index;
  for (const Input& b : in) {
    for (auto [what, x, y] : {std::tuple{"model", &a.run.model_hash, &b.run.model_hash},
                              std::tuple{"model sha256", &a.run.model_sha256, &b.run.model_sha256},
                              std::tuple{"trace", &a.run.trace_hash, &b.run.trace_hash},
                              std::tuple{"profile", &a.run.profile_name, &b.run.profile_name},
                              std::tuple{"device", &a.run.device, &b.run.device},
                              std::tuple{"group", &a.run.replica.group, &b.run.replica.group},
                              std::tuple{"shard_by", &a.run.replica.shard_by, &b.run.replica.shard_by}})
      if (!x->empty() && !y->empty() && *x != *y)
        throw bad_input(fmt::format("{}: {} {} differs from {}'s {}: merge joins the replicas of one run",
                                    printable(b.dir), what, printable_excerpt(*y), printable(a.dir),
                                    printable_excerpt(*x)));
    if (b.run.limit != a.run.limit)
      throw bad_input(fmt::format("{}: limit {} differs from {}'s {}: merge joins the replicas of one run",
                                  printable(b.dir), b.run.limit, printable(a.dir), a.run.limit));
    if (b.run.replica.count != a.run.replica.count)
      throw bad_input(fmt::format("{}: one of {} replicas, but {} is one of {}: merge joins the replicas of one run",
                                  printable(b.dir), b.run.replica.count, printable(a.dir), a.run.replica.count));
    auto [it, fresh] = by_index.emplace(b.index, &b);
    if (!fresh)
      throw bad_input(fmt::format("{}: replica {} is also {}: each replica's folder once", printable(b.dir), b.index,
                                  printable(it->second->dir)));
  }
}

// The merged report's "run": the first replica's, with what differs between
// replicas joined (hosts) or summed (workers).
RunInfo merged_info(const std::vector<Input>& in) {
  const report::SavedRun& r = in.front().run;
  RunInfo info;
  info.command = "merge";
  info.tool_version = r.tool_version;
  info.libtorch_version = r.libtorch_version;
  info.cpu_model = r.cpu_model;
  info.cpu_cores = r.cpu_cores;
  info.started_at = r.started_at;
  info.model_path = r.model_path;
  info.model_version = r.model_version;
  info.model_hash = r.model_hash;
  info.model_sha256 = r.model_sha256;
  info.model_arch = r.model_arch;
  info.model_parameters = r.model_parameters;
  info.model_bytes = r.model_bytes;
  info.profile_name = r.profile_name;
  info.profile_source = r.profile_source;
  info.trace_path = r.trace_path;
  info.trace_bytes = r.trace_bytes;
  info.trace_hash = r.trace_hash;
  info.device = r.device;
  info.copies_applicable = r.copies_applicable;
  info.threads = r.threads;
  info.mode = r.mode;
  info.driver = r.driver;
  info.speed = r.speed;
  info.poisson_rps = r.poisson_rps;
  info.limit = r.limit;
  info.max_batch = r.max_batch;
  info.batch_delay_us = r.batch_delay_us;
  info.load_ms = r.load_ms;
  info.replica.count = r.replica.count;
  info.replica.shard_by = r.replica.shard_by;
  info.replica.group = r.replica.group;
  info.merged_from = static_cast<int>(in.size());
  std::set<std::string> hosts;
  info.concurrency = 0;
  for (const Input& i : in) {
    info.concurrency += i.run.concurrency;
    info.started_at = std::min(info.started_at, i.run.started_at);
    info.load_ms = std::max(info.load_ms, i.run.load_ms);
    if (hosts.insert(i.run.hostname).second) info.hostname += (info.hostname.empty() ? "" : ", ") + i.run.hostname;
    if (!i.run.interrupted_by.empty()) info.interrupted_by = i.run.interrupted_by;
  }
  return info;
}

// One replica's row, from what its summary.json says.
ReplicaResult replica_row(const Input& in) {
  ReplicaResult r;
  r.index = in.index;
  r.host = in.run.hostname;
  r.dir = in.dir;
  r.status = in.run.interrupted_by.empty() ? "ok" : "interrupted";
  r.requests = in.rows;  // what its requests.csv held (and its summary said: feed checks both)
  r.throughput_rps = in.run.throughput_rps;
  const StageStats& total = in.run.stages[kStageCount];
  r.mean_us = total.mean_us;
  r.p50_us = total.p50_us;
  r.p99_us = total.p99_us;
  for (const auto& u : in.run.updates) {
    ReplicaResult::Live live;
    live.version = u.to_version;
    live.unix_ms = u.live_unix_ms;  // -1 (null): never live in this replica
    live.stale_served = u.stale_served;
    live.stalled = u.stalled;
    live.stall_ms = u.stall_ms;
    r.stale_served += live.stale_served;
    r.stalled += live.stalled;
    r.stall_ms += live.stall_ms;
    r.live.push_back(std::move(live));
  }
  return r;
}

Nanos ns_of_us(double us) {
  return static_cast<Nanos>(std::llround(us * 1e3));
}

// The record a requests.csv row was written from, its times moved by
// `offset` (its replica's start relative to the earliest replica's). Spans:
// one per stage that took time, laid out in stage order (the replica's own
// span tree, and aten ops with --ops, stay in its trace.json).
void rebuild(const report::RequestRow& row, Nanos offset, RequestRecord& r) {
  r.reset();
  r.id = row.id;
  r.line = row.trace_line;
  r.key = row.key;
  r.worker = static_cast<std::uint32_t>(row.worker);
  r.arrival = offset + ns_of_us(row.arrival_us);
  r.start = offset + ns_of_us(row.start_us);
  r.end = r.arrival + ns_of_us(row.us[kStageCount]);
  Nanos at = r.start;
  for (std::size_t i = 0; i < kStageCount; ++i) {
    r.stage[i] = ns_of_us(row.us[i]);
    if (r.stage[i] == 0 || i == static_cast<std::size_t>(Stage::overhead)) continue;
    const bool queue = i == static_cast<std::size_t>(Stage::queue);
    r.spans.push_back(Span{static_cast<std::uint32_t>(i), -1, queue ? r.arrival : at, r.stage[i], -1});
    if (!queue) at += r.stage[i];
  }
  if (row.has_cpu) {
    // cpu_start/cpu_end only carry the request's CPU total (cpu_total()).
    r.cpu_start = 1;
    r.cpu_end = 1 + ns_of_us(row.cpu_us[kStageCount]);
    for (std::size_t i = 0; i < kStageCount; ++i)
      r.stage_cpu[i] = ns_of_us(row.cpu_us[i]);
  }
  r.preprocess_op.resize(row.part_us.size());
  r.preprocess_op_cpu.resize(row.part_cpu_us.size());
  for (std::size_t k = 0; k < row.part_us.size(); ++k) {
    r.preprocess_op[k] = ns_of_us(row.part_us[k]);
    r.preprocess_op_cpu[k] = ns_of_us(row.part_cpu_us[k]);
  }
  r.image_bytes = row.image_bytes;
  r.image_pixels = row.image_pixels;
  r.batch = static_cast<std::uint32_t>(row.batch);
  r.cache_outcome = row.cache.value_or(CacheOutcome::none);
  r.model_version = row.model_version;
  r.ok = row.ok;
  r.error = row.error;
}

// The replicas' results folded into the replica table: the spread of p50 and
// p99 over those that served something; per update, the replicas that went
// live on it and the skew between the first and the last.
class ReplicaFold {
 public:
  explicit ReplicaFold(ReplicaSummary& s) : s_(s) {}
  void add(ReplicaResult r) {
    if (r.status != "ok" && r.status != "interrupted") {
      ++s_.failed;
    } else if (r.requests > 0) {  // the spread is over replicas that served something
      if (finished_ == 0) {
        p50_lo_ = p50_hi_ = r.p50_us;
        p99_lo_ = p99_hi_ = r.p99_us;
      }
      p50_lo_ = std::min(p50_lo_, r.p50_us);
      p50_hi_ = std::max(p50_hi_, r.p50_us);
      p99_lo_ = std::min(p99_lo_, r.p99_us);
      p99_hi_ = std::max(p99_hi_, r.p99_us);
      ++finished_;
    }
    s_.requests += r.requests;
    for (const auto& live : r.live)
      add_live(live);
    s_.replicas.push_back(std::move(r));
  }
  void finish() {
    s_.p50_spread_us = p50_hi_ - p50_lo_;
    s_.p99_spread_us = p99_hi_ - p99_lo_;
    for (const std::string& v : order_) {
      ReplicaUpdate u = by_version_[v];
      if (auto it = live_range_.find(v); it != live_range_.end()) u.skew_ms = it->second.second - it->second.first;
      s_.updates.push_back(u);
    }
  }

 private:
  void add_live(const ReplicaResult::Live& live) {
    if (!by_version_.count(live.version)) order_.push_back(live.version);
    ReplicaUpdate& u = by_version_[live.version];
    u.version = live.version;
    u.stale_served += live.stale_served;
    u.stalled += live.stalled;
    u.stall_ms += live.stall_ms;
    if (live.unix_ms < 0) return;
    auto [it, fresh] = live_range_.try_emplace(live.version, live.unix_ms, live.unix_ms);
    if (!fresh) {
      it->second.first = std::min(it->second.first, live.unix_ms);
      it->second.second = std::max(it->second.second, live.unix_ms);
    }
    ++u.replicas_live;
  }

  ReplicaSummary& s_;
  std::map<std::string, ReplicaUpdate> by_version_;
  std::vector<std::string> order_;
  std::map<std::string, std::pair<double, double>> live_range_;
  double p50_lo_ = 0, p50_hi_ = 0, p99_lo_ = 0, p99_hi_ = 0;
  int finished_ = 0;
};

// The replicas' start times, ms apart: those of one run's replicas start
// together, and rows of up to kMaxSavedMicros each are placed after them.
void check_start_times(const std::vector<Input>& in) {
  const auto [first, last] = std::minmax_element(
      in.begin(), in.end(), [](const Input& a, const Input& b) { return a.run.epoch_unix_ms < b.run.epoch_unix_ms; });
  constexpr double kMaxApartMs = report::kMaxSavedMicros / 1e3;
  if (first->run.epoch_unix_ms > 0 && last->run.epoch_unix_ms - first->run.epoch_unix_ms > kMaxApartMs)
    throw bad_input(fmt::format(
        "{}: started {:.0f} ms after {}, more than {:.0f} ms (about 11.6 days): merge joins the "
        "replicas of one run",
        printable(last->dir), last->run.epoch_unix_ms - first->run.epoch_unix_ms, printable(first->dir), kMaxApartMs));
}

// Feeds every replica's requests, in replica order, to `collector`, each
// replica's rows counted (Input::rows) and checked against its summary;
// returns where the last request ended, in ns from the earliest replica's
// start. `distinct`: the trace lines served; `duplicated`: rows whose line
// was already served.
Nanos feed(std::vector<Input>& in, Collector& collector, const std::vector<std::string>& parts, RunInfo& info,
           std::uint64_t& distinct, std::uint64_t& duplicated) {
  // Times line up on the replicas' wall clocks; a summary from before they
  // were recorded starts at the earliest.
  double base_ms = 0;
  bool clocks = true;
  for (const Input& i : in) {
    clocks = clocks && i.run.epoch_unix_ms > 0;
    base_ms = base_ms == 0 ? i.run.epoch_unix_ms : std::min(base_ms, i.run.epoch_unix_ms);
  }
  if (clocks) check_start_times(in);
  if (!clocks) info.warnings.push_back("some replicas did not record their start time: their timelines are overlaid");
  RequestRecord record;
  std::uint64_t seq = 0;
  Nanos last_end = 0;
  std::unordered_set<std::uint64_t> lines;
  for (Input& i : in) {
    const Nanos offset = clocks ? static_cast<Nanos>(std::llround((i.run.epoch_unix_ms - base_ms) * 1e6)) : 0;
    i.rows = report::read_requests_csv(
        i.run.csv_path, {},
        [&](const report::RequestRow& row) {
          rebuild(row, offset, record);
          record.seq = seq++;
          if (!lines.insert(record.line).second) ++duplicated;
          last_end = std::max(last_end, record.end);
          collector.add(record);
        },
        parts);
    report::check_request_rows(i.run, i.rows);
  }
  distinct = lines.size();
  return last_end;
}

// Each replica's share of the trace, by the replay's rule (a replica's
// --limit caps its own); empty, with `why`, when the trace cannot be read.
std::vector<std::int64_t> shares_of(const std::string& trace, bool by_key, int count, std::uint64_t limit,
                                    std::string& why) {
  std::vector<std::int64_t> shares(static_cast<std::size_t>(count), 0);
  try {
    TraceReader::Options o;
    o.skip_invalid = true;
    TraceReader reader(trace, o);
    TraceRecord record;
    std::uint64_t nth = 0;
    while (reader.next(record))
      if (record.kind == TraceRecord::Kind::request)
        ++shares[static_cast<std::size_t>(shard_of(by_key, record.request.key, nth++, count))];
  } catch (const Error& e) {
    why = e.what();
    return {};
  }
  if (limit > 0)
    for (std::int64_t& n : shares)
      n = std::min<std::int64_t>(n, static_cast<std::int64_t>(limit));
  return shares;
}

// The replica table: a row per replica of the group, from its folder or "no
// report", with its share of the trace when known.
void fold_replicas(const std::vector<Input>& in, int count, const std::vector<std::int64_t>& shares,
                   const MergeOptions& options, ReplicaSummary& s) {
  ReplicaFold fold(s);
  std::size_t next = 0;
  if (!shares.empty()) s.lost = 0;
  for (int k = 0; k < count; ++k) {
    ReplicaResult r;
    if (next < in.size() && in[next].index == k) {
      r = replica_row(in[next++]);
    } else {
      r.index = k;
      r.status = "no report";
    }
    if (!shares.empty()) {
      r.share = shares[static_cast<std::size_t>(k)];
      s.lost += std::max<std::int64_t>(0, r.share - static_cast<std::int64_t>(r.requests));
    }
    if (options.annotate) options.annotate(r);
    fold.add(std::move(r));
  }
  fold.finish();
}

// Refused before anything is read: merged reports written over a replica's own (`merge A B --out A`).
void refuse_output_over_inputs(const MergeOptions& options) {
  std::vector<output::NamedPath> inputs;
  for (const std::string& dir : options.dirs) {
    std::error_code ec;
    inputs.push_back({"the run folder", fs::is_directory(dir, ec) ? dir : fs::path(dir).parent_path().string()});
  }
  output::check_distinct({{"--out", options.out_dir}}, inputs);
}

// The replicas' saved runs, by replica index. A folder without summary.json is a replica that never
// finished (killed, crashed): its folder is empty; it goes to `unfinished` and is counted as missing.
std::vector<Input> read_inputs(const MergeOptions& options, std::vector<std::string>& unfinished) {
  std::vector<Input> in;
  for (std::size_t i = 0; i < options.dirs.size(); ++i) {
    std::error_code ec;
    if (fs::is_directory(options.dirs[i], ec) && !fs::exists(fs::path(options.dirs[i]) / "summary.json", ec))
      unfinished.push_back(options.dirs[i]);
    else
      in.push_back(read_input(options.dirs[i], static_cast<int>(i)));
  }
  if (in.empty() && options.replicas <= 0)
    throw bad_input(fmt::format("{}: no summary.json in this folder (expected a run's --out folder)",
                                printable(options.dirs.front())));
  std::sort(in.begin(), in.end(), [](const Input& a, const Input& b) { return a.index < b.index; });
  if (!in.empty()) check_one_run(in);
  return in;
}

// How many replicas the group had: --replicas, else what the summaries say, else the folders given.
int group_size(const MergeOptions& options, const std::vector<Input>& in) {
  const int count = options.replicas > 0               ? options.replicas
                    : in.front().run.replica.count > 0 ? in.front().run.replica.count
                                                       : static_cast<int>(in.size());
  if (!in.empty() && in.back().index >= count)
    throw bad_input(fmt::format("{}: replica {} of a group of {}", printable(in.back().dir), in.back().index, count));
  return count;
}

// Lost (requests of the shards that no replica served, by trace line: a duplicate does not hide one),
// duplicated and failed, as the merged run's warnings.
void warn_about_coverage(ReplicaSummary& s, std::uint64_t distinct, const std::string& unread, int count,
                         RunInfo& info) {
  if (s.lost >= 0) {
    std::int64_t shares = 0;
    for (const ReplicaResult& r : s.replicas)
      shares += r.share;
    s.lost = std::max<std::int64_t>(0, shares - static_cast<std::int64_t>(distinct));
  }
  if (!unread.empty())
    info.warnings.push_back(fmt::format("lost requests not counted: the trace cannot be read ({})", unread));
  if (s.lost > 0)
    info.warnings.push_back(
        fmt::format("{} requests of the trace were served by no replica (see the replica table)", s.lost));
  if (s.duplicated > 0)
    info.warnings.push_back(
        fmt::format("{} requests (trace lines) were served by more than one replica", s.duplicated));
  if (s.failed > 0)
    info.warnings.push_back(
        fmt::format("{} of {} replicas failed or left no report: the figures cover the others", s.failed, count));
}

MergeResult merge(const MergeOptions& options) {
  if (options.dirs.empty() && options.replicas <= 0) throw bad_input("merge needs at least one run folder");
  if (options.replicas > report::kMaxSavedReplicas)
    throw bad_input(fmt::format("--replicas {}: at most {}", options.replicas, report::kMaxSavedReplicas));
  refuse_output_over_inputs(options);
  std::vector<std::string> unfinished;
  std::vector<Input> in = read_inputs(options, unfinished);
  const int count = group_size(options, in);
  if (!options.out_dir.empty()) output::claim_dir(options.out_dir);

  MergeResult result;
  ReplicaSummary& s = result.replicas;
  std::string unread;
  std::vector<std::int64_t> shares;
  if (!in.empty()) {
    const report::SavedRun& first = in.front().run;
    shares = shares_of(options.trace_path.empty() ? first.trace_path : options.trace_path,
                       first.replica.shard_by == "hash", count, first.limit, unread);
  }
  if (in.empty()) {  // nothing to merge: the table says why
    fold_replicas(in, count, shares, options, s);
    if (!options.out_dir.empty()) {
      write_file_atomic(options.out_dir, "replicas.json", render_replicas_json(s));
      result.files.push_back((fs::path(options.out_dir) / "replicas.json").string());
    }
    return result;
  }
  RunInfo info = merged_info(in);
  for (const std::string& dir : unfinished)
    info.warnings.push_back(
        fmt::format("{}: no summary.json (a replica that did not finish): skipped", printable(dir)));
  s.split = info.replica.shard_by;
  if (info.interrupted()) s.interrupted_by = info.interrupted_by;

  CollectorOptions copts;
  copts.out_dir = options.out_dir;
  copts.copies_applicable = info.copies_applicable;
  std::vector<std::string> parts;
  for (const StagePart& p : in.front().run.preprocess_ops) {
    copts.preprocess_ops.push_back(p.name.substr(std::string_view("preprocess.").size()));
    parts.push_back(p.name);
  }
  Collector collector(copts);
  collector.set_epoch(0);
  std::uint64_t distinct = 0;
  info.wall_s = static_cast<double>(feed(in, collector, parts, info, distinct, s.duplicated)) / 1e9;
  // The table after the rows are read: each replica's requests are those its requests.csv held.
  fold_replicas(in, count, shares, options, s);
  warn_about_coverage(s, distinct, unread, count, info);

  result.run = collector.summarize(info);
  if (!options.out_dir.empty()) {
    collector.commit(result.run);
    write_file_atomic(options.out_dir, "replicas.json", render_replicas_json(s));
    for (const char* f : kRunReportFiles)
      result.files.push_back((fs::path(options.out_dir) / f).string());
    result.files.push_back((fs::path(options.out_dir) / "replicas.json").string());
  }
  return result;
}

}  // namespace

MergeResult merge_runs(const MergeOptions& options) {
  // A failed merge leaves no report, nor the --out folder it created for them (only what it created).
  try {
    return merge(options);
  } catch (...) {
    if (!options.out_dir.empty()) output::remove_created(options.out_dir);
    throw;
  }
}

}  // namespace inferprof
