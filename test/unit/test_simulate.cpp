#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "inferprof/error.hpp"
#include "inferprof/simulate.hpp"
#include "inferprof/trace.hpp"
#include "simulate/curves.hpp"
#include "temp_dir.hpp"

using namespace inferprof;
using inferprof::testing::TempDir;

namespace {

// Zipf-ish keys: a few hot, a long tail, so every capacity sees hits and evictions.
std::vector<std::uint64_t> zipf_keys(std::size_t n, std::uint64_t distinct, double skew, std::uint64_t seed) {
  std::vector<double> cdf(distinct);
  double sum = 0;
  for (std::uint64_t k = 0; k < distinct; ++k)
    cdf[k] = sum += 1.0 / std::pow(static_cast<double>(k + 1), skew);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, sum);
  std::vector<std::uint64_t> keys(n);
  for (auto& k : keys)
    k = static_cast<std::uint64_t>(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin()) * 7919 + 1;
  return keys;
}

std::string request_line(std::string_view key, std::optional<double> ts = std::nullopt) {
  return fmt::format("{{\"key\": \"{}\",{} \"input\": {{\"seed\": 1}}}}\n", key,
                     ts ? fmt::format(" \"ts_ms\": {},", *ts) : std::string());
}

TierSpec tier(const char* name, const char* spec) {
  return parse_tier_spec(name, spec, "test");
}

const SimTierResult& tier_of(const SimConfigResult& c, std::string_view name) {
  for (const auto& t : c.tiers)
    if (enum_name(t.spec.tier) == name) return t;
  throw std::runtime_error("no such tier");
}

}  // namespace

TEST_SUITE("simulate") {
  TEST_CASE("one-pass LRU curve equals one simulation per capacity, exactly") {
    // 60,000 accesses over 5,000 keys: the stack-distance tree is renumbered many times.
    const auto keys = zipf_keys(60000, 5000, 0.9, 7);
    const std::vector<std::uint64_t> caps = {1, 2, 5, 17, 100, 333, 1000, 2500, 4999, 5000, 20000};
    for (std::uint64_t warmup : {0u, 1234u}) {
      CAPTURE(warmup);
      const auto one = lru_curve_one_pass(keys, caps, warmup);
      const auto per = curve_per_capacity(keys, Policy::lru, 0, caps, 3, warmup);
      REQUIRE(one.size() == caps.size());
      for (std::size_t i = 0; i < caps.size(); ++i) {
        CAPTURE(caps[i]);
        CHECK(one[i] == per[i]);  // both are hits / counted requests: equal counts give equal doubles
      }
      CHECK(one.front() > 0);
      CHECK(one.back() > one.front());
    }
  }

  TEST_CASE("curves of other policies are monotone where they must be and differ from LRU") {
    const auto keys = zipf_keys(20000, 2000, 1.0, 3);
    const std::vector<std::uint64_t> caps = {10, 100, 1000};
    const auto fifo = curve_per_capacity(keys, Policy::fifo, 0, caps, 2);
    const auto lfu = curve_per_capacity(keys, Policy::lfu, 0, caps, 2);
    const auto lru = lru_curve_one_pass(keys, caps);
    CHECK(fifo[0] < fifo[1]);
    CHECK(fifo[1] < fifo[2]);
    CHECK(lfu[0] != lru[0]);  // a different policy, not LRU relabelled
  }

  TEST_CASE("multi-tier: L1 -> L2 -> L3 -> compute, a lower hit fills the tiers above") {
    TempDir dir;
    std::string text;
    for (const char* k : {"a", "b", "a", "c", "a", "b"})
      text += request_line(k);
    SimulateConfig c;
    c.trace_path = dir.write("t.jsonl", text);
    c.tiers = {tier("l1", "lru:1"), tier("l2", "lru:2"), tier("l3", "lru:1")};
    c.configurations = {{"l1", "l2", "l3"}};
    SimulateResult r = run_simulate(c);
    REQUIRE(r.configurations.size() == 1);
    const auto& conf = r.configurations[0];
    // Worked by hand from Pipeline::serve: a b (compute), a (l2 hit, fills l1),
    // c (compute), a (l2 hit), b (compute).
    CHECK(conf.served_l1 == 0);
    CHECK(conf.served_l2 == 2);
    CHECK(conf.served_l3 == 0);
    CHECK(conf.served_compute == 4);
    CHECK(tier_of(conf, "l1").lookups == 6);
    CHECK(tier_of(conf, "l1").evictions == 5);
    CHECK(tier_of(conf, "l2").lookups == 6);
    CHECK(tier_of(conf, "l2").hits == 2);
    CHECK(tier_of(conf, "l3").lookups == 4);  // L2 hits never reach L3
    CHECK(tier_of(conf, "l3").hits == 0);
    CHECK(r.requests == 6);
  }

  TEST_CASE("a model_update changes result keys but not preprocessed ones, and warm-up is not counted") {
    TempDir dir;
    std::string text = request_line("a", 1.0) + request_line("a", 2.0) +
                       "{\"event\": \"model_update\", \"model\": \"m\", \"version\": \"v2\", \"ts_ms\": 3.0}\n" +
                       request_line("a", 4.0) + request_line("a", 5.0);
    SimulateConfig c;
    c.trace_path = dir.write("t.jsonl", text);
    c.tiers = {tier("l1", "lru:10"), tier("l3", "lru:10")};
    c.configurations = {{"l1"}, {"l3"}};
    SimulateResult r = run_simulate(c);
    CHECK(r.model_updates == 1);
    CHECK(r.configurations[0].tiers[0].hits == 2);  // a, a | v2: a (miss), a
    CHECK(r.configurations[0].tiers[0].misses == 2);
    CHECK(r.configurations[1].tiers[0].hits == 3);  // L3 keeps serving across versions
    c.warmup = 2;
    r = run_simulate(c);
    CHECK(r.measured == 2);
    CHECK(r.configurations[0].tiers[0].misses == 1);  // only the first request of v2 misses
    CHECK(r.configurations[0].tiers[0].lookups == 2);
  }

  TEST_CASE("a model_update drops the leaving version's L1/L2 entries, as the real tiers do") {
    TempDir dir;
    std::string text = request_line("a") + request_line("b") +
                       "{\"event\": \"model_update\", \"model\": \"m\", \"version\": \"v2\"}\n" + request_line("a");
    SimulateConfig c;
    c.trace_path = dir.write("t.jsonl", text);
    c.tiers = {tier("l1", "lru:10"), tier("l2", "lfu:10"), tier("l3", "lru:10")};
    c.mrc = {parse_mrc_spec("l1=lfu:1,10", 30), parse_mrc_spec("l1=lru:1,10", 30)};
    SimulateResult r = run_simulate(c);
    CHECK(tier_of(r.configurations[0], "l1").entries == 1);  // only v2's a
    CHECK(tier_of(r.configurations[0], "l2").entries == 1);
    CHECK(tier_of(r.configurations[0], "l3").entries == 2);    // preprocessed keys outlive versions
    CHECK(tier_of(r.configurations[0], "l1").evictions == 0);  // dropped entries are not evictions
    bool said = false;
    for (const auto& w : r.warnings)
      said = said || w.find("one-pass LRU curve keeps") != std::string::npos;
    CHECK(said);
  }

  TEST_CASE("--caches none alone simulates no cached configuration") {
    TempDir dir;
    SimulateConfig c;
    c.trace_path = dir.write("t.jsonl", request_line("a") + request_line("a"));
    c.tiers = {tier("l1", "lru:10")};
    c.configurations = {{}};
    CHECK(run_simulate(c).configurations.empty());
    c.configurations = {{}, {"l1"}};
    SimulateResult r = run_simulate(c);
    REQUIRE(r.configurations.size() == 1);
    CHECK(r.configurations[0].name == "l1");
  }

  TEST_CASE("TTL runs on the trace's ts_ms") {
    TempDir dir;
    std::string text = request_line("a", 0) + request_line("a", 500) + request_line("a", 2000);
    SimulateConfig c;
    c.trace_path = dir.write("t.jsonl", text);
    c.tiers = {tier("l1", "ttl:10:1s")};
    SimulateResult r = run_simulate(c);
    CHECK(r.configurations[0].tiers[0].hits == 1);
    CHECK(r.configurations[0].tiers[0].expirations == 1);
  }

  TEST_CASE("convert to .iptrace: the same counts as the JSON lines, and a truncated file is an error") {
    TempDir dir;
    GenTraceOptions g;
    g.requests = 3000;
    g.keys = 300;
    g.update_every_ms = 5000;
    const std::string jsonl = dir.file("t.jsonl"), bin = dir.file("t.iptrace");
    generate_trace(g, jsonl);
    ConvertStats s = convert_trace(jsonl, bin);
    CHECK(s.requests == 3000);
    CHECK(s.model_updates > 0);
    SimulateConfig c;
    c.tiers = {tier("l1", "lru:50"), tier("l2", "lfu:100"), tier("l3", "ttl:100:2s")};
    c.trace_path = jsonl;
    SimulateResult a = run_simulate(c);
    c.trace_path = bin;
    SimulateResult b = run_simulate(c);
    CHECK(b.trace_format == "iptrace");
    CHECK(a.model_updates == b.model_updates);
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(a.configurations[0].tiers[i].hits == b.configurations[0].tiers[i].hits);
      CHECK(a.configurations[0].tiers[i].expirations == b.configurations[0].tiers[i].expirations);
    }
    CHECK(a.configurations[0].tiers[2].expirations > 0);

    // Cut the file mid-record.
    std::filesystem::resize_file(bin, std::filesystem::file_size(bin) - 5);
    c.trace_path = bin;
    CHECK_THROWS_WITH(run_simulate(c),
                      doctest::Contains(fmt::format("{}:{}: truncated .iptrace: the header says {} records", bin,
                                                    s.requests + s.model_updates, s.requests + s.model_updates)
                                            .c_str()));

    // A forged header whose counts sum to 2^64 (0 after wrapping) on an empty file.
    std::string header(32, '\0');
    {
      std::FILE* f = std::fopen(bin.c_str(), "rb");
      REQUIRE(f);
      REQUIRE(std::fread(header.data(), 1, 16, f) == 16);  // magic, version, record size
      std::fclose(f);
    }
    for (int i = 0; i < 8; ++i)
      header[16 + i] = '\xff';  // 2^64 - 1 requests
    header[24] = '\x01';        // and 1 event
    const std::string forged = dir.write("forged.iptrace", header);
    c.trace_path = forged;
    CHECK_THROWS_WITH(run_simulate(c), doctest::Contains("the .iptrace header says 18446744073709551615 requests and "
                                                         "1 events: more than any file holds"));
  }

  TEST_CASE("CSV traces: chosen columns, sizes for byte-limited tiers, errors with the line") {
    TempDir dir;
    SimulateConfig c;
    c.trace_path = dir.write("t.csv", "time,obj_id,bytes\n1,a,600\n2,b,600\n3,a,600\n4,c,600\n5,a,600\n");
    c.csv = parse_csv_columns("ts=time,key=obj_id,size=bytes");
    c.tiers = {tier("l1", "lru:1KB")};  // one 600-byte entry fits, two do not
    SimulateResult r = run_simulate(c);
    CHECK(r.trace_format == "csv");
    CHECK(r.configurations[0].tiers[0].hits == 0);
    CHECK(r.configurations[0].tiers[0].bytes == 600);
    CHECK(r.configurations[0].tiers[0].evictions == 4);

    // A column the trace uses, named twice in the header: refused, not the first taken.
    SimulateConfig twice = c;
    twice.trace_path = dir.write("twice.csv", "time,obj_id,bytes,obj_id\n1,a,600,b\n");
    CHECK_THROWS_WITH(run_simulate(twice),
                      doctest::Contains("twice.csv:1: the header 'time,obj_id,bytes,obj_id' has "
                                        "two columns named 'obj_id' (columns 2 and 4): rename one"));

    c.trace_path = dir.write("bad.csv", "time,obj_id,bytes\n1,a,600\n2,b,lots\n");
    CHECK_THROWS_WITH(run_simulate(c),
                      (c.trace_path + ":3: size 'lots': expected a non-negative integer (bytes)").c_str());
    c.trace_path = dir.write("nokey.csv", "time,key\n1,a\n");
    CHECK_THROWS_WITH(run_simulate(c), doctest::Contains(":1: no key column 'obj_id'"));
    CHECK_THROWS_AS(parse_csv_columns("tss=x"), Error);

    // A byte-limited tier with no sizes anywhere says what to give.
    c.trace_path = dir.write("t.jsonl", request_line("a"));
    c.csv = {};
    CHECK_THROWS_WITH(run_simulate(c), doctest::Contains("t.jsonl:1: a tier has a byte limit"));
    c.value_bytes = 100;
    CHECK(run_simulate(c).configurations[0].tiers[0].bytes == 100);

    // Only the sizes a byte-limited tier needs: a costs run that knew result
    // sizes but not preprocessed ones serves a byte-limited L1 and an L3 by count.
    c.value_bytes = 0;
    dir.write("run/summary.json",
              R"({"schema": "inferprof.summary/1", "stages": {"input": {"mean_us": 10}, "preprocess": {"mean_us": 30}},
                  "total": {"mean_us": 100},
                  "caches": [{"tier": "l1", "entries": 2, "bytes": 200}], "served_by": []})");
    c.costs_path = dir.file("run/summary.json");
    c.tiers = {tier("l1", "lru:1KB"), tier("l3", "lru:10")};
    CHECK(run_simulate(c).configurations[0].tiers[0].bytes == 100);
    c.tiers = {tier("l1", "lru:10"), tier("l3", "lru:1KB")};
    CHECK_THROWS_WITH(run_simulate(c), doctest::Contains("t.jsonl:1: a tier has a byte limit but this request's entry "
                                                         "size is unknown (preprocessed entries, for l3)"));
    c.costs_path.clear();

    // A column named in --csv-columns must be in the header; the defaults are optional.
    c.tiers = {tier("l1", "lru:10")};
    c.trace_path = dir.write("nots.csv", "obj_id,bytes\na,1\n");
    c.csv = parse_csv_columns("ts=time,key=obj_id,size=bytes");
    CHECK_THROWS_WITH(run_simulate(c), (c.trace_path + ":1: no ts column 'time' in the header 'obj_id,bytes' (named by "
                                                       "--csv-columns ts=time)")
                                           .c_str());
    c.csv = parse_csv_columns("key=obj_id,size=sz");
    CHECK_THROWS_WITH(run_simulate(c), doctest::Contains(":1: no size column 'sz'"));
    c.csv = parse_csv_columns("key=obj_id");
    CHECK(run_simulate(c).requests == 1);

    // Epoch microseconds in a ts_ms column overflow nanoseconds: an error, not UB.
    c.trace_path = dir.write("us.csv", "timestamp,key\n1,a\n1.7e13,b\n");
    c.csv = {};
    CHECK_THROWS_WITH(run_simulate(c), (c.trace_path + ":3: ts_ms 17000000000000 is out of range").c_str());
  }

  TEST_CASE("--mrc specs: log-spaced ranges and lists") {
    MrcSpec s = parse_mrc_spec("l2=lru:100..1000000", 5);
    CHECK(s.tier == CacheLevel::l2);
    CHECK(s.capacities == std::vector<std::uint64_t>{100, 1000, 10000, 100000, 1000000});
    s = parse_mrc_spec("lfu:5000,100,1000:30s", 30);
    CHECK(s.tier == CacheLevel::l1);
    CHECK(s.policy == Policy::lfu);
    CHECK(s.ttl_s == 30);
    CHECK(s.capacities == std::vector<std::uint64_t>{100, 1000, 5000});
    CHECK_THROWS_WITH(parse_mrc_spec("l1=lru:100..10", 30),
                      doctest::Contains("--mrc l1=lru:100..10: MAX must be larger than MIN"));
    CHECK_THROWS_AS(parse_mrc_spec("l4=lru:10", 30), Error);
    CHECK_THROWS_AS(parse_mrc_spec("l1=ttl:10", 30), Error);
  }

  // 200,000 requests over 50,000 keys (Zipf 0.8) as an .iptrace in `dir`: enough keys for sampling to matter.
  std::string zipf_iptrace(const TempDir& dir) {
    GenTraceOptions g;
    g.requests = 200000;
    g.keys = 50000;
    g.zipf = 0.8;
    g.rate = 0;
    const std::string jsonl = dir.file("t.jsonl"), bin = dir.file("t.iptrace");
    generate_trace(g, jsonl);
    convert_trace(jsonl, bin);
    return bin;
  }

  TEST_CASE("SHARDS sampling estimates the exact curve within its stated bound") {
    TempDir dir;
    const std::string bin = zipf_iptrace(dir);
    SimulateConfig c;
    c.trace_path = bin;
    c.mrc = {parse_mrc_spec("l1=lru:100..50000", 6)};
    SimulateResult exact = run_simulate(c);
    c.sample_rate = 0.1;
    SimulateResult sampled = run_simulate(c);
    const MrcResult& e = exact.mrc[0];
    const MrcResult& s = sampled.mrc[0];
    REQUIRE(s.error_bound);
    CHECK(*s.error_bound > 0);
    CHECK(*s.error_bound < 0.1);
    CHECK(s.sampled_requests < exact.requests / 5);
    for (std::size_t i = 0; i < e.points.size(); ++i) {
      CAPTURE(e.points[i].capacity);
      // Twice the 95% bound: a loose check that the estimate and its bound belong together.
      CHECK(std::fabs(e.points[i].hit_ratio - s.points[i].hit_ratio) <= 2 * *s.error_bound);
    }
  }

  TEST_CASE("policy grid: SHARDS sampling estimates the exact grid within its stated bound") {
    TempDir dir;
    const std::string bin = zipf_iptrace(dir);
    SimulateConfig c;
    c.trace_path = bin;
    PolicyGridSpec grid;
    grid.policies = parse_policy_list("lru,s3fifo,sieve,arc,2q,slru", "test");
    grid.sizes = parse_size_list("2000,10000", "test");
    c.grid = grid;
    c.sample_rate = 1;
    const SimulateResult exact = run_simulate(c);
    c.sample_rate = 0.1;
    const SimulateResult sampled = run_simulate(c);
    REQUIRE(exact.grid);
    REQUIRE(sampled.grid);
    const PolicyGridResult &e = *exact.grid, &s = *sampled.grid;
    CHECK(e.sampling.rate == 1);
    CHECK(e.sampling.sampled == e.sampling.requests);
    CHECK_FALSE(e.cells[0].miss_ratio_error);
    CHECK(s.sampling.rate == 0.1);
    CHECK_FALSE(s.sampling.automatic);
    CHECK(s.sampling.requests == 200000);
    CHECK(s.sampling.sampled < s.sampling.requests / 5);
    CHECK(s.sampling.sampled > s.sampling.requests / 20);
    REQUIRE(s.cells.size() == e.cells.size());
    for (std::size_t i = 0; i < e.cells.size(); ++i) {
      CAPTURE(s.spec.policies[s.cells[i].policy].label);
      CAPTURE(s.spec.sizes[s.cells[i].size].label);
      CHECK(s.cells[i].simulated_entries == e.cells[i].simulated_entries / 10);  // caches of rate x size
      CHECK(s.cells[i].lookups == s.sampling.sampled);
      REQUIRE(s.cells[i].miss_ratio_error);
      CHECK(*s.cells[i].miss_ratio_error > 0);
      CHECK(*s.cells[i].miss_ratio_error <= s.sampling.max_error);
      // Twice the 95% bound, as for the sampled LRU curve.
      CHECK(std::fabs(e.cells[i].miss_ratio - s.cells[i].miss_ratio) <= 2 * *s.cells[i].miss_ratio_error);
    }
    // Sampling is the same rule as the one-pass curve's: the same requests.
    c.mrc = {parse_mrc_spec("l1=lru:2000", 2)};
    const SimulateResult both = run_simulate(c);
    CHECK(both.mrc[0].sampled_requests == both.grid->sampling.sampled);
  }

  TEST_CASE("policy grid: the sampling rate is chosen from the key space unless --sample is given") {
    PolicyGridSpec grid;
    grid.sizes = parse_size_list("100k,1M", "test");
    CHECK(grid_sample_rate(900000, grid, 0) == 1);  // up to a million keys: every request
    // 100,000 sampled keys of 10 M; the smallest cache is then 1,000 entries.
    CHECK(grid_sample_rate(1e7, grid, 0) == doctest::Approx(0.01).epsilon(1e-5));
    grid.sizes = parse_size_list("10k,1M", "test");
    CHECK(grid_sample_rate(1e7, grid, 0) == doctest::Approx(0.05).epsilon(1e-5));  // 500 entries at 10k
    grid.sizes = parse_size_list("1k,1M", "test");
    CHECK(grid_sample_rate(1e7, grid, 0) == 0.5);  // 500 of 1,000: still half the work
    grid.sizes = parse_size_list("900,1M", "test");
    CHECK(grid_sample_rate(1e7, grid, 0) == 1);    // over half: not worth sampling
    grid.sizes = parse_size_list("64MB", "test");  // 65,536 entries of 1 KiB
    CHECK(grid_sample_rate(1e8, grid, 1024) == doctest::Approx(500.0 / 65536).epsilon(1e-5));
    CHECK(grid_sample_rate(1e8, grid, 0) == doctest::Approx(0.001).epsilon(1e-5));  // entry size unknown
    CHECK(grid_sample_rate(5e6, grid, 0, 1e7) == 1);                                // a higher threshold

    // run_simulate counts the keys in a first pass and applies the rule.
    TempDir dir;
    GenTraceOptions g;
    g.requests = 30000;
    g.keys = 20000;
    g.rate = 0;
    const std::string jsonl = dir.file("t.jsonl");
    generate_trace(g, jsonl);
    SimulateConfig c;
    c.trace_path = jsonl;
    grid.sizes = parse_size_list("1000", "test");
    grid.policies = parse_policy_list("sieve", "test");
    c.grid = grid;
    const SimulateResult r = run_simulate(c);
    CHECK(r.grid->sampling.automatic);
    CHECK(r.grid->sampling.rate == 1);  // a million keys is the default threshold
    CHECK(r.grid->sampling.estimated_keys > 0);
    CHECK(r.grid->sampling.estimated_keys <= 20000 * 1.05);
    c.grid_auto_keys = c.grid_sample_keys = 1000;  // so that this trace counts as large: rate 500 / 1000 entries
    const SimulateResult a = run_simulate(c);
    CHECK(a.grid->sampling.automatic);
    CHECK(a.grid->sampling.estimated_keys == doctest::Approx(r.grid->sampling.estimated_keys));
    CHECK(a.grid->sampling.rate == doctest::Approx(0.5));
    CHECK(a.grid->cells[0].simulated_entries == 500);
  }

  TEST_CASE("distinct keys: exact while few, within a few percent when many") {
    detail::DistinctKeys few, many;
    for (std::uint64_t i = 0; i < 3000; ++i)
      few.add(detail::ShardsSample::hash(CacheKey{0, i % 1000}));
    CHECK(few.estimate() == 1000);
    for (std::uint64_t i = 0; i < 400000; ++i)
      many.add(detail::ShardsSample::hash(CacheKey{7, i % 200000}));
    CHECK(many.estimate() == doctest::Approx(200000).epsilon(0.05));
  }

  TEST_CASE("costs: predicted mean and p99 from a run's summary.json and requests.csv") {
    TempDir dir;
    // A no-cache run: each request 100 µs, of which input 10 and preprocess 30.
    dir.write("run/summary.json",
              R"({"schema": "inferprof.summary/1", "stages": {"input": {"mean_us": 10}, "preprocess": {"mean_us": 30}},
                  "total": {"mean_us": 100}, "caches": [], "served_by": []})");
    SimulateConfig c;
    std::string text;
    for (int i = 0; i < 10; ++i)
      text += request_line(i < 5 ? "hot" : fmt::format("k{}", i));
    c.trace_path = dir.write("t.jsonl", text);
    c.tiers = {tier("l1", "lru:10"), tier("l3", "lru:10")};
    c.configurations = {{"l1"}, {"l3"}};
    c.costs_path = dir.file("run/summary.json");
    SimulateResult r = run_simulate(c);
    REQUIRE(r.costs);
    CHECK(!r.costs->per_request);
    CHECK(r.baseline.mean_us == doctest::Approx(100));
    // l1: 4 of 10 hit at 0 µs (assumed, and said so): mean 60 µs.
    CHECK(r.configurations[0].predicted.mean_us == doctest::Approx(60));
    CHECK(r.configurations[0].predicted.speedup == doctest::Approx(100.0 / 60));
    CHECK(!r.configurations[0].predicted.p99_us);
    // l3: 4 of 10 skip input and preprocessing: 0.4 * 60 + 0.6 * 100.
    CHECK(r.configurations[1].predicted.mean_us == doctest::Approx(84));
    CHECK(!r.costs->notes.empty());

    // With requests.csv: per-request costs, so a p99.
    std::string csv =
        "seq,id,line,key,worker,arrival_us,start_us,total_us,queue_us,cache_us,load_us,input_us,"
        "preprocess_us,h2d_us,compute_us,d2h_us,overhead_us,cache,ok,error\n";
    for (int i = 0; i < 100; ++i)
      csv += fmt::format("{0},{0},{0},k,0,0,0,{1},0,0,0,10,30,,{2},,0,none,true,\n", i, i == 99 ? 1000 : 100,
                         i == 99 ? 960 : 60);
    dir.write("run/requests.csv", csv);
    r = run_simulate(c);
    REQUIRE(r.costs->per_request);
    CHECK(r.costs->rows == 100);
    CHECK(r.baseline.mean_us == doctest::Approx(109));
    CHECK(r.baseline.p99_us.value_or(0) == doctest::Approx(100));
    REQUIRE(r.configurations[1].predicted.p99_us);

    dir.write("bad/summary.json", R"({"schema": "something else"})");
    c.costs_path = dir.file("bad/summary.json");
    const std::string not_summary = "--costs: " + dir.file("bad/summary.json") + ": not an inferprof summary";
    CHECK_THROWS_WITH(run_simulate(c), doctest::Contains(not_summary.c_str()));
  }
}
