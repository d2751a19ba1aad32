// The replay engine without libtorch: the serve step, the warm-up and the
// lockstep driver over a stand-in for the pipeline (the real one is covered
// end to end by the e2e tests), and compare's lockstep reports.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "inferprof/compare.hpp"
#include "inferprof/lifecycle.hpp"
#include "replay/driver.hpp"
#include "replay/engine.hpp"
#include "temp_dir.hpp"

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
    record.cache_outcome = seen[caches].insert(request.key).second ? CacheOutcome::miss : CacheOutcome::l1_hit;
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
    record.cache_outcome = CacheOutcome::l2_hit;  // stale: serve must set it
    record.spans.resize(7);
    const TraceRequest req = request_of(17, "k");
    serve_step(server, &caches, nullptr, nullptr, ServeJob{&req, 3, 40, 0, 2}, record);
    CHECK(record.seq == 3);
    CHECK(record.id == 17);
    CHECK(record.line == 40);
    CHECK(record.key == "k");
    CHECK(record.worker == 2);
    CHECK(record.cache_outcome == CacheOutcome::miss);
    CHECK(record.spans.size() == 1);  // the stand-in's compute span only: the old ones were reset
    CHECK(record.end >= record.start);
    CHECK(record.arrival == record.start);  // closed loop: it arrives when served
    serve_step(server, &caches, nullptr, nullptr, ServeJob{&req, 4, 41, 0, 2}, record);
    CHECK(record.cache_outcome == CacheOutcome::l1_hit);
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
      CHECK(lane.series.latency_us.size() == 4);
      // Each lane has its own cache state: x misses once per lane, then hits.
      CHECK(lane.series.outcome == std::vector<CacheOutcome>{CacheOutcome::miss, CacheOutcome::miss,
                                                             CacheOutcome::l1_hit, CacheOutcome::l1_hit});
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
    CHECK(more[0].series.latency_us.size() == 3);
    CHECK(more[1].series.latency_us.size() == 3);
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
    l1.outcome_costs = {OutcomeStats{CacheOutcome::l1_hit, 80, 12.5, 0, 0},
                        OutcomeStats{CacheOutcome::miss, 40, 47000, 0, 0}};
    CacheTierReport t;
    t.spec.tier = CacheLevel::l1;
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
    CHECK(csv.find(",lockstep,12.500,,,47000.000,") != std::string::npos);
    CHECK(csv.find(",lockstep,,,,,baseline,") != std::string::npos);  // none: no outcome served anything cached

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

// ---- The drivers of run_replay (driver.hpp) over a stand-in ----
namespace {

// Thread-safe: every request it serves is logged (id, caches given or not);
// it can fail, or request a stop, when it reaches a given request id.
class Recorder final : public RequestServer {
 public:
  std::mutex mutex;
  std::vector<std::uint64_t> served;          // ids of measured requests, in the order served
  int warmups = 0;                            // served without caches: the warm-up (reported or settling)
  int warmups_without_cpu = 0;                // of those, how many did not read the CPU clock
  std::chrono::microseconds warmup_takes{0};  // how long a warm-up request lasts
  std::uint64_t fail_at = 0, bad_at = 0, stop_at = 0;
  std::vector<std::string>* events = nullptr;  // when set, requests are logged here too ("r<id>")

  void serve(const TraceRequest& request, RequestRecord& record, const CacheSet* caches, Blob*,
             const ModelHandle&) override {
    { ScopedSpan input(record, Stage::input); }
    ScopedSpan compute(record, Stage::compute);
    std::lock_guard<std::mutex> lock(mutex);
    if (!caches) {
      ++warmups;
      if (!record.cpu_measured()) ++warmups_without_cpu;
      std::this_thread::sleep_for(warmup_takes);
      return;
    }
    if (request.id == fail_at) throw runtime_failure("the model rejected request " + std::to_string(request.id));
    if (request.id == bad_at) throw bad_input("request " + std::to_string(request.id) + ": no such image");
    served.push_back(request.id);
    if (events) events->push_back("r" + std::to_string(request.id));
    if (request.id == stop_at) lifecycle::request_stop(SIGINT);
  }
  double verify(const TraceRequest&, const Blob&, const ModelHandle&) override { return 0; }
  ModelHandle active() const override { return nullptr; }
};

// A trace file of `n` requests (ids 1..n, ts_ms 10 apart), and before request
// `event_before` (0: none) a model_update to "v2".
std::string write_trace(const inferprof::testing::TempDir& dir, int n, int event_before = 0) {
  std::string lines;
  for (int i = 1; i <= n; ++i) {
    if (i == event_before)
      lines += R"({"event":"model_update","model":"m","version":"v2","ts_ms":)" + std::to_string(i * 10) + "}\n";
    lines += fmt::format(R"({{"id":{},"key":"k{}","ts_ms":{},"input":{{"seed":{}}}}})", i, i % 3, i * 10, i) + "\n";
  }
  return dir.write("trace.jsonl", lines);
}

// What run_replay's set-up does for a driver, with a real Collector (no files).
struct Harness {
  inferprof::testing::TempDir dir;
  std::string trace;
  TraceReader reader;
  Recorder server;
  CacheSet caches;  // no tiers, but given: the recorder tells warm-up (no caches) from the replay
  SkippedRequests skipped{true};
  std::atomic<std::uint64_t> done{0};
  std::vector<std::string> events;
  DriveParts parts{server,
                   &caches,
                   nullptr,
                   nullptr,
                   &skipped,
                   &done,
                   [this](const std::string& v) { events.push_back("update " + v); }};
  Collector collector{CollectorOptions{}};
  TraceRequest warmup_request;
  int gates = 0;
  WarmUpFastest gate_saw;
  std::uint32_t cpu_every = 1;

  explicit Harness(int n, int event_before = 0)
      : trace(write_trace(dir, n, event_before)), reader(trace, TraceReader::Options{}) {
    warmup_request.id = 999;
  }
  JobFeed feed() {
    JobFeed::Options o;
    o.trace_path = trace;
    return JobFeed(o, reader, {}, nullptr, "m");
  }
  std::atomic<int> warmups_reported{0};  // what the warm-up told the display (worker 0's)
  WarmUpPlan warmup(int times) {
    return WarmUpPlan{&warmup_request, times, [this](int, double) { ++warmups_reported; }};
  }
  Gate gate() {
    return [this](const WarmUpFastest& fastest) {
      ++gates;
      gate_saw = fastest;
      GateOpen open;
      open.epoch = now_ns();
      open.cpu.every = cpu_every;
      open.collector = &collector;
      collector.set_epoch(open.epoch);
      return open;
    };
  }
};

}  // namespace

TEST_SUITE("engine") {
  TEST_CASE("job feed: requests numbered in order with their lines, a limit, events ignored without updates") {
    inferprof::testing::TempDir dir;
    const std::string trace = write_trace(dir, 5, 3);
    TraceReader reader(trace, TraceReader::Options{});
    JobFeed::Options o;
    o.trace_path = trace;
    o.limit = 4;
    JobFeed feed(o, reader, {}, nullptr, "m");
    std::vector<std::pair<std::uint64_t, std::uint64_t>> got;  // (seq, id)
    std::vector<std::uint64_t> lines;
    for (Job job; feed.next(job);) {
      CHECK_FALSE(job.event);
      CHECK(job.due == 0);  // closed loop
      got.emplace_back(job.seq, job.request.id);
      lines.push_back(job.line);
    }
    CHECK(got == std::vector<std::pair<std::uint64_t, std::uint64_t>>{{0, 1}, {1, 2}, {2, 3}, {3, 4}});
    CHECK(lines == std::vector<std::uint64_t>{1, 2, 4, 5});  // the event is line 3
    CHECK(feed.ignored_events() == 1);                       // no model store: the update cannot apply
    CHECK(feed.exhausted());
  }

  TEST_CASE("job feed: open loop is due at ts_ms from the first request over --speed, and a replica takes its share") {
    inferprof::testing::TempDir dir;
    const std::string trace = write_trace(dir, 6);
    {
      TraceReader reader(trace, TraceReader::Options{});
      JobFeed::Options o;
      o.trace_path = trace;
      o.open_loop = true;
      o.speed = 2;
      JobFeed feed(o, reader, {}, nullptr, "m");
      feed.set_epoch(1'000'000'000);
      Job job;
      REQUIRE(feed.next(job));
      CHECK(job.due == 1'000'000'000);
      REQUIRE(feed.next(job));
      CHECK(job.due == 1'000'000'000 + 5'000'000);  // 10 ms of trace at 2x
    }
    {
      TraceReader reader(trace, TraceReader::Options{});
      JobFeed::Options o;
      o.trace_path = trace;
      o.replica_index = 1;
      o.replica_count = 2;
      JobFeed feed(o, reader, {}, nullptr, "m");
      std::vector<std::uint64_t> ids;
      for (Job job; feed.next(job);)
        ids.push_back(job.request.id);
      CHECK(ids == std::vector<std::uint64_t>{2, 4, 6});  // rr: request n to replica n mod 2
    }
    {
      const std::string no_ts = dir.write("no_ts.jsonl", "{\"id\":1,\"key\":\"a\",\"input\":{\"seed\":1}}\n");
      TraceReader reader(no_ts, TraceReader::Options{});
      JobFeed::Options o;
      o.trace_path = no_ts;
      o.open_loop = true;
      JobFeed feed(o, reader, {}, nullptr, "m");
      Job job;
      CHECK_THROWS_WITH(feed.next(job), doctest::Contains("no_ts.jsonl:1: open-loop replay needs 'ts_ms'"));
    }
  }

  TEST_CASE("job feed --rate: Poisson arrivals at the rate, the same in every replay, split among replicas") {
    inferprof::testing::TempDir dir;
    const std::string trace = write_trace(dir, 2000);  // ts_ms 0, 10, 20, ...: unused under --rate
    const auto dues = [&](int index, int count) {
      TraceReader reader(trace, TraceReader::Options{});
      JobFeed::Options o;
      o.trace_path = trace;
      o.open_loop = true;
      o.poisson_rps = 500;
      o.replica_index = count > 1 ? index : -1;
      o.replica_count = count > 1 ? count : 0;
      JobFeed feed(o, reader, {}, nullptr, "m");
      std::vector<std::pair<std::uint64_t, Nanos>> out;  // (id, due)
      for (Job job; feed.next(job);)
        out.emplace_back(job.request.id, job.due);
      return out;
    };
    const auto all = dues(0, 1);
    REQUIRE(all.size() == 2000);
    CHECK(all.front().second == 0);
    // 1,999 exponential gaps of mean 2 ms: their mean within 4 standard errors (2 ms / sqrt(1999) each).
    const double mean_gap_ms = static_cast<double>(all.back().second) / 1e6 / 1999;
    CHECK(mean_gap_ms == doctest::Approx(2.0).epsilon(4 / std::sqrt(1999.0)));
    // Exponential, not even: about 1 - 1/e of the gaps are shorter than the mean, and none is negative.
    int shorter = 0;
    for (std::size_t i = 1; i < all.size(); ++i) {
      CHECK(all[i].second >= all[i - 1].second);
      shorter += all[i].second - all[i - 1].second < 2'000'000;
    }
    CHECK(shorter / 1999.0 == doctest::Approx(1 - std::exp(-1.0)).epsilon(0.05));
    CHECK(dues(0, 1) == all);  // seeded: every replay (and every sweep) offers the same arrivals
    // Two replicas: each keeps its requests' times on the one clock, so together they offer the rate.
    auto merged = dues(0, 2);
    const auto other = dues(1, 2);
    merged.insert(merged.end(), other.begin(), other.end());
    std::sort(merged.begin(), merged.end());
    CHECK(merged == all);
  }

  TEST_CASE("CPU sampling calibration: forced N wins, no warm-up means every request, a short request is sampled") {
    WarmUpFastest none;
    CHECK(calibrate_cpu_sampling(none, 0).every == 1);
    CHECK(calibrate_cpu_sampling(none, 7).every == 7);
    WarmUpFastest tiny;  // a request of next to nothing: its reads are most of it
    tiny.with_cpu.begin(true);
    { ScopedSpan compute(tiny.with_cpu, Stage::compute); }
    tiny.with_cpu.finish();
    const CpuSampling s = calibrate_cpu_sampling(tiny, 0);
    CHECK(s.read_ns > 0);
    CHECK(s.every > 1);
    WarmUpFastest slow = tiny;  // the same shape, lasting a second
    slow.with_cpu.end = slow.with_cpu.arrival + 1'000'000'000;
    CHECK(calibrate_cpu_sampling(slow, 0).every == 1);
  }

  TEST_CASE("CPU sampling calibration: what the reads cost a request is the with/without difference, when measured") {
    WarmUpFastest w;  // 20 µs with its two CPU reads (begin, compute's close), 10 µs without
    w.with_cpu.begin(true);
    { ScopedSpan compute(w.with_cpu, Stage::compute); }
    w.with_cpu.finish();
    w.with_cpu.end = w.with_cpu.arrival + 20'000;
    w.without_cpu = 10'000;
    // 10 µs of reads against a 10 µs request: 1% of it when 1 request in 100 reads.
    CHECK(calibrate_cpu_sampling(w, 0).every == 100);
    // Not measured: only the reads' own cost counts (a few µs here), against the rest of the 20 µs.
    w.without_cpu = 0;
    const CpuSampling reads_only = calibrate_cpu_sampling(w, 0);
    CHECK(reads_only.every < 100);
    // A difference under the reads' own cost (noise: 1 ns here) does not make them free.
    w.without_cpu = 19'999;
    CHECK(calibrate_cpu_sampling(w, 0).every > 1);
  }

  TEST_CASE("inline driver: one warm-up, one gate, every request once in trace order, all aggregated") {
    lifecycle::reset_for_tests();
    Harness h(150);  // more than one batch
    JobFeed feed = h.feed();
    const DriveResult r = drive_inline(h.parts, feed, h.warmup(3), h.gate());
    CHECK_FALSE(r.cut_short);
    CHECK(h.gates == 1);
    CHECK(h.warmups_reported == 3);
    CHECK(h.server.warmups >= 3);  // and up to 64 settling serves (warm_up)
    CHECK(h.server.warmups <= 3 + 64);
    CHECK(h.gate_saw.with_cpu.cpu_measured());  // the warm-up reads the CPU clock, as a sampled request does
    REQUIRE(h.server.served.size() == 150);
    for (std::size_t i = 0; i < 150; ++i)
      CHECK(h.server.served[i] == i + 1);
    CHECK(h.done == 150);
    const RunSummary s = h.collector.summarize(RunInfo{});
    CHECK(s.requests == 150);
  }

  TEST_CASE("drivers: CPU sampling reads the CPU clock on exactly the requests it wants, and says so") {
    lifecycle::reset_for_tests();
    for (const bool inline_driver : {true, false}) {
      CAPTURE(inline_driver);
      Harness h(200);
      h.cpu_every = 4;
      // Each record's CPU reading, by seq, as the collector sees it: via requests.csv.
      inferprof::testing::TempDir out;
      CollectorOptions copts;
      copts.out_dir = out.str();
      Collector with_files(copts);
      Gate gate = [&](const WarmUpFastest&) {
        GateOpen open;
        open.epoch = now_ns();
        open.cpu.every = 4;
        open.collector = &with_files;
        with_files.set_epoch(open.epoch);
        return open;
      };
      JobFeed feed = h.feed();
      if (inline_driver)
        drive_inline(h.parts, feed, h.warmup(1), gate);
      else
        drive_threaded(h.parts, feed, 2, h.warmup(1), gate);
      RunSummary s = with_files.summarize(RunInfo{});
      CpuSampling sampling;
      sampling.every = 4;
      std::uint64_t wanted = 0;
      for (std::uint64_t seq = 0; seq < 200; ++seq)
        wanted += sampling.wants(seq) ? 1 : 0;
      CHECK(wanted > 20);
      CHECK(wanted < 90);
      CHECK(s.requests == 200);
      CHECK(s.cpu_requests == wanted);
      CHECK(s.total.cpu);
      with_files.commit(s);
      // requests.csv: a CPU cell where the request was sampled, empty where not.
      std::ifstream csv(out.file("requests.csv"));
      std::string line;
      std::getline(csv, line);
      std::size_t cpu_col = 0;
      {
        std::stringstream header(line);
        std::size_t k = 0;
        for (std::string c; std::getline(header, c, ','); ++k)
          if (c == "cpu_us") cpu_col = k;
      }
      REQUIRE(cpu_col > 0);
      std::uint64_t rows = 0;
      while (std::getline(csv, line)) {
        std::vector<std::string> cells;
        std::stringstream ss(line);
        for (std::string c; std::getline(ss, c, ',');)
          cells.push_back(c);
        const std::uint64_t seq = std::stoull(cells[0]);
        REQUIRE(cells.size() > cpu_col);
        CHECK_MESSAGE(cells[cpu_col].empty() == !sampling.wants(seq), "seq " << seq);
        ++rows;
      }
      CHECK(rows == 200);
    }
  }

  TEST_CASE("warm-up: a short request is served a little longer before CPU sampling is calibrated from it") {
    Recorder server;
    TraceRequest request;
    int reported = 0;
    auto each = [&](int, double) { ++reported; };
    WarmUpFastest steady;
    warm_up(
        server, request, 3, [] { return false; }, each, &steady);
    CHECK(reported == 3);
    CHECK(server.warmups > 3);  // settled: a fast stand-in gets all 64 more within 2 ms, at least some
    CHECK(server.warmups <= 3 + 64);
    CHECK(steady.with_cpu.cpu_measured());
    // Settling alternates, starting without the CPU clock: the two fastest say what the reads cost.
    CHECK(server.warmups_without_cpu == (server.warmups - 3 + 1) / 2);
    CHECK(steady.without_cpu > 0);

    Recorder plain;  // no record asked for: nothing to calibrate, no settling
    warm_up(
        plain, request, 3, [] { return false; }, each, nullptr);
    CHECK(plain.warmups == 3);

    Recorder slow;  // a request over 1 ms: sampling reads every request anyway, no settling
    slow.warmup_takes = std::chrono::microseconds(1200);
    WarmUpFastest slow_steady;
    warm_up(
        slow, request, 2, [] { return false; }, each, &slow_steady);
    CHECK(slow.warmups == 2);
    CHECK(slow.warmups_without_cpu == 0);
    CHECK(slow_steady.with_cpu.total() >= 1'200'000);
    CHECK(slow_steady.without_cpu == 0);

    Recorder none;  // --warmup 0: nothing served, nothing to settle
    WarmUpFastest empty;
    warm_up(
        none, request, 0, [] { return false; }, each, &empty);
    CHECK(none.warmups == 0);
    CHECK_FALSE(empty.with_cpu.cpu_measured());
  }

  TEST_CASE("threaded driver: N workers each warm up, then serve every request exactly once") {
    lifecycle::reset_for_tests();
    Harness h(500);
    JobFeed feed = h.feed();
    const DriveResult r = drive_threaded(h.parts, feed, 3, h.warmup(2), h.gate());
    CHECK_FALSE(r.cut_short);
    CHECK(h.gates == 1);
    CHECK(h.warmups_reported == 2);  // worker 0's
    CHECK(h.server.warmups >= 6);    // 2 per worker, and worker 0 settles up to 64 more
    CHECK(h.server.warmups <= 6 + 64);
    std::vector<std::uint64_t> ids = h.server.served;
    std::sort(ids.begin(), ids.end());
    REQUIRE(ids.size() == 500);
    for (std::size_t i = 0; i < ids.size(); ++i)
      CHECK(ids[i] == i + 1);
    CHECK(h.collector.summarize(RunInfo{}).requests == 500);
  }

  TEST_CASE("drivers: a model update is read ahead, then announced in its place among the requests") {
    lifecycle::reset_for_tests();
    for (const bool inline_driver : {true, false}) {
      CAPTURE(inline_driver);
      Harness h(4, 3);
      h.server.events = &h.events;
      std::vector<std::string> read_ahead;
      JobFeed::Options o;
      o.trace_path = h.trace;
      JobFeed feed(
          o, h.reader, {}, [&](const std::string& v, Nanos) { read_ahead.push_back(v); }, "m");
      if (inline_driver)
        drive_inline(h.parts, feed, h.warmup(0), h.gate());
      else
        drive_threaded(h.parts, feed, 1, h.warmup(0), h.gate());  // one worker: trace order
      CHECK(read_ahead == std::vector<std::string>{"v2"});
      CHECK(h.events == std::vector<std::string>{"r1", "r2", "update v2", "r3", "r4"});
      CHECK(feed.ignored_events() == 0);
    }
  }

  TEST_CASE("drivers: an interrupt releases no more requests, and the ones served are kept") {
    for (const bool inline_driver : {true, false}) {
      CAPTURE(inline_driver);
      lifecycle::reset_for_tests();
      lifecycle::GracefulScope graceful;
      Harness h(3000);
      h.server.stop_at = 10;
      JobFeed feed = h.feed();
      const DriveResult r = inline_driver ? drive_inline(h.parts, feed, h.warmup(1), h.gate())
                                          : drive_threaded(h.parts, feed, 1, h.warmup(1), h.gate());
      CHECK(r.cut_short);
      CHECK(h.server.served.size() >= 10);
      CHECK(h.server.served.size() < 3000);
      if (inline_driver) CHECK(h.server.served.size() == 10);  // stops between requests, at once
      CHECK(h.collector.summarize(RunInfo{}).requests == h.server.served.size());
      lifecycle::reset_for_tests();
    }
  }

  TEST_CASE("drivers: a failing request fails the drive (threads joined), a bad input is skipped when allowed") {
    lifecycle::reset_for_tests();
    for (const bool inline_driver : {true, false}) {
      CAPTURE(inline_driver);
      {
        Harness h(300);
        h.server.fail_at = 77;
        JobFeed feed = h.feed();
        auto drive = [&] {
          return inline_driver ? drive_inline(h.parts, feed, h.warmup(1), h.gate())
                               : drive_threaded(h.parts, feed, 2, h.warmup(1), h.gate());
        };
        CHECK_THROWS_WITH(drive(), doctest::Contains("the model rejected request 77"));
      }
      {
        Harness h(300);
        h.server.bad_at = 5;
        JobFeed feed = h.feed();
        inline_driver ? drive_inline(h.parts, feed, h.warmup(1), h.gate())
                      : drive_threaded(h.parts, feed, 2, h.warmup(1), h.gate());
        CHECK(h.skipped.count() == 1);
        CHECK(h.server.served.size() == 299);
        CHECK(h.collector.summarize(RunInfo{}).requests == 299);
      }
    }
  }

  TEST_CASE("threaded driver: a gate that fails (a replica's parent gone) stops every worker and throws") {
    lifecycle::reset_for_tests();
    Harness h(100);
    JobFeed feed = h.feed();
    Gate failing = [](const WarmUpFastest&) -> GateOpen { throw runtime_failure("the parent is gone"); };
    CHECK_THROWS_WITH(drive_threaded(h.parts, feed, 4, h.warmup(1), failing), doctest::Contains("the parent is gone"));
    CHECK(h.server.served.empty());
  }
}
