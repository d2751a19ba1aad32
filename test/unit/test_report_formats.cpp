// The --format factory (report/format.hpp) over every result type: each
// format a result advertises renders through the reporter that format names,
// as what that format is (JSON that parses with its schema, CSV whose rows
// have the header's width, a markdown table, the table for people); a format
// it does not advertise is bad input naming those it has.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "base/csv_io.hpp"
#include "diff_runs.hpp"
#include "inferprof/compare.hpp"
#include "inferprof/diff.hpp"
#include "inferprof/error.hpp"
#include "inferprof/replicas.hpp"
#include "inferprof/report.hpp"
#include "inferprof/simulate.hpp"
#include "report/format.hpp"
#include "temp_dir.hpp"

using namespace inferprof;
using inferprof::testing::run_of;
using inferprof::testing::TempDir;
using report::Format;

namespace {

StageStats stage(double mean_us) {
  StageStats s;
  s.count = 2;
  s.mean_us = mean_us;
  s.p50_us = mean_us;
  s.p90_us = mean_us * 1.5;
  s.p99_us = s.max_us = mean_us * 2;
  s.min_us = mean_us / 2;
  s.total_us = mean_us * 2;
  s.share = 0.5;
  return s;
}

RunSummary sample_run() {
  RunSummary s;
  s.info.model_path = "/models/mlp.pt";
  s.info.trace_path = "/traces/t.jsonl";
  s.info.wall_s = 0.01;
  s.requests = 2;
  for (std::size_t i = 0; i < kStageCount; ++i)
    s.stages[i] = stage(10.0 * static_cast<double>(i + 1));
  s.total = stage(450);
  s.throughput_rps = 200;
  CacheTierReport l1;
  l1.spec.tier = CacheLevel::l1;
  l1.spec.max_entries = 100;
  l1.where = "in-process";
  l1.stats.lookups = 2;
  l1.stats.hits = 1;
  l1.stats.misses = 1;
  s.caches = {l1};
  s.outcomes = {{CacheOutcome::l1_hit, 1, 5, 5, 5}, {CacheOutcome::miss, 1, 900, 900, 900}};
  return s;
}

CompareResult sample_compare() {
  CompareResult r;
  r.mode = CompareMode::lockstep;
  for (const char* name : {"none", "l1"}) {
    CompareRow row;
    row.name = name;
    row.last = sample_run();
    if (row.name == "none") {
      row.last.caches.clear();
      row.last.outcomes.clear();
    } else {
      row.tiers = {row.last.caches[0].spec};
      row.outcome_costs = row.last.outcomes;
    }
    row.mean_us = row.name == "none" ? 900 : 450;
    row.means_us = {row.mean_us};
    row.mean_speedup = row.wall_speedup = {2, 1.8, 2.2, false};
    r.rows.push_back(row);
  }
  return r;
}

SimulateResult sample_simulation(const TempDir& dir) {
  std::string trace;
  for (const char* key : {"a", "b", "a", "c", "a", "b"})
    trace += fmt::format("{{\"key\": \"{}\", \"input\": {{\"seed\": 1}}}}\n", key);
  SimulateConfig c;
  c.trace_path = dir.write("t.jsonl", trace);
  c.tiers = {parse_tier_spec("l1", "lru:2", "test")};
  c.mrc = {parse_mrc_spec("l1=lru:1,2,3", 30)};
  return run_simulate(c);
}

ReplicaSummary sample_replicas() {
  ReplicaSummary s;
  s.split = "rr";
  for (int i = 0; i < 2; ++i) {
    ReplicaResult r;
    r.index = i;
    r.requests = 10;
    r.mean_us = 100 + i;
    s.replicas.push_back(r);
  }
  s.requests = 20;
  s.updates = {{"v2", 2, 1.5, 0, 0, 0}};
  return s;
}

DiffResult sample_diff() {
  DiffConfig c;
  c.gates = "total.p99=10%";
  return diff_runs(run_of({100, 110, 120, 130}), run_of({100, 112, 121, 129}), c);
}

// What each format must be, whatever the result.
void check_is_json(const std::string& text, std::string_view schema) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(parser.parse(text).get(doc) == simdjson::SUCCESS);
  std::string_view got;
  REQUIRE(doc["schema"].get(got) == simdjson::SUCCESS);
  CHECK(got == schema);
}

void check_is_csv(const std::string& text, std::string_view first_column) {
  std::istringstream in(text);
  report::CsvReader csv(in, "rendered");
  std::vector<std::string> header, fields;
  REQUIRE(csv.next(header));
  CHECK(header[0] == first_column);
  std::size_t rows = 0;
  while (csv.next(fields)) {
    CAPTURE(csv.line());
    CHECK(fields.size() == header.size());
    ++rows;
  }
  CHECK(rows > 0);
}

void check_is_markdown(const std::string& text) {
  // A table: a row of cells, then the separator row under its header.
  const auto sep = text.find("\n|");
  REQUIRE(sep != std::string::npos);
  const auto next = text.find('\n', sep + 1);
  REQUIRE(next != std::string::npos);
  const std::string separator = text.substr(next + 1, 2);
  CHECK((separator == "|:" || separator == "|-"));
}

struct Expected {
  std::vector<std::string> formats;  // what --format advertises, in order
  std::string_view what;             // names the result in errors
  std::string_view headline;         // the table's first words
  std::string_view schema;           // the JSON's "schema"
  std::string_view csv_first_column;
};

template <class Result>
void check_reporters(const Result& r, const Expected& e,
                     const std::vector<std::pair<Format, std::string (*)(const Result&)>>& named) {
  CHECK(report::reporters<Result>().names() == e.formats);
  for (Format f : report::kFormats) {
    const std::string name(report::format_name(f));
    CAPTURE(name);
    const bool advertised = std::find(e.formats.begin(), e.formats.end(), name) != e.formats.end();
    if (!advertised) {
      std::string list;
      for (const auto& n : e.formats)
        list += (list.empty() ? "" : ", ") + n;
      CHECK_THROWS_WITH_AS(report::render(f, r, e.what),
                           fmt::format("--format {}: {} has no {} form; use {}", name, e.what, name, list).c_str(),
                           Error);
      try {
        report::render(f, r, e.what);
      } catch (const Error& err) {
        CHECK(err.code() == ExitCode::bad_input);  // exit 2
      }
      continue;
    }
    const std::string text = report::render(f, r, e.what);
    REQUIRE_FALSE(text.empty());
    // The reporter the format names, not another format's.
    for (const auto& [format, fn] : named)
      if (format == f) CHECK(text == fn(r));
    switch (f) {
      case Format::table:
        CHECK(text.rfind(e.headline, 0) == 0);
        CHECK(text.find("\n|") == std::string::npos);
        break;
      case Format::json:
        check_is_json(text, e.schema);
        break;
      case Format::csv:
        check_is_csv(text, e.csv_first_column);
        break;
      case Format::markdown:
        check_is_markdown(text);
        break;
    }
  }
}

const std::vector<std::string> kAll = {"table", "json", "csv", "markdown"};

}  // namespace

TEST_SUITE("report formats") {
  TEST_CASE("parse_format knows every format by its name and nothing else") {
    for (Format f : report::kFormats)
      CHECK(report::parse_format(report::format_name(f)) == f);
    CHECK_FALSE(report::parse_format("xml").has_value());
    CHECK_FALSE(report::parse_format("").has_value());
    CHECK_FALSE(report::parse_format("JSON").has_value());
  }

  TEST_CASE("a run renders in every format it advertises") {
    check_reporters(sample_run(), {kAll, "a run", "inferprof run", "inferprof.summary/1", "stage"},
                    {{Format::table, render_table},
                     {Format::json, render_summary_json},
                     {Format::csv, render_stages_csv},
                     {Format::markdown, render_markdown}});
  }

  TEST_CASE("a comparison renders in every format it advertises") {
    check_reporters(sample_compare(), {kAll, "a comparison", "inferprof compare", "inferprof.compare/1", "config"},
                    {{Format::table, render_compare_table},
                     {Format::json, render_compare_json},
                     {Format::csv, render_compare_csv},
                     {Format::markdown, render_compare_markdown}});
  }

  TEST_CASE("a simulation renders in every format it advertises") {
    TempDir dir;
    const SimulateResult r = sample_simulation(dir);
    REQUIRE(r.configurations.size() == 1);
    check_reporters(r, {kAll, "a simulation", "inferprof simulate", "inferprof.simulate/1", "config"},
                    {{Format::table, render_simulate_table},
                     {Format::json, render_simulate_json},
                     {Format::csv, render_simulate_csv},
                     {Format::markdown, render_simulate_markdown}});
  }

  TEST_CASE("the replica table renders in every format it advertises") {
    check_reporters(sample_replicas(), {kAll, "the replica table", "inferprof run", "inferprof.replicas/1", "replica"},
                    {{Format::table, render_replicas_table},
                     {Format::json, render_replicas_json},
                     {Format::csv, render_replicas_csv},
                     {Format::markdown, render_replicas_markdown}});
  }

  TEST_CASE("a diff renders in every format it advertises, and CSV is an error naming the others") {
    const DiffResult r = sample_diff();
    REQUIRE(r.gated == 1);
    check_reporters(r, {{"table", "json", "markdown"}, "a diff", "inferprof diff", "inferprof.diff/1", ""},
                    {{Format::table, render_diff_table},
                     {Format::json, render_diff_json},
                     {Format::markdown, render_diff_markdown}});
    CHECK_THROWS_WITH_AS(report::require_format<DiffResult>(Format::csv, "a diff"),
                         "--format csv: a diff has no csv form; use table, json, markdown", Error);
  }
}  // TEST_SUITE
