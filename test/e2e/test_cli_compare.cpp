// End-to-end: cache tiers in `run` and `compare`, with a real redis-server.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <thread>

#include "cli_harness.hpp"
#include "redis_server.hpp"
#include "test_util.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

struct CacheFixture {
  TempDir dir;
  std::string model = dir.file("mlp.pt");
  std::string trace = dir.file("zipf.jsonl");
  static constexpr int kRequests = 400;
  CacheFixture() {
    make_model_and_trace(model, trace, {"--requests", std::to_string(kRequests), "--keys", "50", "--zipf", "1.1"});
  }
};
CacheFixture& cache_fixture() {
  static CacheFixture f;
  return f;
}

}  // namespace

TEST_SUITE("e2e caches") {
  TEST_CASE("compare: four configurations from cold, verified, with reports") {
    auto& f = cache_fixture();
    TempDir out;
    auto r = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "none", "--caches", "l1", "--caches", "l1,l2",
                      "--caches", "l1,l2,l3", "--tier", "l1=lru:10", "--verify", "--out", out.file("c"),
                      "--flamegraph-diff", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("(baseline)") != std::string::npos);
    for (const char* file : {"compare.csv", "compare.json", "diff-l1-vs-none.svg"})
      CHECK_MESSAGE(fs::is_regular_file(out.path() / "c" / file), file);
    for (const char* folder : {"none", "l1", "l1+l2", "l1+l2+l3"})
      CHECK_MESSAGE(fs::is_regular_file(out.path() / "c" / folder / "summary.json"), folder);
    CHECK(count_lines(slurp(out.path() / "c" / "compare.csv")) == 5);

    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    std::string text = slurp(out.path() / "c" / "compare.json");
    REQUIRE(parser.parse(text).get(doc) == simdjson::SUCCESS);
    simdjson::dom::array rows = doc["configurations"].get_array();
    REQUIRE(rows.size() == 4);
    std::size_t i = 0;
    for (auto row : rows) {
      for (auto tier : row["caches"].get_array()) {
        // Hits and misses always add up to lookups, and every request looks up L1.
        CHECK(json_number(tier["hits"]) + json_number(tier["misses"]) == json_number(tier["lookups"]));
        std::string_view name = tier["tier"].get_string();
        if (name == "l1") {
          CHECK(json_number(tier["lookups"]) == CacheFixture::kRequests);
          CHECK(json_number(tier["hits"]) > 0);
        }
      }
      if (i == 3) {
        // l1 holds only 10 entries: L2 and L3 see the rest and hit too.
        double l2_hits = 0;
        for (auto tier : row["caches"].get_array())
          if (std::string_view(tier["tier"].get_string()) == "l2") l2_hits = json_number(tier["hits"]);
        CHECK(l2_hits > 0);
      }
      ++i;
    }
    // --verify recomputed the hits and found them equal.
    std::string l1_summary = slurp(out.path() / "c" / "l1" / "summary.json");
    simdjson::dom::parser p2;
    auto s = p2.parse(l1_summary);
    CHECK(json_number(s["verify"]["checked"]) > 0);
    CHECK(json_number(s["verify"]["mismatches"]) == 0);
  }

  TEST_CASE("run --caches with a real Redis L2: keys deleted afterwards, password never shown") {
    REQUIRE_REDIS_SERVER();
    auto& f = cache_fixture();
    const std::string password = "s3cret-pass-42";
    RedisServer redis(password);
    TempDir out;
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--caches", "l1,l2", "--tier", "l1=lru:5", "--redis",
                      redis.url_with_password(), "--out", out.file("r"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("redis://") != std::string::npos);
    CHECK(r.out.find(password) == std::string::npos);
    CHECK(r.err.find(password) == std::string::npos);
    for (const auto& entry : fs::directory_iterator(out.path() / "r"))
      CHECK_MESSAGE(slurp(entry.path()).find(password) == std::string::npos, entry.path());
    simdjson::dom::parser parser;
    auto s = parser.parse(slurp(out.path() / "r" / "summary.json"));
    double l2_hits = 0;
    for (auto tier : s["caches"].get_array())
      if (std::string_view(tier["tier"].get_string()) == "l2") l2_hits = json_number(tier["hits"]);
    CHECK(l2_hits > 0);
    CHECK(redis.integer("DBSIZE") == 0);

    // The password from the environment works the same; a wrong one is a clear error without it.
    auto env = run_cli({"run", f.model, "--trace", f.trace, "--caches", "l2", "--redis", redis.url(), "--limit", "20"},
                       "INFERPROF_REDIS_PASSWORD=" + password);
    CHECK_MESSAGE(env.code == 0, env.err);
    auto wrong = run_cli({"run", f.model, "--trace", f.trace, "--caches", "l2", "--redis",
                          "redis://:wrong-" + password + "@127.0.0.1:" + std::to_string(redis.port())});
    CHECK(wrong.code == 3);
    CHECK(wrong.err.find(password) == std::string::npos);
    CHECK(wrong.err.rfind("inferprof: error: ", 0) == 0);
  }

  TEST_CASE("Redis unreachable at start: exit 3, no reports") {
    auto& f = cache_fixture();
    TempDir out;
    int port = RedisServer::free_port();
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--caches", "l2", "--redis",
                      "redis://127.0.0.1:" + std::to_string(port), "--out", out.file("r")});
    CHECK(r.code == 3);
    CHECK(r.err.rfind(fmt::format("inferprof: error: cannot reach Redis at redis://127.0.0.1:{}", port), 0) == 0);
    CHECK(dir_is_empty_or_missing(out.path() / "r"));
  }

  TEST_CASE("Redis lost mid-replay: the tier degrades, the run completes") {
    REQUIRE_REDIS_SERVER();
    auto& f = cache_fixture();
    TempDir dir;
    std::string trace = dir.file("long.jsonl");
    REQUIRE(run_cli({"gen-trace", "--requests", "60000", "--keys", "5000", "-o", trace}).code == 0);
    RedisServer redis;
    // Kill the server once the replay is demonstrably under way (keys are being
    // written), not after a fixed delay that a loaded machine could outlast.
    std::thread killer([&] {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      while (redis.integer("DBSIZE") < 500 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      redis.stop(/*hard=*/true);
    });
    auto r = run_cli({"run", f.model, "--trace", trace, "--caches", "l2", "--redis", redis.url(), "--format", "json"});
    killer.join();
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    auto s = parser.parse(r.out);
    CHECK(json_number(s["requests"]) == 60000);
    bool degraded = false;
    double errors = 0;
    for (auto tier : s["caches"].get_array()) {
      REQUIRE(tier["degraded"].get(degraded) == simdjson::SUCCESS);
      errors = json_number(tier["errors"]);
    }
    CHECK(degraded);
    CHECK(errors > 0);
  }
}
