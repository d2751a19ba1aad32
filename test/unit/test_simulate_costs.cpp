// simulate's cost model: each configuration's lookups and inserts added to
// what a request costs outside the cache, on constructed costs with known
// answers, and the tier costs read back from a run's trace.json.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "inferprof/error.hpp"
#include "inferprof/simulate.hpp"
#include "temp_dir.hpp"

using namespace inferprof;
using inferprof::testing::TempDir;

namespace {

// Tier costs every configuration below can use: L1 lookup hit 1, miss 2,
// fill 3, store 21; L2 hit 6, miss 3, insert 6; L3 hit 8, miss 4, insert 10.
SimCosts measured() {
  SimCosts c;
  c.miss_mean_us = 956;
  c.l3_hit_mean_us = 458;
  c.hit_mean_us = 4;
  c.tiers[0].lookup_hit_us = 1;
  c.tiers[0].lookup_miss_us = 2;
  c.tiers[0].insert_us = 3;
  c.tiers[0].store_us = 21;
  c.tiers[1].lookup_hit_us = 6;
  c.tiers[1].lookup_miss_us = 3;
  c.tiers[1].insert_us = 6;
  c.tiers[2].lookup_hit_us = 8;
  c.tiers[2].lookup_miss_us = 4;
  c.tiers[2].insert_us = 10;
  return c;
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) == 0; });
}

}  // namespace

TEST_SUITE("simulate costs") {
  TEST_CASE("cache_costs: the lookups and inserts each outcome makes, per configuration") {
    const SimCosts c = measured();
    SUBCASE("l1,l2,l3") {
      const SimCacheCosts k = cache_costs(c, true, true, true);
      CHECK(k.assumed.empty());
      CHECK(k.total(0) == doctest::Approx(1));          // L1 found it
      CHECK(k.lookup_us[1] == doctest::Approx(2 + 6));  // L1 missed, L2 found
      CHECK(k.insert_us[1] == doctest::Approx(3));      // L1 filled
      CHECK(k.lookup_us[2] == doctest::Approx(2 + 3 + 8));
      CHECK(k.insert_us[2] == doctest::Approx(21 + 6));  // output encoded into L1, then L2
      CHECK(k.lookup_us[3] == doctest::Approx(2 + 3 + 4));
      CHECK(k.insert_us[3] == doctest::Approx(21 + 6 + 10));  // and the preprocessed input into L3
    }
    SUBCASE("l1 alone: a miss pays its lookup and the store") {
      const SimCacheCosts k = cache_costs(c, true, false, false);
      CHECK(k.total(0) == doctest::Approx(1));
      CHECK(k.total(3) == doctest::Approx(2 + 21));
      CHECK(k.total(1) == 0);
      CHECK(k.total(2) == 0);
    }
    SUBCASE("l3 alone: no result tier, nothing encoded") {
      const SimCacheCosts k = cache_costs(c, false, false, true);
      CHECK(k.total(2) == doctest::Approx(8));
      CHECK(k.total(3) == doctest::Approx(4 + 10));
    }
    SUBCASE("l2 first: its store from L1's, the put swapped, and said so") {
      const SimCacheCosts k = cache_costs(c, false, true, false);
      CHECK(k.total(1) == doctest::Approx(6));
      CHECK(k.total(3) == doctest::Approx(3 + (21 - 3 + 6)));
      REQUIRE(k.assumed.size() == 1);
      CHECK(k.assumed[0].find("l2 store") == 0);
    }
    SUBCASE("none: no cache work") {
      const SimCacheCosts k = cache_costs(c, false, false, false);
      for (int o = 0; o < 4; ++o)
        CHECK(k.total(o) == 0);
    }
  }

  TEST_CASE("cache_costs: what a run without tiers did not measure is 0 and listed") {
    SimCosts c;
    c.miss_mean_us = 100;
    const SimCacheCosts k = cache_costs(c, true, true, true);
    for (int o = 0; o < 4; ++o)
      CHECK(k.total(o) == 0);
    CHECK(mentions(k.assumed, "l1 lookup (hit): not measured, taken as 0"));
    CHECK(mentions(k.assumed, "l2 insert: not measured, taken as 0"));
    CHECK(mentions(k.assumed, "l3 insert: not measured, taken as 0"));
    CHECK(mentions(k.assumed, "l1 store (encoding the output): not measured, taken as 0"));
    // A hit measured without a miss stands in for it.
    c.tiers[0].lookup_hit_us = 5;
    CHECK(cache_costs(c, true, false, false).total(3) == doctest::Approx(5));
    CHECK(mentions(cache_costs(c, true, false, false).assumed, "l1 lookup (miss): not measured, taken as its hit's"));
  }

  TEST_CASE("predict_latency: mean, speedup and breakdown from constructed costs") {
    const SimCosts c = measured();
    const std::uint64_t served[4] = {4, 2, 0, 4};  // l1,l2: 40% L1, 20% L2, 40% computed
    const SimPrediction p = predict_latency(c, true, true, false, served);
    REQUIRE(p.available);
    CHECK(p.outcome_us[0] == doctest::Approx(4 + 1));
    CHECK(p.outcome_us[1] == doctest::Approx(4 + 2 + 6 + 3));
    CHECK(p.outcome_us[3] == doctest::Approx(956 + 2 + 3 + 21 + 6));
    CHECK(p.mean_us == doctest::Approx(0.4 * 5 + 0.2 * 15 + 0.4 * 988));
    CHECK(p.cache_us == doctest::Approx(0.4 * 1 + 0.2 * 11 + 0.4 * 32));
    CHECK(p.speedup == doctest::Approx(956 / (0.4 * 5 + 0.2 * 15 + 0.4 * 988)));
    CHECK(!p.p99_us);  // no per-request samples

    // A tier that never hits only adds its cost: the speedup drops below 1.
    const std::uint64_t all_miss[4] = {0, 0, 0, 10};
    CHECK(predict_latency(c, false, false, true, all_miss).speedup == doctest::Approx(956.0 / (956 + 14)));
    CHECK(predict_latency(c, false, false, false, all_miss).speedup == doctest::Approx(1));
  }

  TEST_CASE("predict_latency: the p99 shifts each outcome's samples by its cache work") {
    SimCosts c = measured();
    c.per_request = true;
    c.miss_us.assign(100, 1000);
    c.hit_us.assign(100, 4);
    const std::uint64_t served[4] = {50, 0, 0, 50};
    const SimPrediction p = predict_latency(c, true, false, false, served);
    REQUIRE(p.p99_us);
    CHECK(*p.p99_us == doctest::Approx(1000 + 2 + 21));
  }

  TEST_CASE("load_sim_costs: tier costs from trace.json, request costs without the run's cache work") {
    TempDir dir;
    dir.write("run/summary.json",
              R"({"schema": "inferprof.summary/1",
                  "stages": {"input": {"mean_us": 10}, "preprocess": {"mean_us": 30}, "overhead": {"mean_us": 2}},
                  "total": {"mean_us": 380},
                  "caches": [{"tier": "l1", "entries": 1, "bytes": 100}, {"tier": "l2", "entries": 1, "bytes": 100},
                             {"tier": "l3", "entries": 1, "bytes": 4000}],
                  "served_by": [{"outcome": "miss", "requests": 1, "mean_us": 1000},
                                {"outcome": "l1_hit", "requests": 1, "mean_us": 5},
                                {"outcome": "l2_hit", "requests": 1, "mean_us": 15},
                                {"outcome": "l3_hit", "requests": 1, "mean_us": 500}]})");
    auto ev = [](const char* name, const char* cat, double dur) {
      return fmt::format(R"({{"name":"{}","cat":"{}","ph":"X","ts":0,"dur":{},"pid":1,"tid":1}},)", name, cat, dur);
    };
    auto req = [](const char* outcome) {
      return fmt::format(
          R"({{"name":"request","cat":"request","ph":"X","ts":0,"dur":1,"pid":1,"tid":1,"args":{{"cache":"{}"}}}},)",
          outcome);
    };
    std::string events = R"({"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"inferprof"}},)";
    // A miss: three lookups, the L3 insert, compute (with an op that happens
    // to be called l1: not a tier), the store into L1 and the L2 insert.
    events += req("miss") + ev("cache", "stage", 9) + ev("l1", "op", 2) + ev("l2", "op", 3) + ev("l3", "op", 4) +
              ev("input", "stage", 10) + ev("cache", "stage", 10) + ev("l3", "op", 10) + ev("compute", "stage", 900) +
              ev("l1", "op", 500) + ev("cache", "stage", 25) + ev("l1", "op", 20) + ev("l2", "op", 5);
    events += req("l1_hit") + ev("cache", "stage", 1) + ev("l1", "op", 1);
    events += req("l2_hit") + ev("cache", "stage", 11) + ev("l1", "op", 2) + ev("l2", "op", 6) + ev("l1", "op", 3);
    events += req("l3_hit") + ev("cache", "stage", 13) + ev("l1", "op", 2) + ev("l2", "op", 3) + ev("l3", "op", 8) +
              ev("compute", "stage", 400) + ev("cache", "stage", 29) + ev("l1", "op", 22) + ev("l2", "op", 7);
    events.pop_back();
    dir.write("run/trace.json", R"({"traceEvents":[)" + events + R"(],"otherData":{}})");

    SimCosts c = load_sim_costs(dir.file("run"));
    CHECK(c.span_requests == 4);
    CHECK(c.tiers[0].lookup_hit_us.value_or(-1) == doctest::Approx(1));
    CHECK(c.tiers[0].lookup_miss_us.value_or(-1) == doctest::Approx(2));
    CHECK(c.tiers[0].insert_us.value_or(-1) == doctest::Approx(3));
    CHECK(c.tiers[0].store_us.value_or(-1) == doctest::Approx(21));
    CHECK(c.tiers[1].lookup_hit_us.value_or(-1) == doctest::Approx(6));
    CHECK(c.tiers[1].lookup_miss_us.value_or(-1) == doctest::Approx(3));
    CHECK(c.tiers[1].insert_us.value_or(-1) == doctest::Approx(6));
    CHECK(!c.tiers[1].store_us);
    CHECK(c.tiers[2].lookup_hit_us.value_or(-1) == doctest::Approx(8));
    CHECK(c.tiers[2].lookup_miss_us.value_or(-1) == doctest::Approx(4));
    CHECK(c.tiers[2].insert_us.value_or(-1) == doctest::Approx(10));
    // No requests.csv: summary.json's per-outcome means less the cache work the spans measured.
    CHECK(!c.per_request);
    CHECK(c.miss_mean_us == doctest::Approx(1000 - (2 + 3 + 4 + 10 + 21 + 6)));
    CHECK(c.l3_hit_mean_us == doctest::Approx(500 - (2 + 3 + 8 + 21 + 6)));
    CHECK(c.hit_mean_us == doctest::Approx(5 - 1));

    // With requests.csv: each row's cache_us is taken out.
    dir.write("run/requests.csv",
              "seq,id,line,key,worker,arrival_us,start_us,total_us,queue_us,cache_us,load_us,input_us,"
              "preprocess_us,h2d_us,compute_us,d2h_us,overhead_us,cache,ok,error\n"
              "0,1,1,a,0,0,0,1000,0,44,0,10,30,,900,,16,miss,true,\n"
              "1,2,2,a,0,0,0,5,0,1,0,0,0,,0,,4,l1_hit,true,\n"
              "2,3,3,b,0,0,0,15,0,11,0,0,0,,0,,4,l2_hit,true,\n"
              "3,4,4,c,0,0,0,500,0,42,0,0,0,,400,,58,l3_hit,true,\n");
    c = load_sim_costs(dir.file("run"));
    CHECK(c.per_request);
    CHECK(c.miss_mean_us == doctest::Approx(956));
    CHECK(c.l3_hit_mean_us == doctest::Approx(458));
    CHECK(c.hit_mean_us == doctest::Approx(4));

    dir.write("run/trace.json", R"({"traceEvents":[{"name":"l1","cat":"op","dur":"slow"}]})");
    const std::string bad = dir.file("run/trace.json") + ": not an inferprof trace.json";
    // A tier span outside a cache stage is not read; inside one, its duration must be a number.
    CHECK_NOTHROW(load_sim_costs(dir.file("run")));
    dir.write("run/trace.json",
              R"({"traceEvents":[{"name":"cache","cat":"stage","dur":1},{"name":"l1","cat":"op","dur":"slow"}]})");
    CHECK_THROWS_WITH(load_sim_costs(dir.file("run")), doctest::Contains(bad.c_str()));
  }

  TEST_CASE("load_sim_costs: a run without trace.json says its tier costs are unknown") {
    TempDir dir;
    dir.write("run/summary.json",
              R"({"schema": "inferprof.summary/1", "stages": {}, "total": {"mean_us": 100}, "caches": [],
                  "served_by": []})");
    const SimCosts c = load_sim_costs(dir.file("run"));
    CHECK(c.spans_source.empty());
    CHECK(c.miss_mean_us == doctest::Approx(100));
    CHECK(mentions(c.notes, "no trace.json next to"));
  }
}
