// End-to-end: `inferprof sweep` as a user runs it: steps of load, the stopping
// rule, the result files, and bad input that leaves nothing behind.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <algorithm>

#include "cli_harness.hpp"
#include "test_util.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

struct SweepFixture {
  TempDir dir;
  std::string model = dir.file("mlp.pt");
  std::string trace = dir.file("t.jsonl");    // 200 requests at 1,000 req/s
  std::string untimed = dir.file("u.jsonl");  // no ts_ms
  SweepFixture() {
    make_model_and_trace(model, trace, {"--requests", "200", "--keys", "20", "--rate", "1000"});
    auto t = run_cli({"gen-trace", "--requests", "50", "--rate", "0", "-o", untimed});
    if (t.code != 0) throw std::runtime_error("gen-trace failed: " + t.err);
  }
};
SweepFixture& fixture() {
  static SweepFixture f;
  return f;
}

}  // namespace

TEST_SUITE("e2e sweep") {
  TEST_CASE("sweep --concurrency: one curve per configuration in sweep.json, sweep.csv and report.html") {
    auto& f = fixture();
    TempDir out;
    auto r = run_cli({"sweep", f.model, "--trace", f.trace, "--concurrency", "1:2", "--caches", "none", "--caches",
                      "l1", "--out", out.file("s"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("capacity:") != std::string::npos);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.load(out.file("s/sweep.json"));
    CHECK(std::string_view(doc["schema"]) == "inferprof.sweep/1");
    CHECK(std::string_view(doc["load"]) == "concurrency");
    simdjson::dom::array configs = doc["configurations"];
    REQUIRE(configs.size() == 2);
    std::size_t rows = 0;
    for (simdjson::dom::element c : configs) {
      simdjson::dom::array steps = c["steps"];
      CHECK(steps.size() >= 1);
      for (simdjson::dom::element s : steps) {
        ++rows;
        CHECK(std::uint64_t(s["requests"]) == 200);
        CHECK(double(s["achieved_rps"]) > 0);
        CHECK(double(s["p99"]["low_us"]) <= double(s["p99"]["value_us"]));
        CHECK(double(s["p99"]["value_us"]) <= double(s["p99"]["high_us"]));
      }
    }
    // The CSV has a header and one row per step the JSON lists.
    const std::string csv = slurp(out.path() / "s" / "sweep.csv");
    CHECK(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')) == rows + 1);
    const std::string html = slurp(out.path() / "s" / "report.html");
    CHECK(html.find("Latency against served traffic") != std::string::npos);
    CHECK(html.find("<svg") != std::string::npos);
  }

  TEST_CASE("sweep --measure-after N: each step measures the requests after the first N, offered over their span") {
    auto& f = fixture();
    auto r = run_cli({"sweep", f.model, "--trace", f.trace, "--speeds", "1", "--measure-after", "50", "--format",
                      "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.out);
    CHECK(std::uint64_t(doc["measure_after"]) == 50);
    simdjson::dom::element step = doc["configurations"].at(0)["steps"].at(0);
    CHECK(std::uint64_t(step["requests"]) == 150);
    // 150 requests over the span from the 51st arrival to the last: about 1,000 req/s, as the trace was made.
    CHECK(double(step["offered_rps"]) > 700);
    CHECK(double(step["offered_rps"]) < 1400);
    auto bad = run_cli({"sweep", f.model, "--trace", f.trace, "--speeds", "1", "--measure-after", "200"});
    CHECK(bad.code == 2);
    CHECK(bad.err.find("sweep --measure-after 200: a step replays 200 requests, so none would be measured") !=
          std::string::npos);
  }

  TEST_CASE("sweep --speeds stops a configuration at its first saturated step and runs no step after it") {
    auto& f = fixture();
    // At 10,000x the trace offers millions of requests a second: no MLP replay serves 95% of that.
    auto r = run_cli(
        {"sweep", f.model, "--trace", f.trace, "--speeds", "10000,20000,40000", "--format", "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.out);
    simdjson::dom::element c = doc["configurations"].at(0);
    CHECK(simdjson::dom::array(c["steps"]).size() == 1);
    CHECK(bool(c["steps"].at(0)["saturated"]));
    CHECK(std::string_view(c["stopped"]).find("saturated at 10000×") != std::string_view::npos);
    CHECK(double(c["steps"].at(0)["offered_rps"]) > 1e6);
  }

  TEST_CASE("sweep --refine bisects between the last step served in full and the first saturated, in load order") {
    auto& f = fixture();
    auto r = run_cli({"sweep", f.model, "--trace", f.trace, "--speeds", "0.5,20000", "--refine", "2", "--format",
                      "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.out);
    simdjson::dom::array steps = doc["configurations"].at(0)["steps"];
    // 0.5x is served in full; 20,000x is not, nor is 10,000.25x: the second round halves again.
    REQUIRE(steps.size() == 4);
    std::vector<double> loads;
    for (simdjson::dom::element s : steps)
      loads.push_back(double(s["load"]));
    CHECK(loads == std::vector<double>{0.5, 5000.375, 10000.25, 20000});
    CHECK_FALSE(bool(steps.at(0)["refined"]));
    CHECK(bool(steps.at(1)["refined"]));
    CHECK(bool(steps.at(2)["refined"]));
    auto bad = run_cli({"sweep", f.model, "--trace", f.trace, "--concurrency", "1:2", "--refine", "1"});
    CHECK(bad.code == 2);
    CHECK(bad.err.find("--refine bisects between speeds") != std::string::npos);
  }

  TEST_CASE("sweep --slo-ms: a step past the objective ends the curve, and the table says no step met it") {
    auto& f = fixture();
    auto r = run_cli(
        {"sweep", f.model, "--trace", f.trace, "--concurrency", "1:3", "--slo-ms", "0.000001", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("no step met p99 ≤ 1e-06 ms") != std::string::npos);
    CHECK(r.out.find("past the 1e-06 ms objective at concurrency 1") != std::string::npos);
    CHECK(r.out.find("past SLO") != std::string::npos);
  }

  TEST_CASE("sweep: bad input is one line naming what was expected, exit 2, nothing in --out") {
    auto& f = fixture();
    TempDir out;
    struct Case {
      std::vector<std::string> extra;
      std::string says;
    };
    const Case cases[] = {
        {{"--trace", f.untimed, "--speeds", "1,2"}, f.untimed + ":1: a speed sweep replays the trace's arrivals"},
        {{"--trace", f.trace, "--speeds", "1,2", "--concurrency", "1:2"}, "sweep needs one kind of step"},
        {{"--trace", f.trace, "--speeds", "4:1"}, "--speeds 4:1: expected FROM <= TO"},
        {{"--trace", f.trace, "--speeds", "2,1"}, "the steps must rise: 1 after 2"},
        {{"--trace", f.trace, "--concurrency", "1.5,2"}, "1.5 is not a whole number of workers"},
        {{"--trace", f.trace, "--speeds", "1,x"}, "'x' is not a number"},
        {{"--trace", f.trace, "--speeds", "1,,2"}, "'' is not a number"},
        {{"--trace", f.trace, "--speeds", "1:2:3:4"}, "--speeds 1:2:3:4: expected FROM:TO:STEP"},
        {{"--trace", f.trace, "--speeds", "1", "--caches", "l9"}, "l9"},
    };
    for (const Case& c : cases) {
      std::vector<std::string> args{"sweep", f.model, "--out", out.file("s"), "--no-progress"};
      args.insert(args.end(), c.extra.begin(), c.extra.end());
      auto r = run_cli(args);
      CAPTURE(c.says);
      CHECK(r.code == 2);
      CHECK(r.err.find(c.says) != std::string::npos);
      CHECK(dir_is_empty_or_missing(out.path() / "s"));
    }
  }
}
