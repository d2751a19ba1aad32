// Reading a saved run: summary.json with simdjson, requests.csv with a small
// RFC 4180 reader that finds its columns by name in the header.
#include <fmt/format.h>
#include <simdjson.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "inferprof/diff.hpp"
#include "inferprof/error.hpp"

namespace inferprof {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSchema = "inferprof.summary/1";

// Typed access with an error that names the file and the JSON path.
struct Doc {
  const std::string& file;
  Error missing(std::string_view path, std::string_view expected) const {
    return bad_input(fmt::format("{}: '{}' is missing or not {} (is this an inferprof summary.json?)", file, path,
                                 expected));
  }
  double number(simdjson::dom::element e, std::string_view path) const {
    double d = 0;
    std::int64_t i = 0;
    std::uint64_t u = 0;
    if (e.get(d) == simdjson::SUCCESS) return d;
    if (e.get(i) == simdjson::SUCCESS) return static_cast<double>(i);
    if (e.get(u) == simdjson::SUCCESS) return static_cast<double>(u);
    throw missing(path, "a number");
  }
  double number(simdjson::dom::object o, std::string_view key, std::string_view path) const {
    simdjson::dom::element e;
    if (o[key].get(e) != simdjson::SUCCESS) throw missing(path, "a number");
    return number(e, path);
  }
  // Fields added after the first release of the schema read as "" when absent.
  std::string optional_string(simdjson::dom::object o, std::string_view key) const {
    std::string_view s;
    if (o[key].get(s) != simdjson::SUCCESS) return "";
    return std::string(s);
  }
  double optional_number(simdjson::dom::object o, std::string_view key) const {
    simdjson::dom::element e;
    if (o[key].get(e) != simdjson::SUCCESS) return 0;
    return number(e, key);
  }
};

StageStats read_stage(const Doc& doc, simdjson::dom::object parent, std::string_view name, std::string_view path) {
  StageStats s;
  simdjson::dom::object o;
  if (parent[name].get(o) != simdjson::SUCCESS) throw doc.missing(path, "an object");
  bool applicable = true;
  if (o["applicable"].get(applicable) == simdjson::SUCCESS && !applicable) {
    s.applicable = false;
    return s;
  }
  const std::string p(path);
  s.count = static_cast<std::uint64_t>(doc.number(o, "count", p + ".count"));
  s.mean_us = doc.number(o, "mean_us", p + ".mean_us");
  s.p50_us = doc.number(o, "p50_us", p + ".p50_us");
  s.p90_us = doc.number(o, "p90_us", p + ".p90_us");
  s.p99_us = doc.number(o, "p99_us", p + ".p99_us");
  s.max_us = doc.number(o, "max_us", p + ".max_us");
  s.total_us = doc.optional_number(o, "total_us");
  s.share = doc.optional_number(o, "share");
  return s;
}

// One CSV record (fields may be quoted and hold commas, quotes and newlines).
// Returns false at the end of the file.
bool read_record(std::istream& in, std::vector<std::string>& fields, std::size_t& line) {
  fields.clear();
  std::string text;
  if (!std::getline(in, text)) return false;
  ++line;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0;; ++i) {
    if (i == text.size()) {
      if (!quoted) break;
      // A newline inside quotes belongs to the field.
      std::string more;
      if (!std::getline(in, more)) break;
      ++line;
      field += '\n';
      text = std::move(more);
      i = static_cast<std::size_t>(-1);
      continue;
    }
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  fields.push_back(std::move(field));
  return true;
}

void read_requests_csv(RunData& run) {
  std::ifstream in(run.csv_path, std::ios::binary);
  if (!in) throw bad_input(fmt::format("{}: cannot open ({})", run.csv_path, std::strerror(errno)));
  std::vector<std::string> fields;
  std::size_t line = 0;
  if (!read_record(in, fields, line)) throw bad_input(at_line(run.csv_path, 1, "empty file; expected a header row"));
  auto column = [&](std::string_view name) {
    for (std::size_t i = 0; i < fields.size(); ++i)
      if (fields[i] == name) return i;
    throw bad_input(at_line(run.csv_path, 1, fmt::format("no '{}' column in the header (is this an inferprof requests.csv?)", name)));
  };
  std::array<std::size_t, kStageCount + 1> cols{};
  for (std::size_t i = 0; i < kStageCount; ++i) cols[i] = column(fmt::format("{}_us", kStageNames[i]));
  cols[kStageCount] = column("total_us");
  const std::size_t ok_col = column("ok");
  const std::size_t width = fields.size();

  std::array<std::vector<double>, kStageCount + 1> all;
  while (read_record(in, fields, line)) {
    if (fields.size() == 1 && fields[0].empty()) continue;
    if (fields.size() != width)
      throw bad_input(at_line(run.csv_path, line, fmt::format("{} fields, expected {} as in the header", fields.size(), width)));
    if (fields[ok_col] != "true") continue;  // failed requests have no meaningful stage times
    for (std::size_t i = 0; i <= kStageCount; ++i) {
      const std::string& f = fields[cols[i]];
      if (f.empty()) {  // n/a (h2d/d2h on CPU)
        all[i].push_back(0);
        continue;
      }
      char* end = nullptr;
      double v = std::strtod(f.c_str(), &end);
      if (end != f.c_str() + f.size() || !std::isfinite(v))
        throw bad_input(at_line(run.csv_path, line,
                                fmt::format("'{}' is not a number of µs in column '{}'", f,
                                            i < kStageCount ? fmt::format("{}_us", kStageNames[i]) : "total_us")));
      all[i].push_back(v);
    }
  }
  run.csv_rows = all[kStageCount].size();
  // The intervals need the shape of the distribution, not every row: evenly
  // spaced rows keep the bootstrap's cost bounded on long runs (a wider,
  // conservative interval, never a narrower one).
  const std::size_t n = all[kStageCount].size();
  const std::size_t keep = std::min(n, RunData::kMaxRows);
  for (std::size_t s = 0; s <= kStageCount; ++s) {
    auto& out = run.per_request[s];
    out.clear();
    out.reserve(keep);
    for (std::size_t k = 0; k < keep; ++k) out.push_back(all[s][k * n / keep]);
  }
}

}  // namespace

RunData load_run(const std::string& path) {
  RunData run;
  std::error_code ec;
  fs::path p(path);
  if (!fs::exists(p, ec)) throw bad_input(fmt::format("{}: no such file or folder (expected a run's summary.json or its --out folder)", path));
  if (fs::is_directory(p, ec)) {
    p /= "summary.json";
    if (!fs::is_regular_file(p, ec))
      throw bad_input(fmt::format("{}: no summary.json in this folder (expected a run's --out folder)", path));
  }
  run.summary_path = p.string();
  const fs::path csv = p.parent_path() / "requests.csv";
  if (fs::is_regular_file(csv, ec)) run.csv_path = csv.string();

  simdjson::dom::parser parser;
  simdjson::padded_string text;
  if (auto err = simdjson::padded_string::load(run.summary_path).get(text))
    throw bad_input(fmt::format("{}: cannot read ({})", run.summary_path, simdjson::error_message(err)));
  simdjson::dom::element root;
  if (auto err = parser.parse(text).get(root))
    throw bad_input(fmt::format("{}: malformed JSON ({})", run.summary_path, simdjson::error_message(err)));
  const Doc doc{run.summary_path};
  simdjson::dom::object top;
  if (root.get(top) != simdjson::SUCCESS) throw doc.missing("(top level)", "an object");
  std::string_view schema;
  if (top["schema"].get(schema) != simdjson::SUCCESS || schema != kSchema)
    throw bad_input(fmt::format("{}: not an inferprof summary (schema '{}', expected '{}')", run.summary_path, schema,
                                kSchema));

  simdjson::dom::object info;
  if (top["run"].get(info) != simdjson::SUCCESS) throw doc.missing("run", "an object");
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
  run.cpu_cores = static_cast<int>(doc.optional_number(info, "cpu_cores"));
  run.threads = static_cast<int>(doc.optional_number(info, "threads"));
  run.concurrency = static_cast<int>(doc.optional_number(info, "concurrency"));
  run.limit = static_cast<std::uint64_t>(doc.optional_number(info, "limit"));

  run.requests = static_cast<std::uint64_t>(doc.number(top, "requests", "requests"));
  run.throughput_rps = doc.number(top, "throughput_rps", "throughput_rps");
  simdjson::dom::object stages;
  if (top["stages"].get(stages) != simdjson::SUCCESS) throw doc.missing("stages", "an object");
  for (std::size_t i = 0; i < kStageCount; ++i)
    run.stages[i] = read_stage(doc, stages, kStageNames[i], fmt::format("stages.{}", kStageNames[i]));
  run.stages[kStageCount] = read_stage(doc, top, "total", "total");

  simdjson::dom::array caches;
  if (top["caches"].get(caches) == simdjson::SUCCESS)
    for (simdjson::dom::element c : caches) {
      std::string_view tier;
      simdjson::dom::element ratio;
      if (c["tier"].get(tier) == simdjson::SUCCESS && c["hit_ratio"].get(ratio) == simdjson::SUCCESS)
        run.hit_ratios.emplace_back(std::string(tier), doc.number(ratio, "caches[].hit_ratio"));
    }

  if (!run.csv_path.empty()) read_requests_csv(run);
  return run;
}

}  // namespace inferprof
