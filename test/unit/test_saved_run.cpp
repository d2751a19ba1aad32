// The shared readers and writers of the base and report layers: the CSV
// reader, the saved-run reader (diff, simulate --costs and replicas read runs
// through it), the atomic file writer, and the pipeline plugin's loader.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/atomic_file.hpp"
#include "base/csv_io.hpp"
#include "inferprof/error.hpp"
#include "inferprof/pipeline.hpp"
#include "inferprof/report.hpp"
#include "plugin/plugin_api.hpp"
#include "report/saved_run.hpp"
#include "temp_dir.hpp"

using namespace inferprof;
using inferprof::testing::TempDir;
namespace fs = std::filesystem;

TEST_SUITE("saved run") {
  TEST_CASE("csv reader: quoted commas, quotes and newlines, CRLF, line numbers") {
    std::istringstream in("a,b,c\r\n\"x,1\",\"say \"\"hi\"\"\",\"two\nlines\"\r\n\n  \nlast,,\n");
    report::CsvReader csv(in, "f.csv");
    std::vector<std::string> f;
    REQUIRE(csv.next(f));
    CHECK(f == std::vector<std::string>{"a", "b", "c"});
    CHECK(csv.line() == 1);
    REQUIRE(csv.next(f));
    CHECK(f == std::vector<std::string>{"x,1", "say \"hi\"", "two\nlines"});
    CHECK(csv.line() == 2);
    REQUIRE(csv.next(f));
    CHECK(report::CsvReader::blank(f));
    REQUIRE(csv.next(f));
    CHECK(report::CsvReader::blank(f));
    REQUIRE(csv.next(f));
    CHECK(f == std::vector<std::string>{"last", "", ""});
    CHECK(csv.line() == 6);  // the quoted newline counted
    CHECK_FALSE(csv.next(f));
    CHECK(report::CsvReader::column({"a", "b"}, "b") == 1);
    CHECK(report::CsvReader::column({"a", "b"}, "c") == -1);

    std::istringstream open("k\n\"never closed\nstill\n");
    report::CsvReader bad(open, "t.csv");
    REQUIRE(bad.next(f));
    CHECK_THROWS_WITH(bad.next(f), "t.csv:2: unterminated quote");
  }

  TEST_CASE("saved run: complete for diff, partial for costs and replicas") {
    TempDir dir;
    dir.write("run/summary.json",
              R"({"schema": "inferprof.summary/1", "stages": {"input": {"mean_us": 10}}, "total": {"mean_us": 100},
                  "served_by": [{"outcome": "miss", "requests": 4, "mean_us": 90}],
                  "caches": [{"tier": "l1", "entries": 2, "bytes": 200, "hit_ratio": 0.5}],
                  "updates": [{"to_version": "v2", "live_unix_ms": null, "stalled": 3, "stall_ms": 1.5}]})");
    CHECK_THROWS_WITH(report::read_saved_run(dir.file("run")), doctest::Contains("'run' is missing or not an object"));
    report::SavedRun r = report::read_saved_run(dir.file("run"), report::SummaryCheck::partial);
    CHECK(r.summary_path == dir.file("run/summary.json"));
    CHECK(r.csv_path.empty());
    CHECK(r.has_stage[static_cast<std::size_t>(Stage::input)]);
    CHECK_FALSE(r.has_stage[static_cast<std::size_t>(Stage::compute)]);
    CHECK(r.has_stage[kStageCount]);
    CHECK(r.stages[kStageCount].mean_us == 100);
    REQUIRE(r.served_by.size() == 1);
    CHECK(r.served_by[0].mean_us == 90);
    REQUIRE(r.caches.size() == 1);
    CHECK(r.caches[0].hit_ratio.value_or(0) == 0.5);
    CHECK(r.caches[0].bytes == 200);
    REQUIRE(r.updates.size() == 1);
    CHECK(r.updates[0].live_unix_ms == -1);
    CHECK(r.updates[0].stalled == 3);

    dir.write("bad/summary.json", R"({"schema": "other/1"})");
    CHECK_THROWS_WITH(
        report::read_saved_run(dir.file("bad"), report::SummaryCheck::partial),
        (dir.file("bad/summary.json") + ": not an inferprof summary (schema 'other/1', expected 'inferprof.summary/1')")
            .c_str());
  }

  TEST_CASE("requests.csv: columns by name, required ones named when missing") {
    TempDir dir;
    const std::string path = dir.write("requests.csv",
                                       "seq,total_us,compute_us,h2d_us,cache,ok\n"
                                       "0,20.5,10,,l1_hit,true\n"
                                       "1,7,x,,miss,false\n");
    std::vector<report::RequestRow> rows;
    CHECK_THROWS_WITH(
        report::read_requests_csv(path, {}, [&](const report::RequestRow& r) { rows.push_back(r); }),
        (path + ":3: 'x' in column 'compute_us' is not a number of µs from 0 to 1e12 (about 11.6 days)").c_str());
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].ok);
    CHECK(rows[0].cache == CacheOutcome::l1_hit);
    CHECK(rows[0].us[kStageCount] == 20.5);
    CHECK(rows[0].us[static_cast<std::size_t>(Stage::compute)] == 10);
    CHECK(rows[0].us[static_cast<std::size_t>(Stage::input)] == 0);  // no such column
    CHECK_THROWS_WITH(report::read_requests_csv(path, {"input_us"}, [](const report::RequestRow&) {}),
                      (path + ":1: no 'input_us' column in the header (is this an inferprof requests.csv?)").c_str());
  }

  TEST_CASE("saved run: the preprocess stage's ops, from summary.json and requests.csv") {
    TempDir dir;
    dir.write("run/summary.json",
              R"({"schema": "inferprof.summary/1", "total": {"mean_us": 100},
                  "stages": {"preprocess": {"mean_us": 60, "ops": {"decode": {"mean_us": 20, "cpu_mean_us": 15,
                  "cpu_p50_us": 14, "cpu_p99_us": 30}, "resize": {"mean_us": 35}}}}})");
    const report::SavedRun r = report::read_saved_run(dir.file("run"), report::SummaryCheck::partial);
    REQUIRE(r.preprocess_ops.size() == 2);
    CHECK(r.preprocess_ops[0].name == "preprocess.decode");
    CHECK(r.preprocess_ops[0].stats.cpu_p99_us == 30);
    CHECK(r.preprocess_ops[1].name == "preprocess.resize");
    CHECK(r.preprocess_ops[1].stats.mean_us == 35);
    CHECK_FALSE(r.preprocess_ops[1].stats.cpu);

    const std::string path = dir.write("requests.csv",
                                       "total_us,ok,cpu_us,preprocess.resize_us,preprocess.resize_cpu_us\n"
                                       "20,true,15,7.5,6\n"
                                       "30,true,,0,\n");
    std::vector<report::RequestRow> rows;
    report::read_requests_csv(path, {}, [&](const report::RequestRow& row) { rows.push_back(row); },
                              {"preprocess.resize", "preprocess.x"});
    REQUIRE(rows.size() == 2);
    REQUIRE(rows[0].part_us.size() == 2);
    CHECK(rows[0].part_us[0] == 7.5);
    CHECK(rows[0].part_cpu_us[0] == 6);
    CHECK(rows[0].part_us[1] == 0);  // no such column
    CHECK_FALSE(rows[1].has_cpu);
  }

  TEST_CASE("atomic writer: the whole file or the old one, no temporary left") {
    TempDir dir;
    write_file_atomic(dir.path().string(), "a.txt", "first");
    write_file_atomic(dir.path().string(), "a.txt", "second");
    std::ifstream in(dir.file("a.txt"));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text == "second");
    CHECK(dir.list() == std::vector<std::string>{"a.txt"});

    // A file left uncommitted leaves nothing; a path's folder and name are split.
    {
      report::TempFile f;
      f.open(dir.file("b.bin"));
      f.write("partial");
    }
    CHECK(dir.list() == std::vector<std::string>{"a.txt"});
    report::TempFile g;
    g.open(dir.file("c.bin"));
    g.write("done");
    g.rename_into_place();
    CHECK(fs::file_size(dir.file("c.bin")) == 4);
  }

  TEST_CASE("plugin: a process linked with the pipeline library uses it, of its own build") {
    const plugin::Api& api = plugin::api();
    CHECK(api.abi == plugin::kAbi);
    CHECK(api.layout == plugin::kLayout);
    CHECK(std::string(api.version) == INFERPROF_TEST_VERSION);
    CHECK_FALSE(libtorch_version().empty());
    const std::vector<std::string> where = plugin::plugin_candidates();
    REQUIRE(where.size() == 2);
    CHECK(fs::path(where[0]).filename() == plugin::kFileName);
    CHECK(fs::path(where[0]).parent_path() == fs::canonical("/proc/self/exe").parent_path());
  }
}
