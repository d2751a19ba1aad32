// The merge module on hand-written run folders (the end-to-end tests merge
// real replicas: test/e2e/test_cli_merge.cpp), and the sharding rule it
// shares with the replay.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "inferprof/error.hpp"
#include "inferprof/merge.hpp"
#include "inferprof/trace.hpp"
#include "report/saved_run.hpp"
#include "temp_dir.hpp"

using namespace inferprof;
using inferprof::testing::TempDir;
namespace fs = std::filesystem;

namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// A replica's folder: a summary naming its place in a group of `count`, and
// one requests.csv row per (trace line, key, total µs).
struct Row {
  int line;
  std::string key;
  double total_us;
};
std::string replica(const TempDir& dir, int index, int count, const std::vector<Row>& rows, const std::string& trace,
                    double epoch_ms = 1e12, const std::string& model = "xxh3:1") {
  const std::string folder = dir.file(fmt::format("replica-{}", index));
  fs::create_directories(folder);
  write(folder + "/summary.json", fmt::format(R"({{"schema": "inferprof.summary/1", "requests": {}, "throughput_rps": 1,
  "run": {{"model_hash": "{}", "trace_hash": "xxh3:2", "trace_path": "{}", "hostname": "host-{}",
          "profile_name": "default", "device": "cpu", "concurrency": 1, "epoch_unix_ms": {},
          "replica": {{"index": {}, "count": {}, "shard_by": "rr", "group": "g"}}}}}})",
                                              rows.size(), model, trace, index, epoch_ms, index, count));
  std::string csv = "seq,id,line,key,worker,arrival_us,start_us,total_us,compute_us,overhead_us,cache,ok,error\n";
  for (std::size_t i = 0; i < rows.size(); ++i)
    csv += fmt::format("{},{},{},{},0,{}.000,{}.000,{:.3f},{:.3f},0.000,none,true,\n", i, rows[i].line, rows[i].line,
                       rows[i].key, i * 100, i * 100, rows[i].total_us, rows[i].total_us);
  write(folder + "/requests.csv", csv);
  return folder;
}

// A trace of `n` requests, one line each, key "k<line % 7>".
std::string trace_of(const TempDir& dir, int n) {
  std::string text;
  for (int i = 1; i <= n; ++i)
    text += fmt::format(R"({{"id": {}, "key": "k{}", "input": {{"shape": [1, 4], "seed": {}}}}})", i, i % 7, i) + "\n";
  const std::string path = dir.file("t.jsonl");
  write(path, text);
  return path;
}

}  // namespace

TEST_SUITE("merge") {
  TEST_CASE("shard_of: round-robin deals in turn, by key keeps each key on one replica") {
    for (std::uint64_t n = 0; n < 12; ++n)
      CHECK(shard_of(false, "any", n, 4) == static_cast<int>(n % 4));
    std::map<int, int> per_shard;
    for (int k = 0; k < 4000; ++k) {
      const std::string key = fmt::format("user-{}", k);
      const int s = shard_of(true, key, static_cast<std::uint64_t>(k), 4);
      CHECK(s == shard_of(true, key, 999, 4));  // the position does not matter, the key does
      ++per_shard[s];
    }
    for (const auto& [shard, n] : per_shard)
      CHECK(std::abs(n - 1000) < 150);  // a hash spreads keys evenly
    CHECK(shard_of(true, "x", 5, 1) == 0);
  }

  TEST_CASE("the merged percentiles are the union's, and each replica's share is counted from the trace") {
    TempDir dir;
    const std::string trace = trace_of(dir, 6);
    // Round-robin over 2: replica 0 has lines 1, 3, 5 and replica 1 lines 2, 4, 6.
    const std::string a = replica(dir, 0, 2, {{1, "k1", 10}, {3, "k3", 30}, {5, "k5", 50}}, trace);
    const std::string b = replica(dir, 1, 2, {{2, "k2", 20}, {4, "k4", 40}, {6, "k6", 60}}, trace, 1e12 + 5);
    MergeOptions o;
    o.dirs = {b, a};  // any order
    const MergeResult r = merge_runs(o);
    CHECK(r.run.requests == 6);
    CHECK(r.run.total.p50_us == doctest::Approx(30));  // nearest rank over 10..60
    CHECK(r.run.total.max_us == doctest::Approx(60));
    CHECK(r.run.total.mean_us == doctest::Approx(35));
    CHECK(r.run.info.merged_from == 2);
    CHECK(r.run.info.hostname == "host-0, host-1");
    // Replica 1 started 5 ms later: its last request ends 5.2 ms + 60 µs after replica 0's start.
    CHECK(r.run.info.wall_s == doctest::Approx((5000 + 200 + 60) / 1e6));
    REQUIRE(r.replicas.replicas.size() == 2);
    CHECK(r.replicas.replicas[0].share == 3);
    CHECK(r.replicas.replicas[1].share == 3);
    CHECK(r.replicas.lost == 0);
    CHECK(r.replicas.duplicated == 0);
    CHECK(r.replicas.failed == 0);
  }

  TEST_CASE("a replica missing, a request missing, a line served twice: counted, not hidden") {
    TempDir dir;
    const std::string trace = trace_of(dir, 9);
    // 3 replicas: replica 1 left nothing; replica 2 lacks line 9 and served line 1 as well.
    const std::string a = replica(dir, 0, 3, {{1, "k1", 10}, {4, "k4", 40}, {7, "k0", 70}}, trace);
    const std::string c = replica(dir, 2, 3, {{3, "k3", 30}, {6, "k6", 60}, {1, "k1", 11}}, trace);
    MergeOptions o;
    o.dirs = {a, c};
    const MergeResult r = merge_runs(o);
    CHECK(r.replicas.failed == 1);
    CHECK(r.replicas.replicas[1].status == "no report");
    CHECK(r.replicas.duplicated == 1);
    CHECK(r.replicas.lost == 3 + 1);  // replica 1's share, and line 9
    CHECK(r.run.requests == 6);
  }

  TEST_CASE("runs that are not one run's replicas are refused, naming the folder") {
    TempDir dir;
    const std::string trace = trace_of(dir, 4);
    const std::string a = replica(dir, 0, 2, {{1, "k1", 10}}, trace);
    const std::string other = replica(dir, 1, 2, {{2, "k2", 20}}, trace, 1e12, "xxh3:other");
    MergeOptions o;
    o.dirs = {a, other};
    try {
      merge_runs(o);
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::bad_input);
      CHECK(std::string(e.what()).find(other + ": model xxh3:other differs from") == 0);
    }
    o.dirs = {a, a};
    CHECK_THROWS_WITH_AS(merge_runs(o), doctest::Contains("replica 0 is also"), Error);
  }

  TEST_CASE(
      "each replica's requests are the rows read: a requests.csv cut short, or a summary claiming more, is refused") {
    TempDir dir;
    const std::string trace = trace_of(dir, 6);
    const std::string a = replica(dir, 0, 2, {{1, "k1", 10}, {3, "k3", 30}, {5, "k5", 50}}, trace);
    const std::string b = replica(dir, 1, 2, {{2, "k2", 20}, {4, "k4", 40}, {6, "k6", 60}}, trace);
    MergeOptions o;
    o.dirs = {a, b};
    CHECK(merge_runs(o).replicas.replicas[1].requests == 3);
    // A summary that claims a billion requests (it printed "1,000,000,003 requests · 0 lost").
    std::string text;
    std::getline(std::ifstream(b + "/summary.json"), text, '\0');
    const std::string claimed = text.replace(text.find(R"("requests": 3)"), 13, R"("requests": 1000000000)");
    write(b + "/summary.json", claimed);
    CHECK_THROWS_WITH_AS(merge_runs(o),
                         (b + "/requests.csv: 3 requests (rows), but " + b +
                          "/summary.json says 1,000,000,000: a requests.csv holds every request of its run (cut short, "
                          "or not this run's?)")
                             .c_str(),
                         Error);
    // A requests.csv cut to one of its three rows.
    const std::string c = replica(dir, 1, 2, {{2, "k2", 20}, {4, "k4", 40}, {6, "k6", 60}}, trace);
    std::string csv;
    std::getline(std::ifstream(c + "/requests.csv"), csv, '\0');
    write(c + "/requests.csv", csv.substr(0, csv.find('\n', csv.find('\n') + 1) + 1));
    CHECK_THROWS_WITH_AS(merge_runs(o), doctest::Contains("requests.csv: 1 requests (rows), but "), Error);
    CHECK_THROWS_WITH_AS(merge_runs(o), doctest::Contains("/summary.json says 3:"), Error);
  }

  TEST_CASE("replicas of one run agree on group, shard_by, limit, model sha256 and start together: else refused") {
    TempDir dir;
    const std::string trace = trace_of(dir, 4);
    const std::string a = replica(dir, 0, 2, {{1, "k1", 10}}, trace);
    const std::string b = replica(dir, 1, 2, {{2, "k2", 20}}, trace);
    std::string text;
    std::getline(std::ifstream(b + "/summary.json"), text, '\0');
    MergeOptions o;
    o.dirs = {a, b};
    CHECK(merge_runs(o).run.requests == 2);
    const auto with = [&](const std::string& from, const std::string& to) {
      std::string changed = text;
      REQUIRE(changed.find(from) != std::string::npos);
      changed.replace(changed.find(from), from.size(), to);
      write(b + "/summary.json", changed);
    };
    const std::string tail = a + "'s ";
    with(R"("group": "g")", R"("group": "other")");
    CHECK_THROWS_WITH_AS(merge_runs(o),
                         (b + ": group other differs from " + a + "'s g: merge joins the replicas of one run").c_str(),
                         Error);
    with(R"("shard_by": "rr")", R"("shard_by": "hash")");
    CHECK_THROWS_WITH_AS(
        merge_runs(o), (b + ": shard_by hash differs from " + tail + "rr: merge joins the replicas of one run").c_str(),
        Error);
    with(R"("concurrency": 1,)", R"("concurrency": 1, "limit": 7,)");
    CHECK_THROWS_WITH_AS(merge_runs(o),
                         (b + ": limit 7 differs from " + tail + "0: merge joins the replicas of one run").c_str(),
                         Error);
    with(R"("concurrency": 1,)", R"("concurrency": 1, "model_sha256": "ab12",)");
    std::string first;
    std::getline(std::ifstream(a + "/summary.json"), first, '\0');
    write(a + "/summary.json",
          first.replace(first.find(R"("concurrency": 1,)"), 17, R"("concurrency": 1, "model_sha256": "cd34",)"));
    CHECK_THROWS_WITH_AS(
        merge_runs(o),
        (b + ": model sha256 ab12 differs from " + tail + "cd34: merge joins the replicas of one run").c_str(), Error);
    // Replicas of one run start together: one 20 days later is not one of them.
    const std::string late = replica(dir, 1, 2, {{2, "k2", 20}}, trace, 1e12 + 20 * 86400e3);
    const std::string early = replica(dir, 0, 2, {{1, "k1", 10}}, trace);
    o.dirs = {early, late};
    CHECK_THROWS_WITH_AS(merge_runs(o),
                         (late + ": started 1728000000 ms after " + early +
                          ", more than 1000000000 ms (about 11.6 days): merge joins the replicas of one run")
                             .c_str(),
                         Error);
    o.dirs = {a};
    o.replicas = 10000000;
    CHECK_THROWS_WITH_AS(merge_runs(o), "--replicas 10000000: at most 65536", Error);
  }

  TEST_CASE("rows at the bound, as many as a run holds: the merged sums cannot overflow") {
    TempDir dir;
    const std::string trace = trace_of(dir, 4);
    // 10,000 requests of 1e12 µs (1e15 ns): 1e19 ns in all, past a 64-bit integer's 9.2e18.
    std::vector<Row> rows;
    for (int i = 0; i < 10000; ++i)
      rows.push_back({i + 1, fmt::format("k{}", i), 1e12});
    MergeOptions o;
    o.dirs = {replica(dir, 0, 1, rows, trace)};
    const MergeResult r = merge_runs(o);
    CHECK(r.run.requests == 10000);
    CHECK(r.run.total.mean_us == doctest::Approx(1e12));
    CHECK(r.run.total.total_us == doctest::Approx(1e16));
    CHECK(r.run.total.max_us == doctest::Approx(1e12));
    const StageStats& compute = r.run.stages[static_cast<std::size_t>(Stage::compute)];
    CHECK(compute.mean_us == doctest::Approx(1e12));
    CHECK(compute.share == doctest::Approx(1.0));
  }

  TEST_CASE("requests.csv: merge's columns read by name, a bad count names file and line") {
    TempDir dir;
    const std::string csv =
        dir.write("r.csv",
                  "seq,id,line,key,worker,arrival_us,start_us,total_us,ok,error,model_version,batch\n"
                  "0,17,3,\"a,b\",2,1.500,2.000,9.000,false,boom,v2,4\n"
                  "1,x,4,k,0,0,0,1,true,,,\n");
    std::vector<report::RequestRow> rows;
    CHECK_THROWS_WITH_AS(report::read_requests_csv(csv, {}, [&](const report::RequestRow& r) { rows.push_back(r); }),
                         doctest::Contains("r.csv:3: 'x' is not a whole number in column 'id'"), Error);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].id == 17);
    CHECK(rows[0].trace_line == 3);
    CHECK(rows[0].key == "a,b");
    CHECK(rows[0].worker == 2);
    CHECK(rows[0].arrival_us == doctest::Approx(1.5));
    CHECK(rows[0].start_us == doctest::Approx(2.0));
    CHECK(!rows[0].ok);
    CHECK(rows[0].error == "boom");
    CHECK(rows[0].model_version == "v2");
    CHECK(rows[0].batch == 4);
  }
}
