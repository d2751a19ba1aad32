// End-to-end: `inferprof simulate` and `inferprof convert` through the built binary.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <map>

#include "cli_harness.hpp"
#include "sanitized.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

struct SimFixture {
  TempDir dir;
  std::string model = dir.file("mlp.pt");
  std::string trace = dir.file("zipf.jsonl");
  static constexpr int kRequests = 500;
  SimFixture() {
    make_model_and_trace(model, trace, {"--requests", std::to_string(kRequests), "--keys", "80", "--zipf", "1.0"});
  }
};
SimFixture& sim_fixture() {
  static SimFixture f;
  return f;
}

// (configuration, tier) -> {lookups, hits, misses, evictions}
using Counts = std::map<std::pair<std::string, std::string>, std::vector<double>>;

Counts tier_counts(const std::string& json, const char* rows_key, const char* tiers_key) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) throw std::runtime_error("bad JSON: " + json.substr(0, 200));
  Counts out;
  for (auto row : doc[rows_key].get_array()) {
    std::string name(std::string_view(row["name"].get_string()));
    for (auto t : row[tiers_key].get_array())
      out[{name, std::string(std::string_view(t["tier"].get_string()))}] = {
          json_number(t["lookups"]), json_number(t["hits"]), json_number(t["misses"]), json_number(t["evictions"])};
  }
  return out;
}

}  // namespace

TEST_SUITE("e2e simulate") {
  TEST_CASE("simulate: hit counts equal those compare measures, tier by tier") {
    auto& f = sim_fixture();
    // Single worker, closed loop, no TTL: the memory tiers run the same PolicyCache.
    // L3 lives on LMDB in a real replay and never evicts, so simulate gives it room for every key.
    auto c =
        run_cli({"compare", f.model, "--trace", f.trace, "--caches", "l1", "--caches", "l1,l2", "--caches", "l1,l2,l3",
                 "--caches", "l3", "--tier", "l1=lru:8", "--tier", "l2=lfu:20", "--format", "json", "--no-progress"});
    REQUIRE_MESSAGE(c.code == 0, c.err);
    auto s = run_cli({"simulate", "--trace", f.trace, "--caches", "l1", "--caches", "l1,l2", "--caches", "l1,l2,l3",
                      "--caches", "l3", "--tier", "l1=lru:8", "--tier", "l2=lfu:20", "--tier", "l3=lru:1000000",
                      "--format", "json"});
    REQUIRE_MESSAGE(s.code == 0, s.err);
    const Counts measured = tier_counts(c.out, "configurations", "caches");
    const Counts simulated = tier_counts(s.out, "configurations", "tiers");
    REQUIRE(measured.size() == 7);
    CHECK(simulated.size() == measured.size());
    for (const auto& [key, m] : measured) {
      CAPTURE(key.first);
      CAPTURE(key.second);
      REQUIRE(simulated.count(key) == 1);
      const auto& v = simulated.at(key);
      CHECK(v[0] == m[0]);                          // lookups
      CHECK(v[1] == m[1]);                          // hits
      CHECK(v[2] == m[2]);                          // misses
      if (key.second != "l3") CHECK(v[3] == m[3]);  // evictions (the LMDB tier does not count them)
    }
    CHECK(measured.at({"l1,l2", "l2"})[1] > 0);
    CHECK(measured.at({"l1,l2,l3", "l3"})[1] > 0);
  }

  TEST_CASE("simulate: predicted latency from a run's costs, reports and the miss-ratio curve") {
    auto& f = sim_fixture();
    TempDir out;
    auto run = run_cli({"run", f.model, "--trace", f.trace, "--out", out.file("run"), "--no-progress"});
    REQUIRE_MESSAGE(run.code == 0, run.err);
    auto s = run_cli({"simulate", "--trace", f.trace, "--tier", "l1=lru:16", "--costs", out.file("run"), "--mrc",
                      "l1=lru:1..100", "--mrc-points", "8", "--mrc", "l1=fifo:2,10,50", "--out", out.file("sim")});
    REQUIRE_MESSAGE(s.code == 0, s.err);
    CHECK(s.out.find("predicted latency") != std::string::npos);
    CHECK(s.out.find("1.00× (baseline)") != std::string::npos);
    CHECK(s.out.find("one-pass stack distances") != std::string::npos);
    CHECK(s.out.find("one simulation per capacity") != std::string::npos);
    for (const char* file : {"simulate.json", "simulate.csv", "mrc.csv", "mrc.svg"})
      CHECK_MESSAGE(fs::is_regular_file(out.path() / "sim" / file), file);
    const std::string svg = slurp(out.path() / "sim" / "mrc.svg");
    CHECK(svg.rfind("<?xml", 0) == 0);
    CHECK(svg.find("<polyline") != std::string::npos);
    CHECK(svg.find("predicted mean") != std::string::npos);  // the second axis
    CHECK(count_lines(slurp(out.path() / "sim" / "mrc.csv")) == 1 + 8 + 3);

    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string json = slurp(out.path() / "sim" / "simulate.json");
    REQUIRE(parser.parse(json).get(doc) == simdjson::SUCCESS);
    auto conf = doc["configurations"].at(0);
    const double speedup = json_number(conf["predicted"]["speedup"]);
    const double hit = json_number(conf["tiers"].at(0)["hit_ratio"]);
    // Hits cost less than computing, so the speedup is above 1 and at most 1 / miss ratio.
    CHECK(speedup > 1.0);
    CHECK(speedup <= 1.0 / (1.0 - hit) + 1e-9);
    // The curve rises with capacity and reaches the all-keys hit ratio.
    auto points = doc["mrc"].at(0)["points"].get_array();
    double prev = -1;
    for (auto p : points) {
      const double h = json_number(p["hit_ratio"]);
      CHECK(h >= prev);
      prev = h;
    }
    CHECK(prev > hit);  // 100 entries hold all 80 keys; 16 do not

    // The same --out without --mrc: no curve of the earlier run stays beside the new simulate.json.
    s = run_cli({"simulate", "--trace", f.trace, "--tier", "l1=lru:16", "--out", out.file("sim")});
    REQUIRE_MESSAGE(s.code == 0, s.err);
    CHECK(fs::is_regular_file(out.path() / "sim" / "simulate.json"));
    CHECK(!fs::exists(out.path() / "sim" / "mrc.csv"));
    CHECK(!fs::exists(out.path() / "sim" / "mrc.svg"));
  }

  TEST_CASE("simulate: --caches none alone simulates no cached configuration") {
    auto& f = sim_fixture();
    auto s = run_cli({"simulate", "--trace", f.trace, "--tier", "l1=lru:16", "--caches", "none", "--format", "json"});
    REQUIRE_MESSAGE(s.code == 0, s.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(s.out).get(doc) == simdjson::SUCCESS);
    CHECK(doc["configurations"].get_array().size() == 0);
    s = run_cli({"simulate", "--trace", f.trace, "--tier", "l1=lru:16", "--caches", "none", "--caches", "l1",
                 "--format", "csv"});
    REQUIRE_MESSAGE(s.code == 0, s.err);
    CHECK(count_lines(s.out) == 2);  // header + l1
  }

  TEST_CASE("convert: .iptrace gives the same answer as the JSON lines, CSV traces read with chosen columns") {
    auto& f = sim_fixture();
    TempDir d;
    auto c = run_cli({"convert", f.trace, "-o", d.file("t.iptrace")});
    REQUIRE_MESSAGE(c.code == 0, c.err);
    CHECK(c.out.find("500 requests") != std::string::npos);
    auto a = run_cli({"simulate", "--trace", f.trace, "--tier", "l1=lfu:10", "--format", "csv"});
    auto b = run_cli({"simulate", "--trace", d.file("t.iptrace"), "--tier", "l1=lfu:10", "--format", "csv"});
    REQUIRE(a.code == 0);
    REQUIRE(b.code == 0);
    CHECK(a.out == b.out);
    CHECK(count_lines(a.out) == 2);

    d.write("trace.csv", "time,obj,bytes\n0,x,10\n1,y,10\n2,x,10\n");
    auto m = run_cli({"simulate", "--trace", d.file("trace.csv"), "--csv-columns", "ts=time,key=obj,size=bytes",
                      "--tier", "l1=lru:100B", "--format", "markdown"});
    REQUIRE_MESSAGE(m.code == 0, m.err);
    CHECK(m.out.find("| l1 | l1 | lru:100 B |") != std::string::npos);
    CHECK(m.out.find("| 3 | 1 | 2 |") != std::string::npos);
  }

  TEST_CASE("simulate: the spec column shows policy parameters and any byte limit, and bad specs are one line") {
    TempDir dir;
    const std::string trace = dir.file("t.jsonl");
    REQUIRE(run_cli({"gen-trace", "--requests", "200", "--keys", "50", "-o", trace}).code == 0);
    auto params = run_cli({"simulate", "--trace", trace, "--tier", "l1=wtinylfu(window=0.2):10"});
    REQUIRE_MESSAGE(params.code == 0, params.err);
    CHECK_MESSAGE(params.out.find("wtinylfu(window=0.2):10 ") != std::string::npos, params.out);
    auto huge = run_cli({"simulate", "--trace", trace, "--tier", "l1=lru:8388608TB", "--value-bytes", "100"});
    REQUIRE_MESSAGE(huge.code == 0, huge.err);
    CHECK_MESSAGE(huge.out.find("lru:8.0 EB ") != std::string::npos, huge.out);
    CHECK(huge.out.find("-9223372036854775808") == std::string::npos);
    // W-TinyLFU sized for 10^8 entries on 50 keys: within 1 GB of address space (its sketch alone was 5.7 GB;
    // the sanitizers' shadow memory needs more than any such limit).
    auto big = run_cli({"simulate", "--trace", trace, "--tier", "l1=wtinylfu:100000000"},
                       kSanitized ? "" : "prlimit --as=1000000000 --");
    REQUIRE_MESSAGE(big.code == 0, big.err);
    CHECK(big.out.find("wtinylfu:100,000,000") != std::string::npos);
    auto twice = run_cli({"simulate", "--trace", trace, "--tier", "l1=wtinylfu(window=0.1,window=0.2):10"});
    CHECK(twice.code == 2);
    CHECK(twice.err ==
          "inferprof: error: --tier l1=wtinylfu(window=0.1,window=0.2):10: wtinylfu's window is given twice (give each "
          "parameter once)\n");
    auto zero = run_cli({"simulate", "--trace", trace, "--tier", "l1=lru:10:0s"});
    CHECK(zero.code == 2);
    CHECK(zero.err ==
          "inferprof: error: --tier l1=lru:10:0s: time to live must be above 0, got '0s' (leave ':TTL' out and "
          "entries never expire)\n");
  }

  TEST_CASE("simulate: bad input exits 2 with file and line, and leaves no report behind") {
    TempDir d;
    d.write("bad.jsonl", "{\"key\": \"a\", \"input\": {\"seed\": 1}}\n{\"key\": 5}\n");
    auto r = run_cli({"simulate", "--trace", d.file("bad.jsonl"), "--tier", "l1=lru:10", "--out", d.file("o")});
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.err.find(d.file("bad.jsonl") + ":2:") != std::string::npos, r.err);
    CHECK(dir_is_empty_or_missing(d.path() / "o"));

    d.write("bad.csv", "timestamp,key\n1,a\nsoon,b\n");
    r = run_cli({"simulate", "--trace", d.file("bad.csv"), "--tier", "l1=lru:10"});
    CHECK(r.code == 2);
    CHECK(r.err == "inferprof: error: " + d.file("bad.csv") + ":3: timestamp 'soon': expected a number (ms)\n");

    d.write("fake.iptrace", "not a binary trace");
    r = run_cli({"simulate", "--trace", d.file("fake.iptrace"), "--tier", "l1=lru:10"});
    CHECK(r.code == 2);
    CHECK(r.err.find("not an .iptrace file") != std::string::npos);

    r = run_cli({"simulate", "--trace", d.file("bad.csv"), "--tier", "l1=lru:ten"});
    CHECK(r.code == 2);
    CHECK(r.err.find("--tier l1=lru:ten") != std::string::npos);
    r = run_cli({"simulate", "--trace", d.file("bad.csv"), "--tier", "l1=lru:10", "--caches", "l2"});
    CHECK(r.code == 2);
    CHECK(r.err.find("tier l2 has no --tier l2=") != std::string::npos);
    r = run_cli({"simulate", "--trace", d.file("missing.jsonl"), "--tier", "l1=lru:10"});
    CHECK(r.code == 2);

    d.write("us.csv", "timestamp,key\n1700000000000000,a\n");  // epoch microseconds
    r = run_cli({"simulate", "--trace", d.file("us.csv"), "--tier", "l1=lru:10"});
    CHECK(r.code == 2);
    CHECK(r.err == "inferprof: error: " + d.file("us.csv") + ":2: ts_ms 1700000000000000 is out of range\n");
    r = run_cli({"simulate", "--trace", d.file("us.csv"), "--csv-columns", "ts=time", "--tier", "l1=lru:10"});
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.err.find(d.file("us.csv") + ":1: no ts column 'time'") != std::string::npos, r.err);
  }

  TEST_CASE("simulate --policies --sizes: one grid, its files, and the recommendation") {
    auto& f = sim_fixture();
    TempDir out;
    auto run = run_cli({"run", f.model, "--trace", f.trace, "--out", out.file("run"), "--no-progress"});
    REQUIRE_MESSAGE(run.code == 0, run.err);
    auto s = run_cli({"simulate", "--trace", f.trace, "--policies", "lru,s3fifo(small=0.25),sieve,arc,wtinylfu,clock",
                      "--sizes", "4,16,32", "--costs", out.file("run"), "--out", out.file("sim")});
    REQUIRE_MESSAGE(s.code == 0, s.err);
    CHECK(s.out.find("policies × sizes: l1 alone in front of compute, 18 caches") != std::string::npos);
    CHECK(s.out.find("recommended within the largest size: ") != std::string::npos);
    CHECK(count_lines(slurp(out.path() / "sim" / "policies.csv")) == 1 + 6 * 3);

    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string json = slurp(out.path() / "sim" / "simulate.json");
    REQUIRE(parser.parse(json).get(doc) == simdjson::SUCCESS);
    auto cells = doc["policies"]["cells"].get_array();
    REQUIRE(cells.size() == 18);
    // LRU is a stack algorithm: more room never misses more.
    CHECK(json_number(cells.at(0)["miss_ratio"]) >= json_number(cells.at(1)["miss_ratio"]));
    CHECK(json_number(cells.at(1)["miss_ratio"]) >= json_number(cells.at(2)["miss_ratio"]));
    CHECK(std::string_view(cells.at(3)["policy"].get_string()) == "s3fifo(small=0.25)");
    // The recommendation is the cell with the lowest predicted mean.
    double best = 1e300;
    std::string best_name;
    for (auto c : cells) {
      const double mean = json_number(c["predicted"]["mean_us"]);
      if (mean < best) {
        best = mean;
        best_name = std::string(std::string_view(c["policy"].get_string())) + "@" +
                    std::string(std::string_view(c["size"].get_string()));
      }
    }
    auto rec = doc["policies"]["recommendation"];
    CHECK(std::string(std::string_view(rec["policy"].get_string())) + "@" +
              std::string(std::string_view(rec["size"].get_string())) ==
          best_name);
    CHECK(json_number(rec["margin"]) >= 0);

    // A grid cell is the same cache a --tier of that spec simulates.
    auto t = run_cli({"simulate", "--trace", f.trace, "--tier", "l1=s3fifo(small=0.25):16", "--format", "json"});
    REQUIRE_MESSAGE(t.code == 0, t.err);
    simdjson::dom::parser tparser;  // a parser's next document replaces its last
    simdjson::dom::element tdoc;
    REQUIRE(tparser.parse(t.out).get(tdoc) == simdjson::SUCCESS);
    CHECK(json_number(tdoc["configurations"].at(0)["tiers"].at(0)["miss_ratio"]) ==
          doctest::Approx(json_number(doc["policies"]["cells"].at(4)["miss_ratio"])));

    // The same --out without --policies: no grid of the earlier run stays.
    s = run_cli({"simulate", "--trace", f.trace, "--tier", "l1=lru:16", "--out", out.file("sim")});
    REQUIRE_MESSAGE(s.code == 0, s.err);
    CHECK(!fs::exists(out.path() / "sim" / "policies.csv"));
  }

  TEST_CASE("simulate --policies: byte sizes, byte miss ratios, a budget, CSV") {
    TempDir d;
    // a (10 B) is asked for often, b (100 B) twice, c and e once each.
    d.write("t.csv", "timestamp,key,size\n0,a,10\n1,b,100\n2,a,10\n3,c,50\n4,a,10\n5,b,100\n6,e,30\n7,a,10\n");
    auto s = run_cli({"simulate", "--trace", d.file("t.csv"), "--policies", "lru,fifo", "--sizes", "60B,1KB",
                      "--budget", "60B", "--format", "csv"});
    REQUIRE_MESSAGE(s.code == 0, s.err);
    REQUIRE(count_lines(s.out) == 1 + 4);
    // At 1 KB everything fits: the misses are the first sights (a, b, c, e: 190 of 320 bytes).
    CHECK(s.out.find("l1,lru,1KB,0,1024,8,4,0.500000,320,190,0.593750,0,,,") != std::string::npos);
    // At 60 B, b (100 B) is never stored: both its requests miss.
    CHECK(s.out.find("l1,lru,60B,0,60,8,3,0.625000,320,290,0.906250,") != std::string::npos);
    auto t = run_cli(
        {"simulate", "--trace", d.file("t.csv"), "--policies", "lru,fifo", "--sizes", "60B,1KB", "--budget", "60B"});
    REQUIRE_MESSAGE(t.code == 0, t.err);
    CHECK_MESSAGE(t.out.find("recommended within 60B: lru at 60B, miss ratio 0.6250") != std::string::npos, t.out);
  }

  TEST_CASE("simulate --policies: the sampling is stated, --sample samples, --sample 1 is exact") {
    TempDir d;
    std::string csv = "timestamp,key\n";
    for (int i = 0; i < 4000; ++i)
      csv += fmt::format("{},k{}\n", i, (i * 7919) % (i % 3 == 0 ? 50 : 2000));
    d.write("t.csv", csv);
    const std::vector<std::string> base = {"simulate",    "--trace", d.file("t.csv"), "--policies",
                                           "lru,2q,slru", "--sizes", "400,1600"};
    auto with = [&](std::vector<std::string> extra) {
      std::vector<std::string> args = base;
      args.insert(args.end(), extra.begin(), extra.end());
      auto r = run_cli(args);
      REQUIRE_MESSAGE(r.code == 0, r.err);
      return r.out;
    };
    // Few keys: every request, and the table says why.
    std::string t = with({});
    CHECK_MESSAGE(t.find("every request simulated (~2,000 distinct keys: not sampled)") != std::string::npos, t);
    t = with({"--sample", "1"});
    CHECK_MESSAGE(t.find("every request simulated (--sample 1)") != std::string::npos, t);
    t = with({"--sample", "0.5"});
    CHECK_MESSAGE(t.find("SHARDS sample at rate 0.5 (--sample): ") != std::string::npos, t);
    CHECK_MESSAGE(t.find(" of 4,000 requests") != std::string::npos, t);
    CHECK(t.find("± (95%)") != std::string::npos);
    CHECK(t.find("warning:") == std::string::npos);
    t = with({"--sample", "0.1"});  // 400 entries become 40
    CHECK_MESSAGE(t.find("warning: --policies: at sampling rate 0.1, size 400 is simulated as a cache of 40 entries, "
                         "too few for a policy's partitions") != std::string::npos,
                  t);
    CHECK(t.find("size 1600 is simulated") == std::string::npos);

    const std::string j = with({"--sample", "0.5", "--format", "json"});
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(j).get(doc) == simdjson::SUCCESS);
    auto sampling = doc["policies"]["sampling"];
    CHECK(json_number(sampling["rate"]) == 0.5);
    CHECK(json_number(sampling["requests"]) == 4000);
    const double sampled = json_number(sampling["sampled_requests"]);
    CHECK(sampled > 1000);
    CHECK(sampled < 3000);
    auto cell = doc["policies"]["cells"].at(1);  // lru at 1600: a cache of 800
    CHECK(json_number(cell["simulated_entries"]) == 800);
    CHECK(json_number(cell["lookups"]) == sampled);
    CHECK(json_number(cell["miss_ratio_error"]) >= 0);

    const std::string c = with({"--sample", "0.5", "--format", "csv"});
    CHECK(c.substr(0, c.find('\n')).find(",recommended,sample_rate,miss_ratio_error") != std::string::npos);
    CHECK(count_lines(c) == 1 + 6);
    const std::string row = c.substr(c.find('\n') + 1, c.find('\n', c.find('\n') + 1) - c.find('\n') - 1);
    CHECK_MESSAGE(row.find(",0.5,") != std::string::npos, row);

    auto bad = run_cli({"simulate", "--trace", d.file("t.csv"), "--policies", "lru", "--sizes", "10", "--sample", "0"});
    CHECK(bad.code == 2);
    CHECK(bad.err == "inferprof: error: --sample 0: expected a rate in [2^-24, 1] (1: exact)\n");
  }

  TEST_CASE("simulate --policies: bad specs are one line and exit 2") {
    TempDir d;
    d.write("t.csv", "timestamp,key\n0,a\n");
    auto err = [&](std::vector<std::string> args) {
      args.insert(args.begin(), {"simulate", "--trace", d.file("t.csv")});
      auto r = run_cli(args);
      CHECK(r.code == 2);
      CHECK(count_lines(r.err) == 1);
      return r.err;
    };
    CHECK(err({"--policies", "lru,mru", "--sizes", "10"}) ==
          "inferprof: error: --policies mru: unknown policy 'mru' (expected lru, lfu, fifo, ttl, clock, sieve, s3fifo, "
          "arc, wtinylfu, 2q or slru)\n");
    CHECK(err({"--policies", "lru", "--sizes", "10x"}) ==
          "inferprof: error: --sizes: size '10x' is not an entry count (10000, 10k, 2M) or a byte size (64MB, 1GiB)\n");
    CHECK(err({"--policies", "lru"}) ==
          "inferprof: error: --policies and --sizes go together, e.g. --policies lru,s3fifo --sizes 1k,10k\n");
    CHECK(err({"--policies", "s3fifo(threshold=0)", "--sizes", "10"}) ==
          "inferprof: error: --policies s3fifo(threshold=0): s3fifo's threshold must be a whole number in [1, 255], "
          "got '0'\n");
    CHECK(err({"--tier", "l1=s3fifo:10:abc"}) ==
          "inferprof: error: --tier l1=s3fifo:10:abc: bad time to live 'abc': expected a number and a unit ms, s, m "
          "or h, e.g. 30s\n");
    CHECK(err({"--tier", "l1=sieve(bits=2):10"}) ==
          "inferprof: error: --tier l1=sieve(bits=2):10: policy sieve has no parameter 'bits' (it takes none)\n");
  }
}
