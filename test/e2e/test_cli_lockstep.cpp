// End-to-end: compare --mode lockstep (one process, one model, each request
// served under every configuration in turn) and --mode sequential.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <set>

#include "cli_harness.hpp"
#include "redis_server.hpp"
#include "test_util.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

struct LockstepFixture {
  TempDir dir;
  std::string model = dir.file("mlp.pt");
  std::string trace = dir.file("repeated.jsonl");
  static constexpr int kRequests = 300;
  // 20 keys over 300 requests: most requests repeat a key L1 holds.
  LockstepFixture() { make_model_and_trace(model, trace, {"--requests", std::to_string(kRequests), "--keys", "20"}); }
};
LockstepFixture& lockstep_fixture() {
  static LockstepFixture f;
  return f;
}

// A CNN (a few ms of compute per request): a descheduled L1 hit on a loaded
// machine (tens of ms once in a while) cannot outweigh what the hits save,
// as it can against a 20 µs MLP request.
struct CnnFixture {
  TempDir dir;
  std::string model = dir.file("cnn.pt");
  std::string trace = dir.file("cnn.jsonl");
  static constexpr int kRequests = 60;
  CnnFixture() {
    auto m = run_cli({"gen-model", "--arch", "cnn", "-o", model});
    if (m.code != 0) throw std::runtime_error("gen-model failed: " + m.err);
    auto t = run_cli({"gen-trace", "--requests", std::to_string(kRequests), "--keys", "10", "--zipf", "0", "--shape",
                      "1,3,64,64", "-o", trace});
    if (t.code != 0) throw std::runtime_error("gen-trace failed: " + t.err);
  }
};
CnnFixture& cnn_fixture() {
  static CnnFixture f;
  return f;
}

struct Interval {
  double value = 0, low = 0, high = 0;
};
Interval speedup_of(simdjson::dom::element row) {
  return Interval{json_number(row["speedup"]["value"]), json_number(row["speedup"]["low"]),
                  json_number(row["speedup"]["high"])};
}

}  // namespace

TEST_SUITE("e2e lockstep") {
  TEST_CASE("compare defaults to lockstep: L1 wins, L3's hits save nothing, reports per configuration") {
    auto& f = cnn_fixture();
    TempDir out;
    auto r = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "none", "--caches", "l1", "--caches", "l3",
                      "--out", out.file("c"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find(" · lockstep") != std::string::npos);
    CHECK(r.out.find("speedup intervals: lockstep mode, this trace: noise with the trace held fixed, 60 paired "
                     "requests resampled within ") != std::string::npos);
    CHECK(r.out.find("also in compare.json (--intervals both): traffic like this trace: paired bootstrap over 60 "
                     "requests") != std::string::npos);
    CHECK(r.out.find("cpu speedup") != std::string::npos);
    CHECK(r.out.find("l1 hit cost") != std::string::npos);
    CHECK(r.out.find("miss cost") != std::string::npos);
    for (const char* folder : {"none", "l1", "l3"})
      for (const char* file : {"summary.json", "requests.csv", "stages.csv"})
        CHECK_MESSAGE(fs::is_regular_file(out.path() / "c" / folder / file), folder, "/", file);

    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string text = slurp(out.path() / "c" / "compare.json");
    REQUIRE(parser.parse(text).get(doc) == simdjson::SUCCESS);
    CHECK(std::string_view(doc["mode"].get_string()) == "lockstep");
    // An uncached baseline: the speedups are in units of the machine's pace, and the interval says so.
    const std::string_view interval = doc["interval"].get_string();
    CHECK(interval.rfind("this trace: noise with the trace held fixed, 60 paired requests resampled within ", 0) == 0);
    CHECK(interval.find("input x what served it under both configurations") != std::string::npos);
    CHECK(interval.find("; in units of the machine's pace (the baseline's median over the 31 requests around each: ") !=
          std::string::npos);
    CHECK(std::string_view(doc["traffic_interval"].get_string())
              .rfind("traffic like this trace: paired bootstrap over 60 requests", 0) == 0);
    CHECK(json_number(doc["paired_requests"]) == CnnFixture::kRequests);
    CHECK(json_number(doc["pace"]["window"]) == 31);
    CHECK(json_number(doc["pace"]["min"]) <= 1.0);
    CHECK(json_number(doc["pace"]["max"]) >= 1.0);
    CHECK(r.out.find("; in units of the machine's pace (") != std::string::npos);
    simdjson::dom::array rows = doc["configurations"].get_array();
    REQUIRE(rows.size() == 3);
    // Every configuration served every request.
    for (auto row : rows)
      CHECK(json_number(row["requests"]) == CnnFixture::kRequests);
    // L1: all but the first request of each of the 10 keys hit, at a fraction of a miss's cost.
    // The truth is about 6x (50 of 60 requests hit at a fraction of a miss's
    // cost). The interval's lower end is not checked: on a loaded machine one
    // descheduled miss (tens of ms) widens it, and a test must not flake;
    // bench/compare_stability.sh measures how often the intervals hold.
    const Interval l1 = speedup_of(rows.at(1));
    CAPTURE(text);
    CHECK(l1.value > 1.5);
    CHECK(l1.low <= l1.value);
    CHECK(l1.value <= l1.high);
    // Each configuration has a verdict its this-trace interval supports, the
    // traffic-like interval beside it and the speedup in thread CPU time; no
    // bound of any ratio at or below 0.
    for (std::size_t c = 1; c < 3; ++c) {
      simdjson::dom::element row = rows.at(c);
      const std::string_view verdict = row["verdict"].get_string();
      const Interval s = speedup_of(row);
      CHECK(verdict == (s.low > 1 ? "faster" : s.high < 1 ? "slower" : "no measurable difference"));
      for (const char* key : {"speedup", "traffic_speedup", "cpu_speedup"}) {
        CAPTURE(key);
        CHECK(json_number(row[key]["low"]) > 0);
        CHECK(json_number(row[key]["low"]) <= json_number(row[key]["value"]));
        CHECK(json_number(row[key]["value"]) <= json_number(row[key]["high"]));
      }
      CHECK(json_number(row["interval_classes"]["classes"]) >= 10);
      // Where a rerun reads: around the point and at least as wide as the verdict's interval.
      CHECK(json_number(row["rerun"]["low"]) > 0);
      CHECK(json_number(row["rerun"]["low"]) <= s.low);
      CHECK(json_number(row["rerun"]["high"]) >= s.high);
    }
    CHECK(r.out.find("a rerun with as many passes reads (95%): l1 ") != std::string::npos);
    CHECK(std::string_view(rows.at(1)["verdict"].get_string()) != "slower");
    CHECK(json_number(rows.at(1)["cpu_speedup"]["value"]) > 1.5);  // hits skip the forward pass
    simdjson::dom::element costs = rows.at(1)["outcome_costs"];
    const double misses = json_number(costs["miss"]["count"]);
    CHECK(misses <= 10);
    CHECK(json_number(costs["l1_hit"]["count"]) == CnnFixture::kRequests - misses);
    CHECK(json_number(costs["l1_hit"]["mean_us"]) < json_number(costs["miss"]["mean_us"]));
    // L3 under the default profile skips a preprocessing that costs next to
    // nothing: about 1.00x. (That its 95% interval holds 1.00 in at least 19
    // runs of 20 is bench/compare_stability.sh's check, not a single run's.)
    const Interval l3 = speedup_of(rows.at(2));
    CHECK(l3.value > 0.7);
    CHECK(l3.value < 1.43);
    CHECK(json_number(rows.at(2)["outcome_costs"]["l3_hit"]["count"]) == CnnFixture::kRequests - misses);

    // compare.csv says the mode on every row.
    const std::string csv = slurp(out.path() / "c" / "compare.csv");
    CHECK(csv.find(",mode,l1_hit_us,l2_hit_us,l3_hit_us,miss_us,verdict,traffic_speedup,") != std::string::npos);
    CHECK(csv.find(",lockstep,") != std::string::npos);
    CHECK(csv.find(",model,profile,rerun_low,rerun_high\n") != std::string::npos);
  }

  TEST_CASE("compare in lockstep with a cached baseline: no pace, the plain paired interval") {
    // A cached baseline's latencies mix hits and misses: they say nothing about the machine's speed.
    auto& f = lockstep_fixture();
    auto r = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "l1", "--caches", "none", "--limit", "40",
                      "--format", "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(r.out).get(doc) == simdjson::SUCCESS);
    const std::string_view interval = doc["interval"].get_string();
    CHECK(interval.rfind("this trace: noise with the trace held fixed, 40 paired requests resampled within ", 0) == 0);
    CHECK(interval.find("machine's pace") == std::string::npos);
    simdjson::dom::element pace;
    CHECK(doc["pace"].get(pace) == simdjson::NO_SUCH_FIELD);
  }

  TEST_CASE("compare --mode sequential keeps whole replays, the pooled interval and its drift warning") {
    auto& f = lockstep_fixture();
    auto r = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "none", "--caches", "l1", "--mode",
                      "sequential", "--limit", "60", "--format", "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(r.out).get(doc) == simdjson::SUCCESS);
    CHECK(std::string_view(doc["mode"].get_string()) == "sequential");
    CHECK(std::string_view(doc["interval"].get_string()) ==
          "bootstrap over pooled requests of 1 repeat (traffic like this trace: no pairing)");
    CHECK(r.out.find("drift between replays") != std::string::npos);
  }

  TEST_CASE("compare --mode: lockstep refuses an open loop and several workers, saying why") {
    auto& f = lockstep_fixture();
    auto open = run_cli({"compare", f.model, "--trace", f.trace, "--mode", "lockstep", "--open-loop"});
    CHECK(open.code == 2);
    CHECK(open.err.rfind("inferprof: error: --mode lockstep serves each request under every configuration in turn",
                         0) == 0);
    CHECK(open.err.find("--open-loop") != std::string::npos);
    CHECK(open.err.find("--mode sequential") != std::string::npos);
    CHECK(count_lines(open.err) == 1);
    auto workers = run_cli({"compare", f.model, "--trace", f.trace, "--mode", "lockstep", "--concurrency", "2"});
    CHECK(workers.code == 2);
    CHECK(workers.err.find("keep 2 requests in flight (--concurrency)") != std::string::npos);
    auto bad = run_cli({"compare", f.model, "--trace", f.trace, "--mode", "paired"});
    CHECK(bad.code == 2);
    CHECK(bad.err.find("--mode") != std::string::npos);
    CHECK(bad.err.find("lockstep") != std::string::npos);
  }

  TEST_CASE("compare --precision repeats lockstep passes until every interval is that narrow, or --max-time") {
    auto& f = lockstep_fixture();
    auto precise = [&](const std::vector<std::string>& extra) {
      std::vector<std::string> args{"compare", f.model,   "--trace", f.trace,    "--caches", "none",         "--caches",
                                    "l1",      "--limit", "30",      "--format", "json",     "--no-progress"};
      args.insert(args.end(), extra.begin(), extra.end());
      return run_cli(args);
    };
    // A loose target, at least two passes: reached, and said so. In one process: 30 MLP requests (under a
    // millisecond a pass) differ between processes by more than ±50% on a loaded machine, and the stopping
    // rule is the same wherever the passes run.
    auto loose = precise({"--precision", "50", "--repeat", "2", "--pass-process", "same"});
    REQUIRE_MESSAGE(loose.code == 0, loose.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(loose.out).get(doc) == simdjson::SUCCESS);
    CHECK(bool(doc["precision"]["reached"]));
    // Fewer than three passes cannot show what moves a whole pass: no precision claimed before.
    CHECK(json_number(doc["precision"]["passes"]) >= 3);
    CHECK(json_number(doc["configurations"].at(1)["interval_classes"]["passes"]) ==
          json_number(doc["precision"]["passes"]));
    CHECK(std::string_view(doc["interval"].get_string()).find("passes' own speedups") != std::string_view::npos);
    CHECK(json_number(doc["precision"]["target_pct"]) == 50);
    CHECK(json_number(doc["precision"]["widest_half_width_pct"]) <= 50);
    CHECK(std::string_view(doc["precision"]["widest"].get_string()) == "l1");
    CHECK(json_number(doc["paired_requests"]) == 30 * json_number(doc["precision"]["passes"]));
    // A rerun stops within ±50% too, however narrow this run came out: its interval reaches at least that far.
    const double point = json_number(doc["configurations"].at(1)["speedup"]["value"]);
    CHECK(json_number(doc["configurations"].at(1)["rerun"]["low"]) <= point * 0.5 + 1e-9);
    CHECK(json_number(doc["configurations"].at(1)["rerun"]["high"]) >= point / 0.5 - 1e-9);
    // A target no machine reaches, stopped by --max-time after the pass under way: not reached, said so.
    auto tight = precise({"--precision", "0.001", "--max-time", "0.5"});
    REQUIRE_MESSAGE(tight.code == 0, tight.err);
    REQUIRE(parser.parse(tight.out).get(doc) == simdjson::SUCCESS);
    CHECK_FALSE(bool(doc["precision"]["reached"]));
    CHECK(json_number(doc["precision"]["passes"]) >= 1);
    CHECK(json_number(doc["precision"]["widest_half_width_pct"]) > 0.001);
    // The table says it too.
    auto table = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "none", "--caches", "l1", "--limit", "30",
                          "--precision", "0.001", "--max-time", "0.5", "--no-progress"});
    REQUIRE_MESSAGE(table.code == 0, table.err);
    CHECK(table.out.find("precision ±0.001%: NOT reached") != std::string::npos);
    CHECK(table.out.find("a rerun to ±0.001% reads (95%): l1 ") != std::string::npos);
    // Out of range, or without lockstep: one line, exit 2.
    auto zero = precise({"--precision", "0"});
    CHECK(zero.code == 2);
    CHECK(count_lines(zero.err) == 1);
    auto open = precise({"--precision", "3", "--mode", "sequential"});
    CHECK(open.code == 2);
    CHECK(open.err.find("--precision repeats lockstep passes") != std::string::npos);
  }

  TEST_CASE("compare --repeat in lockstep pairs every (repeat, request)") {
    auto& f = lockstep_fixture();
    auto misses = [&](const std::string& repeat, double& paired) {
      auto r = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "none", "--caches", "l1", "--limit", "40",
                        "--repeat", repeat, "--format", "json", "--no-progress"});
      REQUIRE_MESSAGE(r.code == 0, r.err);
      simdjson::dom::parser parser;
      simdjson::dom::element doc;
      REQUIRE(parser.parse(r.out).get(doc) == simdjson::SUCCESS);
      paired = json_number(doc["paired_requests"]);
      if (repeat == "2")
        CHECK(std::string_view(doc["interval"].get_string())
                  .rfind("this trace: noise with the trace held fixed, 80 paired requests (2 lockstep repeats) "
                         "resampled within ",
                         0) == 0);
      return json_number(doc["configurations"].at(1)["outcome_costs"]["miss"]["count"]);
    };
    double once_paired = 0, twice_paired = 0;
    const double once = misses("1", once_paired);
    const double twice = misses("2", twice_paired);
    CHECK(once_paired == 40);
    CHECK(twice_paired == 80);
    // Fresh caches each repeat: L1 misses the same keys again in the second.
    CHECK(once > 0);
    CHECK(twice == 2 * once);
  }

  TEST_CASE("compare --repeat lists each report file once, not once per pass") {
    auto& f = lockstep_fixture();
    TempDir out;
    auto r = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "none", "--caches", "l1", "--limit", "20",
                      "--repeat", "3", "--out", out.file("c"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    // Every pass rewrites the same files; the list named them once per pass.
    const std::size_t from = r.out.find("reports written to");
    REQUIRE(from != std::string::npos);
    const std::string list = r.out.substr(from, r.out.find('\n', from) - from);
    for (const char* file : {"none/summary.json", "l1/requests.csv", "compare.json"}) {
      std::size_t count = 0;
      for (std::size_t at = list.find(file); at != std::string::npos; at = list.find(file, at + 1))
        ++count;
      CHECK_MESSAGE(count == 1, file);
    }
  }

  TEST_CASE("a lockstep configuration that fails leaves no configuration's reports") {
    auto& f = lockstep_fixture();
    TempDir out;
    const int port = RedisServer::free_port();
    auto r = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "none", "--caches", "l2", "--redis",
                      "redis://127.0.0.1:" + std::to_string(port), "--out", out.file("c")});
    CHECK(r.code == 3);
    CHECK(dir_is_empty_or_missing(out.path() / "c"));
  }

  TEST_CASE("an A/A compare (a configuration against itself) writes each to its own folder") {
    auto& f = lockstep_fixture();
    TempDir out;
    auto r = run_cli({"compare", f.model, "--trace", f.trace, "--limit", "20", "--caches", "none", "--caches", "none",
                      "--out", out.file("c"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    for (const char* folder : {"none", "none-2"})
      CHECK_MESSAGE(fs::is_regular_file(out.path() / "c" / folder / "summary.json"), folder);
  }

  TEST_CASE(
      "compare --precision runs each pass after the first in a process of its own, --pass-process same all in one") {
    auto& f = lockstep_fixture();
    TempDir tmp;  // the temp folder the pass processes' files go to: empty again after
    auto compare = [&](const std::vector<std::string>& extra, const std::string& env = "") {
      std::vector<std::string> args{"compare", f.model,   "--trace", f.trace,    "--caches", "none",         "--caches",
                                    "l1",      "--limit", "30",      "--format", "json",     "--no-progress"};
      args.insert(args.end(), extra.begin(), extra.end());
      return run_cli(args, "TMPDIR=" + shell_quote(tmp.str()) + " " + env);
    };
    // The pass processes each pass ran in, and how many distinct ones.
    auto processes = [](simdjson::dom::element doc, std::size_t& distinct) {
      std::set<double> pids;
      std::size_t n = 0;
      for (simdjson::dom::element pid : doc["pass_pids"].get_array()) {
        pids.insert(json_number(pid));
        ++n;
      }
      distinct = pids.size();
      return n;
    };
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    // At least three passes, and no more once a second has passed (how many a ±50% target takes depends on
    // the machine: tiny passes differ between processes by tens of percent under load).
    auto fresh = compare({"--precision", "50", "--repeat", "3", "--max-time", "1"});
    REQUIRE_MESSAGE(fresh.code == 0, fresh.err);
    REQUIRE(parser.parse(fresh.out).get(doc) == simdjson::SUCCESS);
    const double passes = json_number(doc["precision"]["passes"]);
    CHECK(passes >= 3);
    std::size_t distinct = 0;
    CHECK(processes(doc, distinct) == passes);
    CHECK(distinct == passes);  // one process per pass
    CHECK(json_number(doc["paired_requests"]) == 30 * passes);
    CHECK(std::string_view(doc["pass_processes"].get_string()) == "fresh");
    CHECK(std::string_view(doc["configurations"].at(1)["interval_classes"]["pass_processes"].get_string()) == "fresh");
    CHECK(std::string_view(doc["interval"].get_string()).find("in a process of its own") != std::string_view::npos);
    CHECK(static_cast<double>(doc["configurations"].at(1)["means_us"].get_array().size()) == passes);
    CHECK(tmp.list().empty());
    // Opted out: every pass in compare's own process.
    auto same = compare({"--precision", "50", "--repeat", "3", "--max-time", "1", "--pass-process", "same"});
    REQUIRE_MESSAGE(same.code == 0, same.err);
    REQUIRE(parser.parse(same.out).get(doc) == simdjson::SUCCESS);
    CHECK(processes(doc, distinct) == json_number(doc["precision"]["passes"]));
    CHECK(json_number(doc["precision"]["passes"]) >= 3);
    CHECK(distinct == 1);
    CHECK(std::string_view(doc["pass_processes"].get_string()) == "same");
    CHECK(std::string_view(doc["interval"].get_string()).find("in a process of its own") == std::string_view::npos);
    // --repeat stays in one process unless asked.
    auto repeat = compare({"--repeat", "3", "--pass-process", "fresh"});
    REQUIRE_MESSAGE(repeat.code == 0, repeat.err);
    REQUIRE(parser.parse(repeat.out).get(doc) == simdjson::SUCCESS);
    CHECK(processes(doc, distinct) == 3);
    CHECK(distinct == 3);
    auto plain = compare({"--repeat", "2"});
    REQUIRE_MESSAGE(plain.code == 0, plain.err);
    REQUIRE(parser.parse(plain.out).get(doc) == simdjson::SUCCESS);
    CHECK(processes(doc, distinct) == 2);
    CHECK(distinct == 1);
    CHECK(tmp.list().empty());
    auto sequential = compare({"--mode", "sequential", "--pass-process", "fresh"});
    CHECK(sequential.code == 2);
    CHECK(count_lines(sequential.err) == 1);
  }

  TEST_CASE("a pass process that fails fails the compare: exit 3, one line naming the pass, nothing left behind") {
    auto& f = lockstep_fixture();
    TempDir tmp, out;
    auto r = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "none", "--caches", "l1", "--limit", "30",
                      "--precision", "50", "--repeat", "3", "--out", out.file("c"), "--no-progress"},
                     "TMPDIR=" + shell_quote(tmp.str()) + " INFERPROF_TEST_FAIL_PASS=2");
    CHECK(r.code == 3);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.find("lockstep pass 2 failed in its own process (exit 3)") != std::string::npos);
    CHECK(r.err.find("INFERPROF_TEST_FAIL_PASS") != std::string::npos);  // the child's own line
    CHECK(tmp.list().empty());
    CHECK(dir_is_empty_or_missing(out.path() / "c"));
  }
}
