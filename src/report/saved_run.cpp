// Reading a saved run: summary.json with simdjson, requests.csv with the CSV
// reader, its columns found by name in the header.
#include "report/saved_run.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

#include "base/csv_io.hpp"
#include "base/read_file.hpp"
#include "base/text.hpp"
#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"

namespace inferprof::report {
namespace {

// requests.csv's cache column: "none" (no cache tier) or one of a walk's
// outcomes; nullopt for other text.
std::optional<CacheOutcome> parse_cache_column(std::string_view text) {
  if (text == outcome_name(CacheOutcome::none)) return CacheOutcome::none;
  return parse_outcome(text);
}

namespace fs = std::filesystem;

// Typed access with an error that names the file and the JSON path. Every
// number is checked against its bound before it is used (a count before it is
// cast), every string made printable: a summary.json is input, not trusted.
struct Doc {
  const std::string& file;
  bool complete;
  Error missing(std::string_view path, std::string_view expected) const {
    return bad_input(
        fmt::format("{}: '{}' is missing or not {} (is this an inferprof summary.json?)", file, path, expected));
  }
  static std::optional<double> number_of(simdjson::dom::element e) {
    double d = 0;
    std::int64_t i = 0;
    std::uint64_t u = 0;
    if (e.get(d) == simdjson::SUCCESS) return d;
    if (e.get(i) == simdjson::SUCCESS) return static_cast<double>(i);
    if (e.get(u) == simdjson::SUCCESS) return static_cast<double>(u);
    return std::nullopt;
  }
  // `v` when it lies in [lo, hi] (a whole number with `whole`), else bad input naming the path and the bound.
  double within(double v, std::string_view path, double lo, double hi, bool whole = false) const {
    if (v >= lo && v <= hi && (!whole || std::floor(v) == v)) return v;
    const std::string range = hi == kMaxSavedMicros
                                  ? fmt::format("{} to {}", lo == 0 ? "0" : "-1e12", kMaxSavedMicrosText)
                                  : fmt::format("{:.15g} to {:.15g}", lo, hi);
    throw bad_input(fmt::format("{}: '{}' is {}, expected {} from {}", file, path, v,
                                hi == kMaxSavedMicros ? "µs" : (whole ? "a whole number" : "a number"), range));
  }
  double number(simdjson::dom::element e, std::string_view path) const {
    if (auto v = number_of(e)) return *v;
    throw missing(path, "a number");
  }
  // Required when the check is complete; 0 when absent otherwise.
  double number(simdjson::dom::object o, std::string_view key, std::string_view path) const {
    simdjson::dom::element e;
    if (o[key].get(e) != simdjson::SUCCESS) {
      if (complete) throw missing(path, "a number");
      return 0;
    }
    return number(e, path);
  }
  // A µs figure (required as number() is): from -kMaxSavedMicros (`signed_us`) or 0 to kMaxSavedMicros.
  double micros(simdjson::dom::object o, std::string_view key, std::string_view path, bool signed_us) const {
    return within(number(o, key, path), path, signed_us ? -kMaxSavedMicros : 0, kMaxSavedMicros);
  }
  // A whole number from 0 to `max` (required as number() is).
  std::uint64_t count(simdjson::dom::object o, std::string_view key, std::string_view path,
                      double max = kMaxSummaryNumber) const {
    return static_cast<std::uint64_t>(within(number(o, key, path), path, 0, max, true));
  }
  std::string optional_string(simdjson::dom::object o, std::string_view key) const {
    std::string_view s;
    if (o[key].get(s) != simdjson::SUCCESS) return "";
    return printable(s);
  }
  // 0 when absent or not a number (null: what the writer makes of a figure it does not have).
  double optional_number(simdjson::dom::object o, std::string_view key, std::string_view path, double lo = 0,
                         double hi = kMaxSummaryNumber) const {
    simdjson::dom::element e;
    if (o[key].get(e) != simdjson::SUCCESS) return 0;
    const std::optional<double> v = number_of(e);
    return v ? within(*v, path, lo, hi) : 0;
  }
  // A whole number from 0 to `max`; 0 when absent or not a number.
  std::uint64_t optional_count(simdjson::dom::object o, std::string_view key, std::string_view path,
                               double max = kMaxSummaryNumber) const {
    simdjson::dom::element e;
    if (o[key].get(e) != simdjson::SUCCESS) return 0;
    const std::optional<double> v = number_of(e);
    return v ? static_cast<std::uint64_t>(within(*v, path, 0, max, true)) : 0;
  }
};

// Whether the stage was there (with a mean).
bool read_stage(const Doc& doc, simdjson::dom::object parent, std::string_view name, std::string_view path,
                StageStats& s) {
  simdjson::dom::object o;
  if (parent[name].get(o) != simdjson::SUCCESS) {
    if (doc.complete) throw doc.missing(path, "an object");
    return false;
  }
  bool applicable = true;
  if (o["applicable"].get(applicable) == simdjson::SUCCESS && !applicable) {
    s.applicable = false;
    return true;
  }
  const std::string p(path);
  // Only overhead, the rest of a request after its stages, may come out below 0.
  const bool overhead = name == kStageNames[static_cast<std::size_t>(Stage::overhead)];
  simdjson::dom::element mean;
  const bool has_mean = o["mean_us"].get(mean) == simdjson::SUCCESS;
  s.count = doc.count(o, "count", p + ".count");
  s.mean_us = doc.micros(o, "mean_us", p + ".mean_us", overhead);
  s.p50_us = doc.micros(o, "p50_us", p + ".p50_us", overhead);
  s.p90_us = doc.micros(o, "p90_us", p + ".p90_us", overhead);
  s.p99_us = doc.micros(o, "p99_us", p + ".p99_us", overhead);
  s.max_us = doc.micros(o, "max_us", p + ".max_us", overhead);
  // A sum over the requests: finite, the bound of a µs figure times that of a count.
  s.total_us = doc.optional_number(o, "total_us", p + ".total_us", -kMaxSavedMicros * kMaxSummaryNumber,
                                   kMaxSavedMicros * kMaxSummaryNumber);
  s.share = doc.optional_number(o, "share", p + ".share", -kMaxSummaryNumber);
  // Thread CPU time: absent for queue and in summaries from before it was recorded.
  simdjson::dom::element cpu_mean;
  s.cpu = o["cpu_mean_us"].get(cpu_mean) == simdjson::SUCCESS;
  if (s.cpu) {
    s.cpu_mean_us = doc.micros(o, "cpu_mean_us", p + ".cpu_mean_us", false);
    s.cpu_p50_us = doc.micros(o, "cpu_p50_us", p + ".cpu_p50_us", false);
    s.cpu_p99_us = doc.micros(o, "cpu_p99_us", p + ".cpu_p99_us", false);
    s.off_cpu = doc.optional_number(o, "off_cpu", p + ".off_cpu");
  }
  return has_mean;
}

// "stages"."preprocess"."ops": the preprocess stage's parts, by op name, in the file's order.
void read_preprocess_ops(const Doc& doc, simdjson::dom::object stages, std::vector<StagePart>& out) {
  simdjson::dom::object ops;
  if (stages["preprocess"]["ops"].get(ops) != simdjson::SUCCESS) return;
  if (ops.size() > kMaxSavedParts)
    throw bad_input(fmt::format("{}: 'stages.preprocess.ops' has {} ops, expected at most {}", doc.file, ops.size(),
                                kMaxSavedParts));
  for (auto field : ops) {
    StagePart part{fmt::format("preprocess.{}", printable(field.key)), {}};
    read_stage(doc, ops, field.key, "stages." + part.name, part.stats);
    out.push_back(std::move(part));
  }
}

// "run": the facts diff and simulate compare (model, trace, machine, mode).
void read_run_info(const Doc& doc, simdjson::dom::object top, SavedRun& run) {
  simdjson::dom::object info;
  if (top["run"].get(info) == simdjson::SUCCESS) {
    run.model_hash = doc.optional_string(info, "model_hash");
    run.trace_hash = doc.optional_string(info, "trace_hash");
    run.model_path = doc.optional_string(info, "model_path");
    run.trace_path = doc.optional_string(info, "trace_path");
    run.hostname = doc.optional_string(info, "hostname");
    run.cpu_model = doc.optional_string(info, "cpu_model");
    run.libtorch_version = doc.optional_string(info, "libtorch_version");
    run.device = doc.optional_string(info, "device");
    run.profile_name = doc.optional_string(info, "profile_name");
    run.mode = doc.optional_string(info, "mode");
    run.started_at = doc.optional_string(info, "started_at");
    run.cpu_cores = static_cast<int>(doc.optional_count(info, "cpu_cores", "run.cpu_cores", kMaxSavedWorkers));
    run.threads = static_cast<int>(doc.optional_count(info, "threads", "run.threads", kMaxSavedWorkers));
    run.concurrency = static_cast<int>(doc.optional_count(info, "concurrency", "run.concurrency", kMaxSavedWorkers));
    run.limit = doc.optional_count(info, "limit", "run.limit");
    run.tool_version = doc.optional_string(info, "tool_version");
    run.model_version = doc.optional_string(info, "model_version");
    run.model_sha256 = doc.optional_string(info, "model_sha256");
    run.model_arch = doc.optional_string(info, "model_arch");
    run.profile_source = doc.optional_string(info, "profile_source");
    run.driver = doc.optional_string(info, "driver");
    run.model_parameters =
        static_cast<std::int64_t>(doc.optional_count(info, "model_parameters", "run.model_parameters"));
    run.model_bytes = static_cast<std::int64_t>(doc.optional_count(info, "model_bytes", "run.model_bytes"));
    run.trace_bytes = doc.optional_count(info, "trace_bytes", "run.trace_bytes");
    run.speed = info["speed"].error() == simdjson::SUCCESS ? doc.optional_number(info, "speed", "run.speed") : 1.0;
    run.poisson_rps = info["poisson_rps"].error() == simdjson::SUCCESS
                          ? doc.optional_number(info, "poisson_rps", "run.poisson_rps")
                          : 0;
    run.batch_delay_us = doc.optional_number(info, "batch_delay_us", "run.batch_delay_us", 0, kMaxSavedMicros);
    run.max_batch =
        std::max(1, static_cast<int>(doc.optional_count(info, "max_batch", "run.max_batch", kMaxSavedBatch)));
    run.load_ms = doc.optional_number(info, "load_ms", "run.load_ms");
    run.wall_s = doc.optional_number(info, "wall_s", "run.wall_s");
    run.epoch_unix_ms = doc.optional_number(info, "epoch_unix_ms", "run.epoch_unix_ms");
    bool copies = false;
    if (info["copies_applicable"].get(copies) == simdjson::SUCCESS) run.copies_applicable = copies;
    simdjson::dom::object replica;
    if (info["replica"].get(replica) == simdjson::SUCCESS) {
      run.replica.count = static_cast<int>(doc.within(doc.number(replica, "count", "run.replica.count"),
                                                      "run.replica.count", 1, kMaxSavedReplicas, true));
      run.replica.index = static_cast<int>(doc.within(doc.number(replica, "index", "run.replica.index"),
                                                      "run.replica.index", -1, run.replica.count - 1, true));
      run.replica.shard_by = doc.optional_string(replica, "shard_by");
      run.replica.group = doc.optional_string(replica, "group");
    }
    simdjson::dom::object probe, at;
    if (info["speed_probe"].get(probe) == simdjson::SUCCESS)
      for (auto [name, into] : {std::pair{"before", &run.speed_before}, std::pair{"after", &run.speed_after}})
        if (probe[name].get(at) == simdjson::SUCCESS)
          *into = SpeedProbe{doc.optional_number(at, "compute_us", "run.speed_probe.compute_us", 0, kMaxSavedMicros),
                             doc.optional_number(at, "memory_us", "run.speed_probe.memory_us", 0, kMaxSavedMicros)};
  } else if (doc.complete) {
    throw doc.missing("run", "an object");
  }
}

// "caches": each tier this version knows, its hit ratio and what it held.
void read_caches(const Doc& doc, simdjson::dom::object top, SavedRun& run) {
  simdjson::dom::array caches;
  if (top["caches"].get(caches) == simdjson::SUCCESS)
    for (simdjson::dom::element c : caches) {
      SavedRun::Tier t;
      std::string_view tier;
      if (c["tier"].get(tier) != simdjson::SUCCESS) continue;
      const std::optional<CacheLevel> level = parse_enum<CacheLevel>(tier);
      if (!level) continue;  // a tier this version does not know
      t.tier = *level;
      simdjson::dom::element ratio;
      if (c["hit_ratio"].get(ratio) == simdjson::SUCCESS)
        t.hit_ratio = doc.within(doc.number(ratio, "caches[].hit_ratio"), "caches[].hit_ratio", 0, 1);
      simdjson::dom::object o;
      if (c.get(o) == simdjson::SUCCESS) {
        t.entries = doc.optional_number(o, "entries", "caches[].entries");
        t.bytes = doc.optional_number(o, "bytes", "caches[].bytes");
      }
      run.caches.push_back(std::move(t));
    }
}

// "served_by": requests and mean latency by what served them.
void read_served_by(const Doc& doc, simdjson::dom::object top, SavedRun& run) {
  simdjson::dom::array by;
  if (top["served_by"].get(by) == simdjson::SUCCESS)
    for (simdjson::dom::element e : by) {
      simdjson::dom::object o;
      std::string_view name;
      if (e.get(o) != simdjson::SUCCESS || o["outcome"].get(name) != simdjson::SUCCESS) continue;
      const std::optional<CacheOutcome> served = parse_cache_column(name);
      if (!served) continue;  // a later version's outcome: not one this reader knows
      SavedRun::Outcome out;
      out.outcome = *served;
      out.requests = static_cast<double>(doc.optional_count(o, "requests", "served_by[].requests"));
      simdjson::dom::element m;
      if (o["mean_us"].get(m) == simdjson::SUCCESS)
        if (const auto v = Doc::number_of(m)) out.mean_us = doc.within(*v, "served_by[].mean_us", 0, kMaxSavedMicros);
      run.served_by.push_back(std::move(out));
    }
}

// "updates": the model updates and what they cost.
void read_updates(const Doc& doc, simdjson::dom::object top, SavedRun& run) {
  simdjson::dom::array updates;
  if (top["updates"].get(updates) == simdjson::SUCCESS)
    for (simdjson::dom::element e : updates) {
      simdjson::dom::object o;
      if (e.get(o) != simdjson::SUCCESS) continue;
      SavedRun::Update u;
      u.to_version = doc.optional_string(o, "to_version");
      simdjson::dom::element live;
      if (o["live_unix_ms"].get(live) == simdjson::SUCCESS)
        if (const auto v = Doc::number_of(live))
          u.live_unix_ms = doc.within(*v, "updates[].live_unix_ms", 0, kMaxSummaryNumber);
      u.stale_served = doc.optional_count(o, "stale_served", "updates[].stale_served");
      u.stalled = doc.optional_count(o, "stalled", "updates[].stalled");
      u.stall_ms = doc.optional_number(o, "stall_ms", "updates[].stall_ms");
      run.updates.push_back(std::move(u));
    }
}

}  // namespace

SavedRun read_saved_run(const std::string& path, SummaryCheck check) {
  SavedRun run;
  std::error_code ec;
  fs::path p(path);
  if (!fs::exists(p, ec))
    throw bad_input(
        fmt::format("{}: no such file or folder (expected a run's summary.json or its --out folder)", path));
  if (fs::is_directory(p, ec)) {
    p /= "summary.json";
    if (!fs::exists(p, ec))
      throw bad_input(fmt::format("{}: no summary.json in this folder (expected a run's --out folder)", path));
  }
  run.summary_path = p.string();
  // One that is there but no regular file (a FIFO) is refused when it is read, not taken for none.
  const fs::path csv = p.parent_path() / "requests.csv";
  if (fs::exists(csv, ec)) run.csv_path = csv.string();

  // A regular file (a FIFO is refused, not waited on) of at most kMaxSummaryBytes, read before it is parsed.
  const std::optional<std::string> bytes = read_regular_file(run.summary_path, kMaxSummaryBytes);
  if (!bytes) throw bad_input(fmt::format("{}: no such file (expected a run's summary.json)", run.summary_path));
  simdjson::dom::parser parser;
  const simdjson::padded_string text(*bytes);
  simdjson::dom::element root;
  if (auto err = parser.parse(text).get(root))
    throw bad_input(fmt::format("{}: malformed JSON ({})", run.summary_path, simdjson::error_message(err)));
  const Doc doc{run.summary_path, check == SummaryCheck::complete};
  simdjson::dom::object top;
  if (root.get(top) != simdjson::SUCCESS) throw doc.missing("(top level)", "an object");
  std::string_view schema;
  if (top["schema"].get(schema) != simdjson::SUCCESS || schema != kSummarySchema)
    throw bad_input(fmt::format("{}: not an inferprof summary (schema '{}', expected '{}')", run.summary_path,
                                printable_excerpt(schema), kSummarySchema));

  read_run_info(doc, top, run);
  run.interrupted_by = doc.optional_string(top, "interrupted_by");

  run.requests = doc.count(top, "requests", "requests");
  run.throughput_rps =
      doc.within(doc.number(top, "throughput_rps", "throughput_rps"), "throughput_rps", 0, kMaxSummaryNumber);
  simdjson::dom::object stages;
  const auto stages_field = top["stages"];
  if (stages_field.get(stages) == simdjson::SUCCESS) {
    for (std::size_t i = 0; i < kStageCount; ++i) {
      // batch_wait is absent from summaries written before it was recorded: n/a there.
      if (i == static_cast<std::size_t>(Stage::batch_wait) &&
          stages[kStageNames[i]].error() == simdjson::NO_SUCH_FIELD) {
        run.stages[i].applicable = false;
        continue;
      }
      run.has_stage[i] =
          read_stage(doc, stages, kStageNames[i], fmt::format("stages.{}", kStageNames[i]), run.stages[i]);
    }
    read_preprocess_ops(doc, stages, run.preprocess_ops);
  } else if (doc.complete || stages_field.error() != simdjson::NO_SUCH_FIELD) {
    // Partial readers may do without stages, but not with stages of the wrong type.
    throw doc.missing("stages", "an object");
  }
  run.has_stage[kStageCount] = read_stage(doc, top, "total", "total", run.stages[kStageCount]);

  read_caches(doc, top, run);
  read_served_by(doc, top, run);
  read_updates(doc, top, run);
  return run;
}

void check_request_rows(const SavedRun& run, std::uint64_t rows) {
  if (rows != run.requests)
    throw bad_input(
        fmt::format("{}: {} requests (rows), but {} says {}: a requests.csv holds every request of its run "
                    "(cut short, or not this run's?)",
                    run.csv_path, group_thousands(rows), run.summary_path, group_thousands(run.requests)));
}

namespace {

// Where requests.csv's columns are, found by name in its header (-1: absent).
struct RequestsCsvColumns {
  std::size_t width = 0, ok = 0;
  std::array<int, kStageCount + 1> us{}, cpu{};
  std::array<std::string, kStageCount + 1> us_names, cpu_names;
  std::vector<int> part_us, part_cpu;
  std::vector<std::string> part_us_names, part_cpu_names;
  int cache = -1, id = -1, line = -1, worker = -1, batch = -1, image_bytes = -1, image_pixels = -1, arrival = -1,
      start = -1, key = -1, error = -1, version = -1;
};

RequestsCsvColumns columns_of(const std::vector<std::string>& header, const std::string& path,
                              const std::vector<std::string>& required, const std::vector<std::string>& parts) {
  auto need = [&](const std::string& name) {
    const int i = CsvReader::column(header, name);
    if (i < 0)
      throw bad_input(
          at_line(path, 1, fmt::format("no '{}' column in the header (is this an inferprof requests.csv?)", name)));
    return static_cast<std::size_t>(i);
  };
  for (const std::string& name : required)
    need(name);
  RequestsCsvColumns c;
  for (std::size_t i = 0; i <= kStageCount; ++i) {
    c.us_names[i] = i < kStageCount ? fmt::format("{}_us", kStageNames[i]) : "total_us";
    c.cpu_names[i] = i < kStageCount ? fmt::format("{}_cpu_us", kStageNames[i]) : "cpu_us";
    c.us[i] = CsvReader::column(header, c.us_names[i]);
    c.cpu[i] = CsvReader::column(header, c.cpu_names[i]);
  }
  need("total_us");
  c.ok = need("ok");
  for (const std::string& part : parts) {
    c.part_us_names.push_back(part + "_us");
    c.part_cpu_names.push_back(part + "_cpu_us");
    c.part_us.push_back(CsvReader::column(header, c.part_us_names.back()));
    c.part_cpu.push_back(CsvReader::column(header, c.part_cpu_names.back()));
  }
  c.width = header.size();
  c.cache = CsvReader::column(header, "cache");
  c.id = CsvReader::column(header, "id");
  c.line = CsvReader::column(header, "line");
  c.worker = CsvReader::column(header, "worker");
  c.batch = CsvReader::column(header, "batch");
  c.image_bytes = CsvReader::column(header, "image_bytes");
  c.image_pixels = CsvReader::column(header, "image_pixels");
  c.arrival = CsvReader::column(header, "arrival_us");
  c.start = CsvReader::column(header, "start_us");
  c.key = CsvReader::column(header, "key");
  c.error = CsvReader::column(header, "error");
  c.version = CsvReader::column(header, "model_version");
  return c;
}

// The cells of one row, checked as they are read; errors name the file, the line and the column.
class RowCells {
 public:
  RowCells(const std::vector<std::string>& fields, const std::string& path, std::uint64_t line)
      : fields_(fields), path_(path), line_(line) {}

  // µs from 0 (from -kMaxSavedMicros with `signed_us`) to kMaxSavedMicros; an empty cell (n/a, or no CPU
  // clock read) or no column: nothing.
  std::optional<double> micros(int col, const std::string& name, bool signed_us = false) const {
    const std::string* cell = raw(col);
    if (cell == nullptr) return std::nullopt;
    const std::string& f = *cell;
    double v = 0;
    const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || end != f.data() + f.size() || !(v >= (signed_us ? -kMaxSavedMicros : 0.0)) ||
        !(v <= kMaxSavedMicros))
      throw bad_input(at_line(path_, line_,
                              fmt::format("'{}' in column '{}' is not a number of µs from {} to {}",
                                          printable_excerpt(f), name, signed_us ? "-1e12" : "0", kMaxSavedMicrosText)));
    return v;
  }
  // A whole number up to `max`; an empty cell or no column: 0.
  std::uint64_t count(int col, const char* name, std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const {
    const std::string* cell = raw(col);
    if (cell == nullptr) return 0;
    const std::string& f = *cell;
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || end != f.data() + f.size())
      throw bad_input(
          at_line(path_, line_, fmt::format("'{}' is not a whole number in column '{}'", printable_excerpt(f), name)));
    if (v > max) throw bad_input(at_line(path_, line_, fmt::format("{} in column '{}' is more than {}", v, name, max)));
    return v;
  }
  // A text cell, as it was before the writer guarded it against spreadsheet formulas.
  std::string text(int col) const { return col < 0 ? std::string() : csv_text(fields_[static_cast<std::size_t>(col)]); }

 private:
  // The cell's text; null for no column or an empty cell.
  const std::string* raw(int col) const {
    if (col < 0 || fields_[static_cast<std::size_t>(col)].empty()) return nullptr;
    return &fields_[static_cast<std::size_t>(col)];
  }

  const std::vector<std::string>& fields_;
  const std::string& path_;
  std::uint64_t line_;
};

// One data row into `r` (reused between rows: its vectors keep their room).
void fill_row(const RowCells& cells, const std::vector<std::string>& fields, const RequestsCsvColumns& c,
              RequestRow& r) {
  constexpr auto kOverheadUs = static_cast<std::size_t>(Stage::overhead);
  r.ok = fields[c.ok] == "true";
  r.cache = c.cache < 0 ? std::optional<CacheOutcome>(CacheOutcome::none)
                        : parse_cache_column(fields[static_cast<std::size_t>(c.cache)]);
  for (std::size_t i = 0; i <= kStageCount; ++i) {
    r.us[i] = cells.micros(c.us[i], c.us_names[i], i == kOverheadUs).value_or(0);
    r.cpu_us[i] = cells.micros(c.cpu[i], c.cpu_names[i]).value_or(0);
  }
  r.has_cpu = cells.micros(c.cpu[kStageCount], c.cpu_names[kStageCount]).has_value();
  r.id = cells.count(c.id, "id");
  r.trace_line = cells.count(c.line, "line");
  r.worker = cells.count(c.worker, "worker", kMaxSavedWorkers - 1);
  r.batch = cells.count(c.batch, "batch", kMaxSavedBatch);
  r.image_bytes = cells.count(c.image_bytes, "image_bytes");
  r.image_pixels = cells.count(c.image_pixels, "image_pixels");
  r.arrival_us = cells.micros(c.arrival, "arrival_us").value_or(0);
  r.start_us = cells.micros(c.start, "start_us").value_or(0);
  r.key = cells.text(c.key);
  r.error = cells.text(c.error);
  r.model_version = cells.text(c.version);
  r.part_us.resize(c.part_us.size());
  r.part_cpu_us.resize(c.part_us.size());
  for (std::size_t k = 0; k < c.part_us.size(); ++k) {
    r.part_us[k] = cells.micros(c.part_us[k], c.part_us_names[k]).value_or(0);
    r.part_cpu_us[k] = cells.micros(c.part_cpu[k], c.part_cpu_names[k]).value_or(0);
  }
}

}  // namespace

std::uint64_t read_requests_csv(const std::string& path, const std::vector<std::string>& required,
                                const std::function<void(const RequestRow&)>& row,
                                const std::vector<std::string>& parts) {
  // A regular file (a FIFO is refused at once), read a record at a time, each under kMaxCsvRecordBytes.
  const std::unique_ptr<std::istream> in = open_regular_file(path);
  CsvReader csv(*in, path);
  std::vector<std::string> fields;
  if (!csv.next(fields)) throw bad_input(at_line(path, 1, "empty file; expected a header row"));
  const RequestsCsvColumns columns = columns_of(fields, path, required, parts);
  RequestRow r;
  std::uint64_t rows = 0;
  while (csv.next(fields)) {
    if (CsvReader::blank(fields)) continue;
    ++rows;
    r.line = csv.line();
    if (fields.size() != columns.width)
      throw bad_input(
          at_line(path, r.line, fmt::format("{} fields, expected {} as in the header", fields.size(), columns.width)));
    fill_row(RowCells(fields, path, r.line), fields, columns, r);
    row(r);
  }
  return rows;
}

}  // namespace inferprof::report
