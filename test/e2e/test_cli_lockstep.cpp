// End-to-end: compare --mode lockstep (one process, one model, each request
// served under every configuration in turn) and --mode sequential.
#include <doctest/doctest.h>
#include <simdjson.h>

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
LockstepFixture& fixture() {
  static LockstepFixture f;
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
    auto& f = fixture();
    TempDir out;
    // One intra-op thread: no pool barrier that a busy machine stretches into a 30 ms request.
    auto r = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "none", "--caches", "l1", "--caches", "l3",
                      "--threads", "1", "--out", out.file("c"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find(" · lockstep") != std::string::npos);
    CHECK(r.out.find("speedup intervals: lockstep mode, paired bootstrap over 300 requests") != std::string::npos);
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
    CHECK(std::string_view(doc["interval"].get_string()) == "paired bootstrap over 300 requests");
    CHECK(json_number(doc["paired_requests"]) == LockstepFixture::kRequests);
    simdjson::dom::array rows = doc["configurations"].get_array();
    REQUIRE(rows.size() == 3);
    // Every configuration served every request.
    for (auto row : rows)
      CHECK(json_number(row["requests"]) == LockstepFixture::kRequests);
    // L1: all but the first request of each of the 20 keys hit, at a fraction of a miss's cost.
    const Interval l1 = speedup_of(rows.at(1));
    CAPTURE(text);
    CHECK(l1.low > 1.0);
    simdjson::dom::element costs = rows.at(1)["outcome_costs"];
    const double misses = json_number(costs["miss"]["count"]);
    CHECK(misses <= 20);
    CHECK(json_number(costs["l1_hit"]["count"]) == LockstepFixture::kRequests - misses);
    CHECK(json_number(costs["l1_hit"]["mean_us"]) < json_number(costs["miss"]["mean_us"]));
    // L3 under the default profile skips a preprocessing that costs next to
    // nothing: the paired interval holds 1.00.
    const Interval l3 = speedup_of(rows.at(2));
    CHECK(l3.low <= 1.0);
    CHECK(l3.high >= 1.0);
    CHECK(json_number(rows.at(2)["outcome_costs"]["l3_hit"]["count"]) == LockstepFixture::kRequests - misses);

    // compare.csv says the mode on every row.
    const std::string csv = slurp(out.path() / "c" / "compare.csv");
    CHECK(csv.find(",mode,l1_hit_us,l2_hit_us,l3_hit_us,miss_us\n") != std::string::npos);
    CHECK(csv.find(",lockstep,") != std::string::npos);
  }

  TEST_CASE("compare --mode sequential keeps whole replays, the pooled interval and its drift warning") {
    auto& f = fixture();
    auto r = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "none", "--caches", "l1", "--mode",
                      "sequential", "--limit", "60", "--format", "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(r.out).get(doc) == simdjson::SUCCESS);
    CHECK(std::string_view(doc["mode"].get_string()) == "sequential");
    CHECK(std::string_view(doc["interval"].get_string()) == "bootstrap over pooled requests of 1 repeat");
    CHECK(r.out.find("drift between replays") != std::string::npos);
  }

  TEST_CASE("compare --mode: lockstep refuses an open loop and several workers, saying why") {
    auto& f = fixture();
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

  TEST_CASE("compare --repeat in lockstep pairs every (repeat, request)") {
    auto& f = fixture();
    auto misses = [&](const std::string& repeat, double& paired) {
      auto r = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "none", "--caches", "l1", "--limit", "40",
                        "--repeat", repeat, "--format", "json", "--no-progress"});
      REQUIRE_MESSAGE(r.code == 0, r.err);
      simdjson::dom::parser parser;
      simdjson::dom::element doc;
      REQUIRE(parser.parse(r.out).get(doc) == simdjson::SUCCESS);
      paired = json_number(doc["paired_requests"]);
      if (repeat == "2")
        CHECK(std::string_view(doc["interval"].get_string()) ==
              "paired bootstrap over 80 requests (2 lockstep repeats)");
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

  TEST_CASE("a lockstep configuration that fails leaves no configuration's reports") {
    auto& f = fixture();
    TempDir out;
    const int port = RedisServer::free_port();
    auto r = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "none", "--caches", "l2", "--redis",
                      "redis://127.0.0.1:" + std::to_string(port), "--out", out.file("c")});
    CHECK(r.code == 3);
    CHECK(dir_is_empty_or_missing(out.path() / "c"));
  }
}
