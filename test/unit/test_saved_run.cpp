// The shared readers and writers of the base and report layers: the CSV
// reader, the saved-run reader (diff, simulate --costs and replicas read runs
// through it), the atomic file writer, and the pipeline plugin's loader.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

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

  TEST_CASE("requests.csv: every µs cell a number from 0 to 1e12 (overhead from -1e12), naming file, line, column") {
    TempDir dir;
    const std::string header = "seq,worker,arrival_us,start_us,total_us,compute_us,overhead_us,cpu_us,ok,batch\n";
    const std::string good = "0,0,0,0,20,10,-0.004,5,true,1\n";
    const auto read = [&](const std::string& row) {
      const std::string path = dir.write("requests.csv", header + good + row);
      return report::read_requests_csv(path, {}, [](const report::RequestRow&) {});
    };
    // At the bounds: read. overhead_us may be a few ns below 0 (stages that overlap), down to -1e12.
    CHECK(read("1,65535,1e12,1e12,1e12,1e12,-1e12,1e12,true,4096\n") == 2);
    const std::string path = dir.file("requests.csv");
    for (const auto& [row, cell, column] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"1,0,0,0,1e300,0,0,,true,1\n", "1e300", "total_us"},
             {"1,0,0,0,-5,0,0,,true,1\n", "-5", "total_us"},
             {"1,0,0,0,1000000000001,0,0,,true,1\n", "1000000000001", "total_us"},
             {"1,0,0,0,inf,0,0,,true,1\n", "inf", "total_us"},
             {"1,0,0,0,nan,0,0,,true,1\n", "nan", "total_us"},
             {"1,0,0,0,1,-0.5,0,,true,1\n", "-0.5", "compute_us"},
             {"1,0,0,0,1,0,-2e12,,true,1\n", "-2e12", "overhead_us"},
             {"1,0,0,0,1,0,0,-1,true,1\n", "-1", "cpu_us"},
             {"1,0,-1,0,1,0,0,,true,1\n", "-1", "arrival_us"},
             {"1,0,0,1e15,1,0,0,,true,1\n", "1e15", "start_us"}}) {
      CAPTURE(row);
      CHECK_THROWS_WITH_AS(read(row),
                           (path + ":3: '" + cell + "' in column '" + column + "' is not a number of µs from " +
                            (column == "overhead_us" ? "-1e12" : "0") + " to 1e12 (about 11.6 days)")
                               .c_str(),
                           Error);
    }
    // A worker or a batch past what a run has: refused before anything is sized by it.
    CHECK_THROWS_WITH(read("1,65536,0,0,1,0,0,,true,1\n"),
                      (path + ":3: 65536 in column 'worker' is more than 65535").c_str());
    CHECK_THROWS_WITH(read("1,0,0,0,1,0,0,,true,4097\n"),
                      (path + ":3: 4097 in column 'batch' is more than 4096").c_str());
    // A cell is quoted at most 200 bytes long, whatever its length.
    try {
      read("1,0,0,0," + std::string(100000, '7') + "x,0,0,,true,1\n");
      FAIL("a 100,000-digit cell was read");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::bad_input);
      CHECK(std::string_view(e.what()).size() < path.size() + 320);
    }
  }

  TEST_CASE("summary.json: every figure within its bound before it is used, a count before it is cast") {
    TempDir dir;
    const auto summary = [&](const std::string& requests, const std::string& run, const std::string& total) {
      dir.write("run/summary.json", R"({"schema": "inferprof.summary/1", "requests": )" + requests +
                                        R"(, "throughput_rps": 1, "run": {)" + run + R"(}, "total": {)" + total + "}}");
      return report::read_saved_run(dir.file("run"), report::SummaryCheck::partial);
    };
    const std::string file = dir.file("run/summary.json");
    CHECK(summary("10", R"("replica": {"index": 1, "count": 2}, "max_batch": 4096)", R"("mean_us": 5)").requests == 10);
    CHECK(summary("10", R"("replica": {"index": -1, "count": 2})", R"("mean_us": 5)").replica.index == -1);  // merged
    CHECK_THROWS_WITH(summary("1e300", "", ""),
                      (file + ": 'requests' is 1e+300, expected a whole number from 0 to 1e+15").c_str());
    CHECK_THROWS_WITH(summary("1.5", "", ""),
                      (file + ": 'requests' is 1.5, expected a whole number from 0 to 1e+15").c_str());
    CHECK_THROWS_WITH(summary("1", R"("replica": {"index": 0, "count": 10000000})", ""),
                      (file + ": 'run.replica.count' is 10000000, expected a whole number from 1 to 65536").c_str());
    CHECK_THROWS_WITH(summary("1", R"("replica": {"index": 2, "count": 2})", ""),
                      (file + ": 'run.replica.index' is 2, expected a whole number from -1 to 1").c_str());
    CHECK_THROWS_WITH(summary("1", R"("max_batch": 10000000)", ""),
                      (file + ": 'run.max_batch' is 10000000, expected a whole number from 0 to 4096").c_str());
    CHECK_THROWS_WITH(summary("1", R"("concurrency": 1e300)", ""), doctest::Contains("'run.concurrency' is 1e+300"));
    CHECK_THROWS_WITH(
        summary("1", "", R"("mean_us": -4.6e13)"),
        (file + ": 'total.mean_us' is -46000000000000, expected µs from 0 to 1e12 (about 11.6 days)").c_str());
    CHECK_THROWS_WITH(summary("1", "", R"("p50_us": -5)"), doctest::Contains("'total.p50_us' is -5, expected µs"));
    // Each preprocess op is two histograms of a merge: their number is bounded as a count is.
    std::string ops;
    for (int i = 0; i < 300; ++i)
      ops += fmt::format("{}\"op{}\": {{\"applicable\": false}}", i ? ", " : "", i);
    dir.write("ops/summary.json", R"({"schema": "inferprof.summary/1", "requests": 1, "throughput_rps": 1,
                                      "stages": {"preprocess": {"mean_us": 1, "ops": {)" +
                                      ops + "}}}}");
    CHECK_THROWS_WITH(
        report::read_saved_run(dir.file("ops"), report::SummaryCheck::partial),
        (dir.file("ops/summary.json") + ": 'stages.preprocess.ops' has 300 ops, expected at most 256").c_str());
    // A string from a saved run is printable: no escape sequence reaches a terminal.
    CHECK(summary("1", R"("hostname": "\u001b[2Jhost\u202e", "model_arch": "a\nb")", "").hostname ==
          "\\x1b[2Jhost\\u202e");
  }

  TEST_CASE("saved run: a FIFO is refused at once, a summary.json over 64 MiB before it is read") {
    TempDir dir;
    const std::string fifo = dir.file("fifo");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    // Nothing writes to it: a reader that opened it waiting would hang here.
    CHECK_THROWS_WITH_AS(report::read_saved_run(fifo), (fifo + ": not a regular file").c_str(), Error);
    fs::create_directories(dir.file("run"));
    REQUIRE(::mkfifo(dir.file("run/summary.json").c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(report::read_saved_run(dir.file("run")),
                         (dir.file("run/summary.json") + ": not a regular file").c_str(), Error);
    CHECK_THROWS_WITH_AS(report::read_requests_csv(fifo, {}, [](const report::RequestRow&) {}),
                         (fifo + ": not a regular file").c_str(), Error);
    // A sparse file: its size is refused before a byte is read or allocated.
    dir.write("big/summary.json", "{}");
    fs::resize_file(dir.file("big/summary.json"), report::kMaxSummaryBytes + 1);
    CHECK_THROWS_WITH_AS(report::read_saved_run(dir.file("big")),
                         (dir.file("big/summary.json") + ": 67108865 bytes, more than the 67108864 expected").c_str(),
                         Error);
  }

  TEST_CASE("csv reader: a record over the cap is refused at the cap, naming its line, not buffered whole") {
    std::vector<std::string> f;
    // A header with no newline, as a 300 MB one: refused at 1 MiB, and the message is one short line.
    std::istringstream header("a," + std::string(3 << 20, 'b'));
    report::CsvReader csv(header, "r.csv");
    CHECK_THROWS_WITH_AS(csv.next(f),
                         "r.csv:1: a record longer than 1,048,576 bytes (expected a CSV of rows under that)", Error);
    // A quoted cell whose lines are each short, but together over the cap.
    std::string quoted = "k\nok\n\"";
    for (int i = 0; i < 2000; ++i)
      quoted += std::string(1000, 'x') + "\n";
    std::istringstream in(quoted + "\"\n");
    report::CsvReader lines(in, "q.csv");
    REQUIRE(lines.next(f));
    REQUIRE(lines.next(f));
    CHECK_THROWS_WITH_AS(lines.next(f),
                         "q.csv:3: a record longer than 1,048,576 bytes (expected a CSV of rows under that)", Error);
    // Under the cap: read.
    std::istringstream small("a\n" + std::string(1000, 'z') + "\n");
    report::CsvReader ok(small, "s.csv", 1001);
    REQUIRE(ok.next(f));
    REQUIRE(ok.next(f));
    CHECK(f[0].size() == 1000);
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
