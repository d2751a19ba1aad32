// The replay engine without libtorch: the serve step, the warm-up and the
// lockstep driver over a stand-in for the pipeline (the real one is covered
// end to end by the e2e tests), and compare's lockstep reports.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "inferprof/compare.hpp"
#include "replay/engine.hpp"

using namespace inferprof;
using namespace inferprof::detail;

namespace {

// Serves from a per-CacheSet memory of keys: a key seen before under the same
// caches is an "l1_hit", else a "miss". Logs (caches, request id) per call.
class StandIn final : public RequestServer {
 public:
  std::vector<std::pair<const CacheSet*, std::uint64_t>> calls;
  std::map<const CacheSet*, std::set<std::string>> seen;
  double verify_diff = 0;
  int verified = 0;

  void serve(const TraceRequest& request, RequestRecord& record, const CacheSet* caches, Blob* served,
             const ModelHandle&) override {
    calls.emplace_back(caches, request.id);
    ScopedSpan span(record, Stage::compute);
    if (!caches) return;
    record.cache_outcome = seen[caches].insert(request.key).second ? "miss" : "l1_hit";
    if (served) *served = std::make_shared<const std::string>("out");
  }
  double verify(const TraceRequest&, const Blob& served, const ModelHandle&) override {
    ++verified;
    return served ? verify_diff : 1e9;
  }
  ModelHandle active() const override { return nullptr; }
};

TraceRequest request_of(std::uint64_t id, std::string key) {
  TraceRequest r;
  r.id = id;
  r.key = std::move(key);
  return r;
}

}  // namespace

TEST_SUITE("engine") {
  TEST_CASE("serve step: the record is reset, identified, timed, and carries the server's outcome") {
    StandIn server;
    CacheSet caches;
    RequestRecord record;
    record.cache_outcome = "stale";
    record.spans.resize(7);
    const TraceRequest req = request_of(17, "k");
    serve_step(server, &caches, nullptr, nullptr, ServeJob{&req, 3, 40, 0, 2}, record);
    CHECK(record.seq == 3);
    CHECK(record.id == 17);
    CHECK(record.line == 40);
    CHECK(record.key == "k");
    CHECK(record.worker == 2);
    CHECK(record.cache_outcome == "miss");
    CHECK(record.spans.size() == 1);  // the stand-in's compute span only: the old ones were reset
    CHECK(record.end >= record.start);
    CHECK(record.arrival == record.start);  // closed loop: it arrives when served
    serve_step(server, &caches, nullptr, nullptr, ServeJob{&req, 4, 41, 0, 2}, record);
    CHECK(record.cache_outcome == "l1_hit");
  }

  TEST_CASE("serve step: verify checks the sampled hits, never a miss, and counts a mismatch") {
    StandIn server;
    server.verify_diff = 0.5;
    CacheSet caches;
    Verifier verifier(true, 1.0);
    RequestRecord record;
    const TraceRequest req = request_of(1, "k");
    serve_step(server, &caches, nullptr, &verifier, ServeJob{&req, 0, 1, 0, 0}, record);  // miss
    serve_step(server, &caches, nullptr, &verifier, ServeJob{&req, 1, 2, 0, 0}, record);  // hit
    CHECK(server.verified == 1);
    const VerifyReport v = verifier.report();
    CHECK(v.checked == 1);
    CHECK(v.mismatches == 1);
    CHECK(v.max_abs_diff == doctest::Approx(0.5));
    CHECK(Verifier(false, 1.0).wants(0) == false);  // no caches: nothing to verify
  }

  TEST_CASE("warm-up serves without caches and stops when told") {
    StandIn server;
    const TraceRequest req = request_of(1, "k");
    std::vector<double> us;
    warm_up(
        server, req, 3, [] { return false; }, [&](int, double t) { us.push_back(t); });
    CHECK(us.size() == 3);
    for (const auto& call : server.calls)
      CHECK(call.first == nullptr);
    int stops = 0;
    warm_up(
        server, req, 5, [&] { return ++stops > 2; }, nullptr);
    CHECK(server.calls.size() == 5);
  }

  TEST_CASE("lockstep: every request under every lane, the order rotated per request, one entry per request") {
    StandIn server;
    CacheSet a, b, c;
    std::vector<LockstepLane> lanes(3);
    lanes[0].caches = &a;
    lanes[1].caches = &b;
    lanes[2].caches = &c;
    std::vector<TraceRequest> trace = {request_of(10, "x"), request_of(11, "y"), request_of(12, "x"),
                                       request_of(13, "x")};
    std::size_t at = 0;
    auto next = [&](TraceRequest& r, std::uint64_t& line) {
      if (at == trace.size()) return false;
      r = trace[at];
      line = ++at;
      return true;
    };
    CHECK(drive_lockstep(server, lanes, next, [] { return false; }) == 4);
    REQUIRE(server.calls.size() == 12);
    // Request 0 starts with lane 0, request 1 with lane 1, request 2 with lane 2, request 3 with lane 0 again.
    CHECK(server.calls[0] == std::make_pair(static_cast<const CacheSet*>(&a), std::uint64_t{10}));
    CHECK(server.calls[3] == std::make_pair(static_cast<const CacheSet*>(&b), std::uint64_t{11}));
    CHECK(server.calls[4] == std::make_pair(static_cast<const CacheSet*>(&c), std::uint64_t{11}));
    CHECK(server.calls[5] == std::make_pair(static_cast<const CacheSet*>(&a), std::uint64_t{11}));
    CHECK(server.calls[6] == std::make_pair(static_cast<const CacheSet*>(&c), std::uint64_t{12}));
    CHECK(server.calls[9] == std::make_pair(static_cast<const CacheSet*>(&a), std::uint64_t{13}));
    for (const auto& lane : lanes) {
      CHECK(lane.latency_us.size() == 4);
      // Each lane has its own cache state: x misses once per lane, then hits.
      CHECK(lane.outcome == std::vector<std::string>{"miss", "miss", "l1_hit", "l1_hit"});
    }
  }

  TEST_CASE("lockstep: a limit and a stop end it between requests, never inside one") {
    StandIn server;
    CacheSet a, b;
    std::vector<LockstepLane> lanes(2);
    lanes[0].caches = &a;
    lanes[1].caches = &b;
    auto endless = [](TraceRequest& r, std::uint64_t& line) {
      r = request_of(++line, "k");
      return true;
    };
    CHECK(drive_lockstep(
              server, lanes, endless, [] { return false; }, 5) == 5);
    int polls = 0;
    std::vector<LockstepLane> more(2);
    CHECK(drive_lockstep(server, more, endless, [&] { return ++polls > 3; }) == 3);
    CHECK(more[0].latency_us.size() == 3);
    CHECK(more[1].latency_us.size() == 3);
  }
}

TEST_SUITE("compare report") {
  TEST_CASE("compare modes: names round-trip") {
    CHECK(parse_enum<CompareMode>("lockstep") == CompareMode::lockstep);
    CHECK(parse_enum<CompareMode>("sequential") == CompareMode::sequential);
    CHECK_FALSE(parse_enum<CompareMode>("paired").has_value());
    CHECK(compare_mode_name(CompareMode::lockstep) == "lockstep");
  }

  TEST_CASE("a lockstep comparison says its mode and interval, and each tier's hit cost against the miss cost") {
    CompareResult r;
    r.mode = CompareMode::lockstep;
    r.paired = 120;
    r.interval = "paired bootstrap over 120 requests";
    CompareRow none;
    none.name = "none";
    none.mean_us = 48000;
    none.outcome_costs = {};
    CompareRow l1;
    l1.name = "l1";
    l1.mean_us = 15000;
    l1.tiers.push_back(TierSpec{});
    l1.mean_speedup = Speedup{3.2, 3.0, 3.4, false};
    l1.outcome_costs = {OutcomeStats{"l1_hit", 80, 12.5, 0, 0}, OutcomeStats{"miss", 40, 47000, 0, 0}};
    CacheTierReport t;
    t.spec.tier = "l1";
    l1.last.caches.push_back(t);
    r.rows = {none, l1};

    const std::string table = render_compare_table(r);
    CAPTURE(table);
    CHECK(table.find(" · lockstep") != std::string::npos);
    CHECK(table.find("speedup intervals: lockstep mode, paired bootstrap over 120 requests") != std::string::npos);
    CHECK(table.find("l1 hit cost") != std::string::npos);
    CHECK(table.find("miss cost") != std::string::npos);
    CHECK(table.find("12.5 µs") != std::string::npos);

    const std::string csv = render_compare_csv(r);
    CAPTURE(csv);
    CHECK(csv.find("\nl1,") != std::string::npos);
    CHECK(csv.find(",lockstep,12.500,,,47000.000\n") != std::string::npos);
    CHECK(csv.find(",lockstep,,,,\n") != std::string::npos);  // none: no outcome served anything cached

    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(render_compare_json(r));
    CHECK(std::string_view(doc["mode"]) == "lockstep");
    CHECK(std::string_view(doc["interval"]) == "paired bootstrap over 120 requests");
    CHECK(std::uint64_t(doc["paired_requests"]) == 120);
    simdjson::dom::element costs = doc["configurations"].at(1)["outcome_costs"];
    CHECK(double(costs["l1_hit"]["mean_us"]) == doctest::Approx(12.5));
    CHECK(std::uint64_t(costs["miss"]["count"]) == 40);
  }
}
