#include <doctest/doctest.h>

#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include "inferprof/compare.hpp"
#include "inferprof/error.hpp"
#include "inferprof/pipeline.hpp"
#include "inferprof/replay.hpp"
#include "replay/bounded_queue.hpp"
#include "temp_dir.hpp"

using namespace inferprof;
using inferprof::testing::TempDir;

namespace {
RunConfig small_run(const TempDir& dir, std::uint64_t requests, double rate = 1000) {
  generate_model({"mlp", 1, dir.file("m.pt")});
  GenTraceOptions t;
  t.requests = requests;
  t.keys = 10;
  t.rate = rate;
  generate_trace(t, dir.file("t.jsonl"));
  RunConfig c;
  c.model_path = dir.file("m.pt");
  c.replay.trace_path = dir.file("t.jsonl");
  c.profile = load_profile("");
  c.replay.warmup = 2;
  c.replay.threads = 1;
  return c;
}
}  // namespace

TEST_SUITE("replay") {
  TEST_CASE("bounded queue: order, close drains, abort stops") {
    detail::BoundedQueue<int> q(4);
    std::thread producer([&] {
      for (int i = 0; i < 100; ++i)
        REQUIRE(q.push(int(i)));
      q.close();
    });
    int v = 0, expected = 0;
    while (q.pop(v))
      CHECK(v == expected++);
    producer.join();
    CHECK(expected == 100);

    detail::BoundedQueue<int> a(2);
    a.push(1);
    a.abort();
    CHECK_FALSE(a.pop(v));
    CHECK_FALSE(a.push(2));
  }

  TEST_CASE("bounded queue: a waiting consumer is woken only once enough items wait, or on close") {
    detail::BoundedQueue<int> q(8, 3);
    std::vector<int> seen;
    std::atomic<int> taken{0};
    std::thread consumer([&] {
      int v = 0;
      while (q.pop(v)) {
        seen.push_back(v);
        ++taken;
      }
    });
    while (q.waiting_consumers() == 0)
      std::this_thread::yield();
    q.push(1);
    q.push(2);
    CHECK(q.consumer_wakes() == 0);  // two items wait: the consumer sleeps on
    q.push(3);
    CHECK(q.consumer_wakes() == 1);
    while (taken < 3 || q.waiting_consumers() == 0)  // it took all three and waits again
      std::this_thread::yield();
    q.push(4);
    q.close();  // the last item does not wait for two more
    consumer.join();
    CHECK(q.consumer_wakes() == 1);
    CHECK(seen == std::vector<int>{1, 2, 3, 4});
  }

  TEST_CASE("closed loop: every request measured once, warm-up separate") {
    TempDir dir;
    RunConfig c = small_run(dir, 120);
    RunOutcome o = run_replay(c);
    const RunSummary& s = o.summary;
    CHECK(s.requests == 120);
    CHECK(s.info.warmup_us.size() == 2);
    CHECK(s.info.threads == 1);
    CHECK(s.info.mode == "closed-loop");
    CHECK(s.info.model_arch == "mlp");
    CHECK(s.stages[static_cast<std::size_t>(Stage::compute)].count == 120);
    CHECK(s.stages[static_cast<std::size_t>(Stage::queue)].total_us == 0);
    CHECK(s.throughput_rps > 0);
    CHECK(o.files.empty());
  }

  TEST_CASE("--limit, --concurrency and open loop") {
    TempDir dir;
    RunConfig c = small_run(dir, 200, 5000);
    c.replay.limit = 50;
    c.replay.concurrency = 3;
    CHECK(run_replay(c).summary.requests == 50);

    c.replay.concurrency = 1;
    c.replay.limit = 0;
    c.replay.drive = Drive::open_loop;
    c.replay.speed = 2;
    RunOutcome o = run_replay(c);
    CHECK(o.summary.requests == 200);
    CHECK(o.summary.info.mode == "open-loop");
    // 200 requests at 5000/s replayed at 2x take at least the trace's span / 2.
    CHECK(o.summary.info.wall_s > 0.015);
  }

  TEST_CASE("warnings: no warm-up, oversubscription") {
    TempDir dir;
    RunConfig c = small_run(dir, 10);
    c.replay.warmup = 0;
    c.replay.threads = 64;
    c.replay.concurrency = 2;
    auto s = run_replay(c).summary;
    REQUIRE(s.info.warnings.size() == 2);
    CHECK(s.info.warnings[0].rfind("no warm-up", 0) == 0);
    CHECK(s.info.warnings[1].find("oversubscribe") != std::string::npos);
    configure_threads(1);
  }

  TEST_CASE("a failing request aborts the run with its error") {
    TempDir dir;
    RunConfig c = small_run(dir, 10);
    std::ofstream(dir.file("bad.jsonl")) << R"({"id": 1, "input": {"seed": 1}})"
                                            "\n"
                                         << R"({"id": 2, "input": {"shape": [1, 3], "seed": 1}})"
                                            "\n";
    c.replay.trace_path = dir.file("bad.jsonl");
    c.output.out_dir = dir.file("out");
    CHECK_THROWS_WITH(run_replay(c),
                      doctest::Contains((c.replay.trace_path + ":2: the model rejected the input [1, 3] float32: "
                                                               "the model expects [N, 16] float32")
                                            .c_str()));
    // No report, nor the folder the run created for them.
    CHECK(!std::filesystem::exists(dir.file("out")));
  }
}

TEST_SUITE("replay") {
  TEST_CASE("resolve_tiers: profile, defaults, --tier overrides and --redis") {
    Profile p = load_profile("");
    CHECK(resolve_tiers(p, "none", {}, "", "").empty());
    auto tiers = resolve_tiers(p, "l1,l2,l3", {}, "", "/tmp/x");
    REQUIRE(tiers.size() == 3);
    CHECK(tiers[0].max_entries == 1000);
    CHECK(tiers[1].backend == TierBackend::memory);
    CHECK(tiers[2].backend == TierBackend::lmdb);
    CHECK(tiers[2].location == "/tmp/x/l3.lmdb");

    auto over = resolve_tiers(p, "l1", {parse_tier_spec("l1", "lfu:7", "--tier l1=lfu:7")}, "", "");
    CHECK(over[0].policy == Policy::lfu);
    CHECK(over[0].max_entries == 7);
    // The override's policy parameters come with it (they were dropped: wtinylfu's default window ran).
    auto with_params = resolve_tiers(
        p, "l1", {parse_tier_spec("l1", "wtinylfu(window=0.2):100", "--tier l1=wtinylfu(window=0.2):100")}, "", "");
    CHECK(with_params[0].policy == Policy::wtinylfu);
    CHECK(with_params[0].params.window == doctest::Approx(0.2));

    auto redis = resolve_tiers(p, "l2,l3", {}, "redis://127.0.0.1:1/0", "");
    CHECK(redis[0].backend == TierBackend::redis);
    CHECK(redis[1].backend == TierBackend::redis);

    Profile image = load_profile("image-classification");
    REQUIRE(image.cache.l1);
    CHECK(image.cache.l1->max_entries == 16);
    CHECK(image.cache.l2->max_bytes == 256ull << 20);
    CHECK(image.cache.l3->ttl_s == 3600);
    CHECK(image.compare_caches.size() == 5);
    // A profile that places L3 keeps it there under --redis.
    CHECK(resolve_tiers(image, "l3", {}, "redis://127.0.0.1:1/0", "")[0].backend == TierBackend::lmdb);

    CHECK_THROWS_WITH(resolve_tiers(p, "l1,l4", {}, "", ""),
                      "cache configuration 'l1,l4': expected none or tiers l1, l2, l3 joined by commas (e.g. l1,l2)");
    CHECK_THROWS_WITH(resolve_tiers(p, "l1,l1", {}, "", ""), "cache configuration 'l1,l1' names l1 twice");
  }

  TEST_CASE("bootstrap speedup: a clear gain, and noise named as noise") {
    std::vector<double> slow, fast, same;
    for (int i = 0; i < 2000; ++i) {
      slow.push_back(100 + (i % 17));
      fast.push_back(25 + (i % 13));
      same.push_back(100 + ((i * 7) % 17));
    }
    Speedup gain = bootstrap_speedup(slow, fast);
    CHECK(gain.value == doctest::Approx(108.0 / 31.0).epsilon(0.01));
    CHECK(gain.low < gain.value);
    CHECK(gain.high > gain.value);
    CHECK_FALSE(gain.noise);
    Speedup none = bootstrap_speedup(slow, same);
    CHECK(none.noise);
  }

  TEST_CASE("run with caches: L1 hits on repeated keys, hits + misses == lookups") {
    TempDir dir;
    RunConfig c = small_run(dir, 300);
    c.caches.tiers = resolve_tiers(c.profile, "l1,l3", {}, "", "");
    c.caches.key_namespace = "unit";
    c.caches.verify_fraction = 1.0;
    RunSummary s = run_replay(c).summary;
    REQUIRE(s.caches.size() == 2);
    const TierStats& l1 = s.caches[0].stats;
    CHECK(l1.lookups == 300);
    CHECK(l1.hits + l1.misses == l1.lookups);
    CHECK(l1.hits >= 300 - 10);  // 10 distinct keys
    CHECK(s.verify.checked == l1.hits + s.caches[1].stats.hits);
    CHECK(s.verify.mismatches == 0);
    std::uint64_t served = 0;
    for (const auto& o : s.outcomes)
      served += o.count;
    CHECK(served == 300);
  }
}
