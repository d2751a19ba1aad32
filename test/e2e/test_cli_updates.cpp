// End-to-end: models served from the store, model_update events in the trace
// in each update mode, and `run --replicas N` sharing a real redis-server.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <algorithm>
#include <map>

#include "cli_harness.hpp"
#include "redis_server.hpp"
#include "test_util.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

// Two versions of one model (different weights, so different outputs) in a
// file store, and a trace: 5 keys cycling, the update after request `before`.
struct StoreFixture {
  TempDir dir;
  std::string root = dir.file("models");
  std::string url = "file://" + root;
  std::string trace;
  int before = 30, after = 30;
  StoreFixture(const std::string& to_version = "v2", bool with_ts = false) {
    for (int seed : {1, 2}) {
      std::string pt = dir.file(fmt::format("v{}.pt", seed));
      auto g = run_cli({"gen-model", "--arch", "mlp", "--seed", std::to_string(seed), "-o", pt});
      if (g.code != 0) throw std::runtime_error(g.err);
      auto p = run_cli({"store", "put", url, fmt::format("m@v{}", seed), pt});
      if (p.code != 0) throw std::runtime_error(p.err);
    }
    std::string lines;
    int line = 0;
    auto request = [&](int i) {
      lines +=
          fmt::format(R"({{"id": {}, {}"key": "k{}", "input": {{"shape": [1, 16], "dtype": "float32", "seed": {}}}}})",
                      i, with_ts ? fmt::format(R"("ts_ms": {}, )", i * 2) : "", i % 5, i % 5) +
          "\n";
      ++line;
    };
    for (int i = 0; i < before; ++i)
      request(i);
    lines += fmt::format(R"({{"event": "model_update", "model": "m", "version": "{}"{}}})", to_version,
                         with_ts ? fmt::format(R"(, "ts_ms": {})", before * 2 - 1) : "") +
             "\n";
    for (int i = before; i < before + after; ++i)
      request(i);
    trace = dir.write("requests.jsonl", lines);
  }
};

simdjson::dom::element parse_file(simdjson::dom::parser& parser, const std::string& path) {
  return parser.load(path);
}

// requests.csv: the model_version column, by request id.
std::map<int, std::string> versions_by_id(const std::string& csv) {
  std::map<int, std::string> out;
  std::istringstream in(csv);
  std::string line;
  // By name: columns are appended over time (the CPU-time columns follow model_version).
  auto fields = [](const std::string& row) {
    std::vector<std::string> cells(1);
    for (char c : row) {
      if (c == ',')
        cells.emplace_back();
      else
        cells.back() += c;
    }
    return cells;
  };
  std::getline(in, line);
  const auto header = fields(line);
  const auto at = std::find(header.begin(), header.end(), "model_version");
  REQUIRE(at != header.end());
  const auto column = static_cast<std::size_t>(at - header.begin());
  while (std::getline(in, line)) {
    const auto row = fields(line);  // these traces' keys hold no commas
    REQUIRE(row.size() == header.size());
    out[std::stoi(row[1])] = row[column];
  }
  return out;
}

}  // namespace

TEST_SUITE("e2e model updates") {
  TEST_CASE("sync update: the next request reloads, and no request after the swap gets an old result") {
    StoreFixture f;
    TempDir out;
    auto r = run_cli({"run", "m@v1", "--store", f.url, "--trace", f.trace, "--caches", "l1", "--verify", "--update",
                      "sync", "--warmup", "1", "--out", out.file("r"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("model updates") != std::string::npos);
    CHECK(r.out.find("v1 -> v2") != std::string::npos);
    simdjson::dom::parser parser;
    auto s = parse_file(parser, out.file("r") + "/summary.json");
    CHECK(std::string_view(s["run"]["model_version"]) == "v1");
    simdjson::dom::array updates = s["updates"];
    REQUIRE(updates.size() == 1);
    auto u = updates.at(0);
    CHECK(std::string_view(u["from_version"]) == "v1");
    CHECK(std::string_view(u["to_version"]) == "v2");
    CHECK(std::string_view(u["mode"]) == "sync");
    CHECK(json_number(u["stalled"]) == 1);  // one worker: the first request after the event loads it
    CHECK(json_number(u["stale_served"]) == 0);
    CHECK(json_number(u["invalidated"]) == 5);  // v1's five results left L1
    CHECK(json_number(u["live_ms"]) >= json_number(u["announced_ms"]));
    CHECK(json_number(u["before"]["requests"]) == f.before);
    CHECK(json_number(u["during"]["requests"]) == 1);
    CHECK(json_number(u["after"]["requests"]) == f.after - 1);
    CHECK(json_number(s["verify"]["checked"]) > 0);
    CHECK(json_number(s["verify"]["mismatches"]) == 0);
    // The request that loaded v2 carries the load in its `load` stage.
    CHECK(json_number(s["stages"]["load"]["count"]) == 1);
    auto versions = versions_by_id(slurp(out.file("r") + "/requests.csv"));
    REQUIRE(versions.size() == static_cast<std::size_t>(f.before + f.after));
    for (auto& [id, v] : versions)
      CHECK(v == (id < f.before ? "v1" : "v2"));
    // The flame graph shows the load's parts.
    std::string folded = slurp(out.file("r") + "/stacks.folded");
    CHECK(folded.find("request;load;deserialize ") != std::string::npos);
    CHECK(folded.find("request;load;fetch ") != std::string::npos);
  }

  TEST_CASE("async update: the old version serves while the new one loads, and what it served is counted stale") {
    StoreFixture f;
    TempDir out;
    auto r = run_cli({"run", "m@v1", "--store", f.url, "--trace", f.trace, "--caches", "l1", "--update", "async",
                      "--warmup", "1", "--out", out.file("r"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    auto u = parse_file(parser, out.file("r") + "/summary.json")["updates"].at(0);
    CHECK(std::string_view(u["mode"]) == "async");
    CHECK(json_number(u["stalled"]) == 0);
    auto versions = versions_by_id(slurp(out.file("r") + "/requests.csv"));
    int old_after = 0;
    for (auto& [id, v] : versions) {
      if (id < f.before)
        CHECK(v == "v1");
      else
        old_after += v == "v1";
    }
    CHECK(json_number(u["stale_served"]) == old_after);
    // Once v2 served, v1 never did again.
    bool seen_v2 = false;
    for (auto& [id, v] : versions) {
      if (v == "v2")
        seen_v2 = true;
      else if (seen_v2)
        FAIL("request " << id << " got v1 after v2 went live");
    }
  }

  TEST_CASE("preload update: loaded ahead, nobody is served stale") {
    StoreFixture f;
    TempDir out;
    auto r = run_cli({"run", "m@v1", "--store", f.url, "--trace", f.trace, "--update", "preload", "--out",
                      out.file("r"), "--no-progress", "--format", "json"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    auto u = parser.parse(r.out)["updates"].at(0);
    CHECK(std::string_view(u["mode"]) == "preload");
    CHECK(json_number(u["stale_served"]) == 0);
    for (auto& [id, v] : versions_by_id(slurp(out.file("r") + "/requests.csv")))
      CHECK(v == (id < f.before ? "v1" : "v2"));
  }

  TEST_CASE("open loop: the update happens at its ts_ms") {
    StoreFixture f("v2", /*with_ts=*/true);
    auto r = run_cli({"run", "m@v1", "--store", f.url, "--trace", f.trace, "--open-loop", "--update", "sync",
                      "--format", "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    auto u = parser.parse(r.out)["updates"].at(0);
    // Announced at trace time 59 ms (the first request is at 0 ms).
    CHECK(json_number(u["announced_ms"]) >= 58.0);
    CHECK(json_number(u["announced_ms"]) < 59.0 + 50.0);
  }

  TEST_CASE("an update to a version the store lacks is reported and the old version keeps serving") {
    StoreFixture f("v9");
    auto r = run_cli({"run", "m@v1", "--store", f.url, "--trace", f.trace, "--format", "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    auto s = parser.parse(r.out);
    auto u = s["updates"].at(0);
    CHECK(std::string_view(u["error"]).find("no model m@v9") != std::string_view::npos);
    CHECK(json_number(u["stale_served"]) == 0);
    CHECK(json_number(s["failed"]) == 0);
    CHECK(std::string(r.out).find("update to m@v9 failed, v1 kept serving") != std::string::npos);
  }

  TEST_CASE("model store errors: bad reference, unknown model, tampered bytes") {
    StoreFixture f;
    auto bad = run_cli({"run", "m@", "--store", f.url, "--trace", f.trace});
    CHECK(bad.code == 2);
    CHECK(bad.err.find("inferprof: error: model: expected NAME@VERSION or NAME") == 0);
    CHECK(bad.err.find("got 'm@'") != std::string::npos);
    auto missing = run_cli({"run", "nosuch@v1", "--store", f.url, "--trace", f.trace});
    CHECK(missing.code == 2);
    CHECK(missing.err.find("no model nosuch@v1") != std::string::npos);
    {
      std::ofstream tamper(f.root + "/m/v1/model.pt", std::ios::binary | std::ios::app);
      tamper << "x";
    }
    auto tampered = run_cli({"run", "m@v1", "--store", f.url, "--trace", f.trace});
    CHECK(tampered.code == 3);
    CHECK(tampered.err.find("sha256 mismatch") != std::string::npos);
    auto plain = run_cli({"run", "m@v1", "--store-zstd", "--trace", f.trace});
    CHECK(plain.code == 2);
    CHECK(plain.err.find("add --store URL") != std::string::npos);
  }

  TEST_CASE("a request naming a version gets that version, before and after an update") {
    StoreFixture f;
    std::string lines;
    lines += R"({"id": 1, "key": "a", "model": "m", "input": {"shape": [1, 16], "seed": 1}})"
             "\n";
    lines += R"({"event": "model_update", "model": "m", "version": "v2"})"
             "\n";
    lines += R"({"id": 2, "key": "a", "model": "m@v1", "input": {"shape": [1, 16], "seed": 1}})"
             "\n";
    lines += R"({"id": 3, "key": "a", "input": {"shape": [1, 16], "seed": 1}})"
             "\n";
    lines += R"({"id": 4, "key": "a", "model": "m@v1", "input": {"shape": [1, 16], "seed": 1}})"
             "\n";
    std::string trace = f.dir.write("named.jsonl", lines);
    TempDir out;
    auto r = run_cli({"run", "m@v1", "--store", f.url, "--trace", trace, "--caches", "l1", "--verify", "--out",
                      out.file("r"), "--format", "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    auto versions = versions_by_id(slurp(out.file("r") + "/requests.csv"));
    CHECK(versions[1] == "v1");
    CHECK(versions[2] == "v1");  // named: not stale, and v1's result is still cached for it
    CHECK(versions[3] == "v2");
    CHECK(versions[4] == "v1");
    simdjson::dom::parser parser;
    auto s = parser.parse(r.out);
    CHECK(json_number(s["updates"].at(0)["stale_served"]) == 0);
    CHECK(json_number(s["verify"]["mismatches"]) == 0);
    auto other = f.dir.write("other.jsonl", R"({"id": 9, "model": "x@v1", "input": {"shape": [1, 16], "seed": 1}})"
                                            "\n");
    auto bad = run_cli({"run", "m@v1", "--store", f.url, "--trace", other, "--no-progress"});
    CHECK(bad.code == 2);
    CHECK(bad.err.find("request 9 names model 'x', but this replay serves 'm'") != std::string::npos);
  }

  TEST_CASE("a plain model file with update events: served, with a warning that they did not apply") {
    StoreFixture f;
    auto r = run_cli({"run", f.root + "/m/v1/model.pt", "--trace", f.trace, "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("1 model_update events in the trace were not applied") != std::string::npos);
  }
}

TEST_SUITE("e2e replicas") {
  TEST_CASE("3 replicas split the trace, share Redis L2 and get the update over pub/sub") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    // Open loop (a request every 2 ms, the update at 59 ms): every replica is
    // mid-replay when replica 0 publishes it.
    StoreFixture f("v2", /*with_ts=*/true);
    TempDir out;
    auto r = run_cli(
        {"run",      "m@v1",     "--store", f.url,       "--store-redis", redis.url(1), "--trace",     f.trace,
         "--caches", "l1,l2",    "--redis", redis.url(), "--update",      "async",      "--open-loop", "--replicas",
         "3",        "--warmup", "1",       "--out",     out.file("r")});
    REQUIRE_MESSAGE(r.code == 0, std::string(r.err + r.out));
    CHECK(r.out.find("3 replicas") != std::string::npos);
    simdjson::dom::parser parser;
    auto s = parse_file(parser, out.file("r") + "/replicas.json");
    CHECK(json_number(s["requests"]) == f.before + f.after);
    CHECK(json_number(s["failed"]) == 0);
    simdjson::dom::array replicas = s["replicas"];
    REQUIRE(replicas.size() == 3);
    for (auto rep : replicas) {
      CHECK(std::string_view(rep["status"]) == "ok");
      CHECK(json_number(rep["requests"]) == 20);  // round-robin: 60 requests, 20 each
    }
    auto u = s["updates"].at(0);
    CHECK(std::string_view(u["version"]) == "v2");
    CHECK(json_number(u["replicas_live"]) == 3);
    CHECK(json_number(u["skew_ms"]) >= 0);
    for (int i = 0; i < 3; ++i)
      CHECK(fs::exists(out.file("r") + fmt::format("/replica-{}/summary.json", i)));
    // The shared namespace is cleared after the run; the model tier (db 1) keeps the models.
    CHECK(redis.integer("DBSIZE") == 0);
  }

  TEST_CASE("closed loop, 2 replicas, sync: the update takes effect at its trace line on both, whatever their pace") {
    // Each replica replays its shard at its own pace. When replicas announced an update on replica 0's
    // message, a replica ahead of it served requests before the event with v2, and one done before the
    // message came never had it live (live on 0 or 1 of 2 in most runs under load).
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    StoreFixture f("v2");
    for (int run = 0; run < 3; ++run) {
      TempDir out;
      auto r = run_cli({"run", "m@v1", "--store", f.url, "--trace", f.trace, "--caches", "l1,l2", "--redis",
                        redis.url(), "--update", "sync", "--replicas", "2", "--warmup", "1", "--out", out.file("r")});
      REQUIRE_MESSAGE(r.code == 0, std::string(r.err + r.out));
      simdjson::dom::parser parser;
      auto s = parse_file(parser, out.file("r") + "/replicas.json");
      CHECK(json_number(s["updates"].at(0)["replicas_live"]) == 2);
      // Requests 0..29 come before the event, 30..59 after it, on either replica.
      for (int k = 0; k < 2; ++k)
        for (const auto& [id, version] :
             versions_by_id(slurp(out.file("r") + fmt::format("/replica-{}/requests.csv", k))))
          CHECK_MESSAGE(version == (id < f.before ? "v1" : "v2"), "replica " << k << ", request " << id);
    }
    CHECK(redis.integer("DBSIZE") == 0);
  }

  TEST_CASE("a replica that dies is reported, the others finish, nothing hangs") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    StoreFixture f;
    TempDir out;
    auto r = run_cli({"run", "m@v1", "--store", f.url, "--trace", f.trace, "--caches", "l2", "--redis", redis.url(),
                      "--replicas", "3", "--split", "hash", "--out", out.file("r")},
                     "INFERPROF_TEST_CRASH_REPLICA=1");
    CHECK(r.code == 3);
    CHECK(r.err.find("1 of 3 replicas failed") != std::string::npos);
    simdjson::dom::parser parser;
    auto s = parse_file(parser, out.file("r") + "/replicas.json");
    CHECK(json_number(s["failed"]) == 1);
    CHECK(std::string_view(s["replicas"].at(1)["status"]) == "killed by signal 6");
    CHECK(std::string_view(s["replicas"].at(0)["status"]) == "ok");
    CHECK(std::string_view(s["replicas"].at(2)["status"]) == "ok");
  }
}
