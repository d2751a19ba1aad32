#include <doctest/doctest.h>
#include <simdjson.h>
#include <stdio.h>
#include <sys/wait.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "inferprof/compare.hpp"
#include "inferprof/report.hpp"
#include "text_util.hpp"

using namespace inferprof;

namespace {

using inferprof::testing::count_of;
using inferprof::testing::lines_of;

CacheTierReport tier(std::string name, std::string where, std::uint64_t lookups, std::uint64_t hits,
                     std::uint64_t bytes) {
  CacheTierReport t;
  t.spec.tier = *parse_enum<CacheLevel>(name);
  t.spec.policy = Policy::lru;
  t.spec.max_entries = 10000;
  t.where = std::move(where);
  t.stats.lookups = lookups;
  t.stats.hits = hits;
  t.stats.misses = lookups - hits;
  t.stats.inserts = lookups - hits;
  t.stats.entries = lookups - hits;
  t.stats.bytes = bytes;
  return t;
}

OutcomeStats outcome(std::string name, std::uint64_t count, double mean_us) {
  OutcomeStats o;
  o.outcome = *parse_outcome(name);
  o.count = count;
  o.mean_us = mean_us;
  o.p50_us = mean_us;
  o.p99_us = mean_us * 1.5;
  return o;
}

CompareRow row(std::string name, double mean_us, Speedup speedup, Speedup wall) {
  CompareRow r;
  r.name = std::move(name);
  r.last.info.command = "compare";
  r.last.info.model_path = "/models/resnet18.pt";
  r.last.info.trace_path = "/traces/requests.jsonl";
  r.last.requests = 1000;
  r.mean_us = mean_us;
  r.p50_us = mean_us * 0.9;
  r.p99_us = mean_us * 2;
  r.rps = 1e6 / mean_us;
  r.wall_s = mean_us * 1000 / 1e6;
  r.means_us = {mean_us * 0.99, mean_us * 1.01};
  r.walls_s = {r.wall_s * 0.99, r.wall_s * 1.01};
  r.mean_speedup = speedup;
  r.wall_speedup = wall;
  return r;
}

// none (baseline) · l1 · "l1,l2" with a degraded Redis L2 · "again": no
// caches, within noise of the baseline.
CompareResult sample() {
  CompareResult r;
  r.repeat = 2;
  r.rows.push_back(row("none", 45100, Speedup{}, Speedup{}));

  CompareRow l1 = row("l1", 8530, Speedup{5.29, 5.01, 5.60, false}, Speedup{5.10, 4.90, 5.30, false});
  l1.p50_us = 1.2;
  l1.p99_us = 47000;
  l1.rps = 117.2;
  l1.wall_s = 9;
  l1.tiers.push_back(tier("l1", "in-process", 0, 0, 0).spec);
  l1.last.caches.push_back(tier("l1", "in-process", 1000, 812, 3355443));
  l1.last.outcomes = {outcome("l1_hit", 812, 1.2), outcome("miss", 188, 45300)};
  r.rows.push_back(l1);

  CompareRow l12 = row("l1,l2", 9000, Speedup{5.01, 4.80, 5.20, false}, Speedup{4.90, 4.70, 5.10, false});
  CacheTierReport l2 = tier("l2", "redis://cache:6379/0", 188, 0, 0);
  l2.spec.backend = TierBackend::redis;
  l2.spec.location = "redis://:hunter2@cache:6379/0";
  l2.stats.errors = 12;
  l2.stats.degraded = true;
  l12.tiers = {tier("l1", "", 0, 0, 0).spec, l2.spec};
  l12.last.caches = {tier("l1", "in-process", 1000, 812, 3355443), l2};
  l12.last.outcomes = {outcome("l1_hit", 812, 1.3), outcome("l2_hit", 0, 0), outcome("miss", 188, 46000)};
  l12.last.verify.enabled = true;
  l12.last.verify.fraction = 0.1;
  l12.last.verify.checked = 81;
  r.rows.push_back(l12);

  r.rows.push_back(row("again", 44700, Speedup{1.01, 0.97, 1.05, true}, Speedup{1.0, 0.98, 1.02, true}));
  r.warnings.push_back("no warm-up: the first requests include cold-start costs");
  return r;
}

std::string line_starting(const std::string& text, const std::string& prefix) {
  for (const std::string& l : lines_of(text))
    if (l.rfind(prefix, 0) == 0) return l;
  return {};
}

// Parsed by a real XML parser (Python's minidom) when python3 is there.
bool parses_as_xml(const std::string& xml) {
  if (std::system("python3 -c 'import xml.dom.minidom' >/dev/null 2>&1") != 0) {
    MESSAGE("python3 not found: XML well-formedness not checked");
    return true;
  }
  FILE* p =
      ::popen("python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parseString(sys.stdin.buffer.read())'", "w");
  REQUIRE(p != nullptr);
  const std::size_t written = std::fwrite(xml.data(), 1, xml.size(), p);
  const int status = ::pclose(p);
  return written == xml.size() && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

struct Rgb {
  int r = -1, g = -1, b = -1;
};

// The fill of the frame whose hover title starts with `title_prefix`.
Rgb fill_of(const std::string& svg, const std::string& title_prefix) {
  const auto at = svg.find("<title>" + title_prefix);
  if (at == std::string::npos) return {};
  const auto fill = svg.find("fill=\"rgb(", at);
  if (fill == std::string::npos) return {};
  Rgb c;
  if (std::sscanf(svg.c_str() + fill, "fill=\"rgb(%d,%d,%d)", &c.r, &c.g, &c.b) != 3) return {};
  return c;
}

}  // namespace

TEST_SUITE("compare report") {
  TEST_CASE("compare.csv: fixed header, one row per configuration, empty cells for absent tiers") {
    const std::string csv = render_compare_csv(sample());
    const auto lines = lines_of(csv);
    REQUIRE(lines.size() == 5);
    CHECK(lines[0] ==
          "config,repeats,mean_us,p50_us,p99_us,rps,wall_s,speedup,speedup_low,speedup_high,wall_speedup,"
          "wall_speedup_low,wall_speedup_high,noise,l1_hit_ratio,l2_hit_ratio,l3_hit_ratio,l1_bytes,l2_bytes,l3_bytes,"
          "errors,mode,l1_hit_us,l2_hit_us,l3_hit_us,miss_us,verdict,traffic_speedup,traffic_speedup_low,"
          "traffic_speedup_high,cpu_speedup,cpu_speedup_low,cpu_speedup_high,model,profile,rerun_low,rerun_high");
    CHECK(lines[1] ==
          "none,2,45100.000,40590.000,90200.000,22.173,45.100000,1.0000,1.0000,1.0000,1.0000,1.0000,1.0000,false,,,,,,,"
          "0,sequential,,,,,baseline,1.0000,1.0000,1.0000,,,,/models/resnet18.pt,,,");
    CHECK(lines[2] ==
          "l1,2,8530.000,1.200,47000.000,117.200,9.000000,5.2900,5.0100,5.6000,5.1000,4.9000,5.3000,false,0.812000,,,"
          "3355443,,,0,sequential,,,,,faster,1.0000,1.0000,1.0000,,,,/models/resnet18.pt,,,");  // sequential: no rerun
    // A name with a comma is quoted; the degraded L2's errors are counted.
    CHECK(lines[3].rfind("\"l1,l2\",2,", 0) == 0);
    CHECK(lines[3].find(",false,0.812000,0.000000,,3355443,0,,12") != std::string::npos);
    CHECK(lines[4].find(",true,,,,,,,0") != std::string::npos);
    CHECK(lines[4].find(",no measurable difference,") != std::string::npos);  // its interval includes 1.0
    // Every line has the header's 37 columns (the quoted comma excepted).
    for (std::size_t i = 0; i < lines.size(); ++i)
      CHECK(count_of(lines[i], ",") == (i == 3 ? 37u : 36u));
  }

  TEST_CASE("compare --gate rows: the change in percent with its interval, the limit, the verdict, the exit code") {
    CompareResult r = sample();
    CompareGate g;
    g.configuration = "l1";
    g.gate = "total.cpu.mean=5%";
    g.clock = "cpu";
    g.change.base = 1000;
    g.change.now = 1140;
    g.change.interval = std::pair{120.0, 160.0};
    g.limit = 60;
    g.verdict = Verdict::regression;
    r.gates.push_back(g);
    r.regressions = 1;
    const std::string table = render_compare_table(r);
    CHECK(table.find("gates against none (the change in mean per request, paired") != std::string::npos);
    CHECK(table.find("+14.0% [+12.0%, +16.0%]") != std::string::npos);
    CHECK(table.find("+6.0% (60.0 µs)") != std::string::npos);
    CHECK(table.find("REGRESSION") != std::string::npos);
    CHECK(render_compare_markdown(r).find("| l1 | total.cpu.mean=5% | total cpu |") != std::string::npos);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(render_compare_json(r)).get(doc) == simdjson::SUCCESS);
    CHECK(std::string_view(doc["gates"].at(0)["verdict"]) == "REGRESSION");
    CHECK(int64_t(doc["gate_exit_code"]) == 1);
    r.regressions = 0;
    r.unstable = 1;
    CHECK(r.gate_exit_code() == kExitUnstable);
    r.unstable = 0;
    CHECK(r.gate_exit_code() == 0);
  }

  TEST_CASE("compare.json: valid JSON with the documented fields and no password") {
    const std::string json = render_compare_json(sample());
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(json).get(doc) == simdjson::SUCCESS);
    CHECK(std::string_view(doc["schema"]) == "inferprof.compare/1");
    CHECK(std::int64_t(doc["repeat"]) == 2);
    CHECK(std::string_view(doc["baseline"]) == "none");
    simdjson::dom::array configs = doc["configurations"];
    REQUIRE(configs.size() == 4);

    simdjson::dom::element l1 = configs.at(1);
    CHECK(std::string_view(l1["name"]) == "l1");
    CHECK(std::string_view(l1["tiers"].at(0)["tier"]) == "l1");
    CHECK(std::string_view(l1["tiers"].at(0)["policy"]) == "lru");
    CHECK(std::uint64_t(l1["tiers"].at(0)["max_entries"]) == 10000);
    CHECK(double(l1["tiers"].at(0)["ttl_s"]) == 0);
    CHECK(std::string_view(l1["tiers"].at(0)["backend"]) == "memory");
    CHECK(double(l1["mean_us"]) == doctest::Approx(8530));
    CHECK(double(l1["p50_us"]) == doctest::Approx(1.2));
    CHECK(double(l1["p99_us"]) == doctest::Approx(47000));
    CHECK(double(l1["rps"]) == doctest::Approx(117.2));
    CHECK(double(l1["wall_s"]) == doctest::Approx(9));
    CHECK(simdjson::dom::array(l1["means_us"]).size() == 2);
    CHECK(simdjson::dom::array(l1["walls_s"]).size() == 2);
    CHECK(double(l1["speedup"]["value"]) == doctest::Approx(5.29));
    CHECK(double(l1["speedup"]["low"]) == doctest::Approx(5.01));
    CHECK(double(l1["speedup"]["high"]) == doctest::Approx(5.6));
    CHECK_FALSE(bool(l1["speedup"]["noise"]));
    CHECK(double(l1["wall_speedup"]["value"]) == doctest::Approx(5.1));
    CHECK_FALSE(bool(l1["outliers_dominate"]));
    simdjson::dom::element cache = l1["caches"].at(0);
    CHECK(std::string_view(cache["tier"]) == "l1");
    CHECK(std::uint64_t(cache["lookups"]) == 1000);
    CHECK(std::uint64_t(cache["hits"]) == 812);
    CHECK(std::uint64_t(cache["misses"]) == 188);
    CHECK(double(cache["hit_ratio"]) == doctest::Approx(0.812));
    CHECK(std::uint64_t(cache["bytes"]) == 3355443);
    CHECK(std::uint64_t(cache["entries"]) == 188);
    CHECK(std::uint64_t(cache["errors"]) == 0);
    CHECK_FALSE(bool(cache["degraded"]));
    simdjson::dom::element served = l1["served_by"].at(0);
    CHECK(std::string_view(served["outcome"]) == "l1_hit");
    CHECK(std::uint64_t(served["requests"]) == 812);
    CHECK(double(served["mean_us"]) == doctest::Approx(1.2));
    CHECK(double(served["p50_us"]) == doctest::Approx(1.2));
    CHECK(double(served["p99_us"]) == doctest::Approx(1.8));

    CHECK(bool(configs.at(2)["caches"].at(1)["degraded"]));
    CHECK(bool(configs.at(3)["speedup"]["noise"]));
    bool degraded_warning = false;
    for (std::string_view w : doc["warnings"].get_array())
      degraded_warning |= w.find("degraded") != std::string_view::npos;
    CHECK(degraded_warning);
    CHECK(json.find("hunter2") == std::string::npos);
    CHECK(json.find("null") == std::string::npos);  // finite numbers only
  }

  TEST_CASE("the compare table: baseline, intervals, noise named as noise, tiers explained") {
    const std::string table = render_compare_table(sample());
    CAPTURE(table);
    CHECK(table.rfind("inferprof compare · resnet18.pt · requests.jsonl · 1,000 requests · 2 repeats, interleaved\n",
                      0) == 0);
    const std::string header = line_starting(table, "caches");
    CHECK(header.find("speedup (95% CI)") != std::string::npos);
    CHECK(header.find("wall speedup") != std::string::npos);
    CHECK(header.find("l1 hit") != std::string::npos);
    CHECK(header.find("l2 bytes") != std::string::npos);
    CHECK(header.find("l3") == std::string::npos);  // no configuration has an L3

    const std::string none = line_starting(table, "none ");
    CHECK(none.find("1.00× (baseline)") != std::string::npos);
    CHECK(none.find(" -  ") != std::string::npos);  // tiers not configured
    const std::string l1 = line_starting(table, "l1 ");
    CHECK(l1.find("5.29× [5.01, 5.60]") != std::string::npos);
    CHECK(l1.find("5.10× [4.90, 5.30]") != std::string::npos);
    CHECK(l1.find("81.2%") != std::string::npos);
    CHECK(l1.find("3.2 MB") != std::string::npos);
    CHECK(l1.substr(l1.find("81.2%")).find('-') != std::string::npos);  // no L2 in "l1"
    const std::string again = line_starting(table, "again ");
    CHECK(again.find("~1.01× [0.97, 1.05]") != std::string::npos);
    CHECK(table.find("\n~ no measurable difference: the 95% interval includes 1.0\n") != std::string::npos);
    // All rows line up under the header.
    CHECK(header.size() <= none.size() + 2);

    CHECK(table.find("  l1 (l1=lru:10,000): 81.2% of requests served by L1 at 1.2 µs mean vs 45.30 ms for a miss "
                     "(45.10 ms per request in none)\n") != std::string::npos);
    CHECK(table.find("  l1,l2 (l1=lru:10,000; l2=lru:10,000 redis://cache:6379/0): 81.2% of requests served by L1") !=
          std::string::npos);
    CHECK(table.find("  again: no cache tiers: every request computed\n") != std::string::npos);
    CHECK(table.find("warning: no warm-up: the first requests include cold-start costs\n") != std::string::npos);
    CHECK(table.find("warning: l2 on redis://cache:6379/0 degraded in l1,l2: 12 errors, requests fell through to "
                     "compute\n") != std::string::npos);
    CHECK(table.find("verify: l1,l2: 81 cache hits recomputed (10% sampled): 0 mismatches") != std::string::npos);
    CHECK(table.find("hunter2") == std::string::npos);
  }

  TEST_CASE("the compare table without noise has no footnote - one replay says it has no interval") {
    CompareResult r = sample();
    r.rows.pop_back();
    r.repeat = 1;
    r.rows[1].wall_speedup = Speedup{5.1, 5.1, 5.1, false};
    const std::string table = render_compare_table(r);
    CAPTURE(table);
    CHECK(table.find("no measurable difference") == std::string::npos);
    CHECK(table.find("~") == std::string::npos);
    CHECK(table.find(" · 1 run each\n") != std::string::npos);
    CHECK(line_starting(table, "l1 ").find("5.10×  ") != std::string::npos);
    CHECK(table.find("wall speedup without an interval") != std::string::npos);

    CompareResult empty;
    CHECK(render_compare_table(empty) == "inferprof compare · no configurations\n");
    CHECK(render_compare_csv(empty).find('\n') + 1 == render_compare_csv(empty).size());
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    CHECK(parser.parse(render_compare_json(empty)).get(doc) == simdjson::SUCCESS);
  }

  TEST_CASE("the compare markdown is a GitHub table") {
    const std::string md = render_compare_markdown(sample());
    CAPTURE(md);
    CHECK(md.rfind("### inferprof compare · resnet18.pt", 0) == 0);
    const auto lines = lines_of(md);
    std::size_t header = 0;
    while (header < lines.size() && lines[header].rfind("| caches |", 0) != 0)
      ++header;
    REQUIRE(header + 1 < lines.size());
    CHECK(lines[header + 1].rfind("|:--|--:|", 0) == 0);
    CHECK(count_of(lines[header], "|") == count_of(lines[header + 1], "|"));
    for (std::size_t i = header + 2; i < header + 6; ++i)
      CHECK(count_of(lines[i], "|") == count_of(lines[header], "|"));
    CHECK(md.find("| none | ") != std::string::npos);
    CHECK(md.find("1.00× (baseline)") != std::string::npos);
    CHECK(md.find("\\~1.01× \\[0.97, 1.05\\]") != std::string::npos);
    CHECK(md.find("\\~ no measurable difference: the 95% interval includes 1.0") != std::string::npos);
    CHECK(md.find("- **l1** (l1=lru:10,000): 81.2% of requests served by L1") != std::string::npos);
    CHECK(md.find("> **warning:** l2 on redis://cache:6379/0 degraded") != std::string::npos);
  }

  TEST_CASE("diff flame graph: red where time grew, blue where it shrank, per request") {
    // Before: 10 requests; after: 20, so equal per-request time means doubled values.
    const std::vector<std::pair<std::string, std::uint64_t>> before = {
        {"request;compute;aten::linear", 1000},  // 100 µs per request
        {"request;cache;l1", 10},                // 1 µs
        {"request;compute;a<b>&c", 100},         // 10 µs
        {"request;input", 50},                   // 5 µs, gone in after
    };
    const std::vector<std::pair<std::string, std::uint64_t>> after = {
        {"request;compute;aten::linear", 400},  // 20 µs: shrunk
        {"request;cache;l1", 80},               // 4 µs: grown
        {"request;compute;a<b>&c", 200},        // 10 µs: unchanged
        {"request;output", 60},                 // 3 µs: new
    };
    const std::string svg = render_diff_flamegraph_svg(before, 10, after, 20, "l1 vs none · <model> & co");
    CAPTURE(svg);
    CHECK(parses_as_xml(svg));
    CHECK(count_of(svg, "<g class=\"frame\">") == count_of(svg, "<title>"));
    // request, cache, l1, compute, linear, a<b>&c, input, output
    CHECK(count_of(svg, "<g class=\"frame\">") == 8);
    CHECK(svg.find("l1 vs none · &lt;model&gt; &amp; co") != std::string::npos);
    CHECK(svg.find("red: slower in AFTER, blue: faster") != std::string::npos);
    CHECK(svg.find("<b>") == std::string::npos);
    CHECK(svg.find("<title>aten::linear: 100.0 µs → 20.0 µs per request (−80.0%)</title>") != std::string::npos);
    CHECK(svg.find("<title>a&lt;b&gt;&amp;c: 10.0 µs → 10.0 µs per request (±0.0%)</title>") != std::string::npos);
    CHECK(svg.find("<title>input: 5.0 µs → 0 µs per request (−100.0%)</title>") != std::string::npos);
    CHECK(svg.find("<title>output: 0 µs → 3.0 µs per request (new)</title>") != std::string::npos);

    const Rgb grown = fill_of(svg, "l1:");
    CHECK(grown.r == 255);
    CHECK(grown.b < 200);
    CHECK(grown.g == grown.b);
    const Rgb shrunk = fill_of(svg, "aten::linear:");
    CHECK(shrunk.b == 255);
    CHECK(shrunk.r < 200);
    const Rgb same = fill_of(svg, "a&lt;b&gt;&amp;c:");
    CHECK(same.r == same.g);
    CHECK(same.g == same.b);
    const Rgb gone = fill_of(svg, "input:");
    CHECK(gone.b == 255);
    CHECK(gone.r == 0);
    const Rgb added = fill_of(svg, "output:");
    CHECK(added.r == 255);
    CHECK(added.g == 0);

    // Widths: each stack as wide as the larger of its two per-request times,
    // so the 5 µs input that AFTER dropped still shows. request = 100 + 4 + 10 + 5 + 3 = 122 µs.
    // Plain searches, not <regex>: GCC 12 under -fsanitize warns (maybe-uninitialized) inside <regex>.
    const std::size_t title = svg.find("<title>input: ");
    REQUIRE(title != std::string::npos);
    const std::size_t rect = svg.find("</title><rect ", title);
    REQUIRE(rect != std::string::npos);
    const std::size_t width = svg.find(" width=\"", rect);
    REQUIRE(width != std::string::npos);
    REQUIRE(width < svg.find('>', rect + 8));  // the width of that same <rect>
    CHECK(std::stod(svg.substr(width + 8)) == doctest::Approx(1180.0 * 5 / 122).epsilon(0.001));
  }

  TEST_CASE("diff flame graph of nothing, and of runs without requests, is still well-formed") {
    const std::string empty = render_diff_flamegraph_svg({}, 0, {}, 0, "nothing");
    CHECK(parses_as_xml(empty));
    CHECK(empty.find("no samples") != std::string::npos);
    const std::string odd = render_diff_flamegraph_svg({{"a;b\x01;c\xff", 5}}, 0, {{"a;'quoted\"", 7}}, 1, "t");
    CHECK(parses_as_xml(odd));
    CHECK(odd.find("&apos;quoted&quot;") != std::string::npos);
  }

}  // TEST_SUITE

TEST_SUITE("paired bootstrap") {
  // Request i costs x_i (very uneven) times a drift factor d_i that hits both
  // configurations alike, as lockstep serving makes it.
  std::vector<double> drifting_base(std::size_t n) {
    std::vector<double> v;
    for (std::size_t i = 0; i < n; ++i) {
      const double x = 100.0 + static_cast<double>((i * 37) % 900);  // 100 … 999 µs
      const double drift = i < n / 2 ? 1.0 : 1.8;                    // the machine got busy halfway
      v.push_back(x * drift);
    }
    return v;
  }

  TEST_CASE("paired bootstrap: an exact 2x per request reads 2.00 with a zero-width interval") {
    const std::vector<double> base = drifting_base(500);
    std::vector<double> half;
    for (double b : base)
      half.push_back(b / 2);
    const Speedup paired = paired_bootstrap_speedup(base, half);
    CHECK(paired.value == doctest::Approx(2.0));
    CHECK(paired.low == doctest::Approx(2.0));
    CHECK(paired.high == doctest::Approx(2.0));
    CHECK_FALSE(paired.noise);
    // Pooled (unpaired) resampling sees the spread of x and the drift, not the pairing.
    const Speedup pooled = bootstrap_speedup(base, half);
    CHECK(pooled.high - pooled.low > 0.2);
  }

  TEST_CASE("paired bootstrap: a configuration that saves nothing reads 1.00 inside a narrow interval") {
    const std::vector<double> base = drifting_base(500);
    std::vector<double> same;
    // ±1 µs of alternating jitter per request: nothing saved on average.
    for (std::size_t i = 0; i < base.size(); ++i)
      same.push_back(base[i] + (i % 2 == 0 ? 1.0 : -1.0));
    const Speedup s = paired_bootstrap_speedup(base, same);
    CHECK(s.value == doctest::Approx(1.0).epsilon(0.001));
    CHECK(s.noise);
    CHECK(s.low > 0.99);
    CHECK(s.high < 1.01);
  }

  TEST_CASE("paired interval: at least the ratio's t-interval when one request carries the difference") {
    // 20 requests, one of them twice as slow under the other configuration.
    // Percentile bootstrap: [0.870, 1.000] (the outlier drawn 3 times, or
    // never: 36% of resamples). The ratio R = 2000 / 2100; its residuals
    // 100 - 100 R (19 times) and 100 - 200 R give a standard error of
    // 0.04535 and, with t(19) = 2.093, on the log scale R x exp(+-0.09966)
    // (a ratio's interval never reaches 0).
    std::vector<double> base(20, 100.0), other(20, 100.0);
    other[7] = 200.0;
    const Speedup s = paired_bootstrap_speedup(base, other);
    CHECK(s.value == doctest::Approx(2000.0 / 2100.0));
    CHECK(s.low == doctest::Approx(0.8620).epsilon(0.001));
    CHECK(s.high == doctest::Approx(1.0522).epsilon(0.001));
    CHECK(s.noise);
  }

  TEST_CASE("machine pace: the baseline's rolling median, 1 at the machine's usual speed") {
    CHECK(machine_pace({}).empty());
    const std::vector<double> steady(100, 250.0);
    for (double p : machine_pace(steady))
      CHECK(p == doctest::Approx(1.0));
    // 40 requests at half speed, then 160 at full; one spike at full speed is not a slow stretch.
    std::vector<double> base;
    for (int i = 0; i < 200; ++i)
      base.push_back(i < 40 ? 20.0 : (i == 120 ? 500.0 : 10.0));
    const std::vector<double> pace = machine_pace(base);
    REQUIRE(pace.size() == 200);
    for (int i = 0; i < 200; ++i)
      CHECK(pace[static_cast<std::size_t>(i)] == doctest::Approx(i < 40 ? 2.0 : 1.0));
    // A window wider than the run: one value for all.
    for (double p : machine_pace({5, 1, 3}, 31))
      CHECK(p == doctest::Approx(1.0));
  }

  TEST_CASE("paired bootstrap in units of the machine's pace: misses in a slow stretch do not bias the speedup") {
    // The machine ran at half speed for the first 40 requests, where a cache's
    // cold misses cluster: 20 misses (10 units of work) there, 180 hits (1 unit)
    // after. At a steady speed the cache's speedup is 200*10 / (20*10 + 180*1).
    std::vector<double> base, cached;
    for (int i = 0; i < 200; ++i) {
      const double slow = i < 40 ? 2.0 : 1.0;
      base.push_back(10 * slow);
      cached.push_back((i < 20 ? 10.0 : 1.0) * slow);
    }
    const double truth = 2000.0 / 380.0;
    const Speedup raw = paired_bootstrap_speedup(base, cached);
    CHECK(raw.value == doctest::Approx(4.0));  // 2400 / 600: the slow stretch counts twice on the cached side
    const Speedup paced = paired_bootstrap_speedup(base, cached, 2000, machine_pace(base));
    CHECK(paced.value == doctest::Approx(truth));
    CHECK(paced.low <= truth);
    CHECK(paced.high >= truth);
    CHECK_THROWS_AS(paired_bootstrap_speedup(base, cached, 2000, {1.0, 1.0}), std::invalid_argument);
  }

  TEST_CASE("paired bootstrap: pairs must match, and the same data gives the same interval") {
    CHECK_THROWS_AS(paired_bootstrap_speedup({1, 2, 3}, {1, 2}), std::invalid_argument);
    const std::vector<double> base = drifting_base(300);
    std::vector<double> faster;
    for (std::size_t i = 0; i < base.size(); ++i)
      faster.push_back(base[i] * (i % 3 == 0 ? 0.5 : 1.0));
    const Speedup a = paired_bootstrap_speedup(base, faster), b = paired_bootstrap_speedup(base, faster);
    CHECK(a.low == b.low);
    CHECK(a.high == b.high);
    CHECK(a.low < a.value);
    CHECK(a.value < a.high);
    CHECK(a.low > 1.0);
  }
}

TEST_SUITE("the this-trace interval") {
  // 20 requests over 4 inputs (5 each); an L1 misses each input once (100 µs)
  // and hits it after (1 µs); the uncached baseline takes 100 µs every time.
  struct CacheTrace {
    std::vector<double> base, other;
    std::vector<std::uint64_t> input;
    std::vector<std::uint8_t> base_outcome, other_outcome;
  };
  CacheTrace cache_trace() {
    CacheTrace t;
    for (int i = 0; i < 20; ++i) {
      t.base.push_back(100);
      t.other.push_back(i < 4 ? 100 : 1);
      t.input.push_back(static_cast<std::uint64_t>(i % 4));
      t.base_outcome.push_back(outcome_code(CacheOutcome::none));
      t.other_outcome.push_back(outcome_code(i < 4 ? CacheOutcome::miss : CacheOutcome::l1_hit));
    }
    return t;
  }

  TEST_CASE("without timing noise the trace held fixed has no spread, while resampling requests has a wide one") {
    const CacheTrace t = cache_trace();
    TraceIntervalInfo facts;
    const Speedup s = this_trace_speedup(t.base, t.other, t.input, t.base_outcome, t.other_outcome, 2000, {}, &facts);
    CHECK(s.value == doctest::Approx(2000.0 / 416.0));
    CHECK(s.low == doctest::Approx(s.value));
    CHECK(s.high == doctest::Approx(s.value));
    CHECK_FALSE(s.noise);
    CHECK(facts.classes == 8);     // 4 inputs x (miss, hit)
    CHECK(facts.singletons == 4);  // each miss is alone in its class
    // The request bootstrap redraws how many misses there are.
    const Speedup traffic = paired_bootstrap_speedup(t.base, t.other);
    CHECK(traffic.high - traffic.low > 2.0);
    CHECK(traffic.low > 0);
  }

  TEST_CASE("one class: the ratio's t-interval on the log scale, with a known answer") {
    // A/A on one input: b = 100 +- 5 and o = 100 -+ 5 alternating. R = 1;
    // e = b - o = +-10, sample variance 1000 / 9; Var(sum e) = 10 x 111.1;
    // SE(R) = sqrt(1111.1) / 1000 = 0.03333; t(9) = 2.262:
    // [exp(-0.0754), exp(0.0754)] = [0.9274, 1.0783].
    std::vector<double> b, o;
    for (int i = 0; i < 10; ++i) {
      b.push_back(i % 2 ? 105 : 95);
      o.push_back(i % 2 ? 95 : 105);
    }
    const std::vector<std::uint64_t> input(10, 7);
    const std::vector<std::uint8_t> none(10, outcome_code(CacheOutcome::none));
    const Speedup s = this_trace_speedup(b, o, input, none, none);
    CHECK(s.value == doctest::Approx(1.0));
    CHECK(s.low == doctest::Approx(0.9274).epsilon(0.001));
    CHECK(s.high == doctest::Approx(1.0783).epsilon(0.001));
    CHECK(s.noise);
  }

  TEST_CASE("a rerun's interval: the errors of both runs on the log scale, with known answers") {
    // 2.00 [1.80, 2.50]: log half-widths ln(1.8/2) = -0.10536 and ln(2.5/2)
    // = 0.22314; times 1.41421: -0.14900 and 0.31557, so [1.7226, 2.7421].
    Speedup s;
    s.value = 2.0;
    s.low = 1.8;
    s.high = 2.5;
    const Speedup r = rerun_interval(s);
    CHECK(r.value == doctest::Approx(2.0));
    CHECK(r.low == doctest::Approx(1.7226).epsilon(0.0005));
    CHECK(r.high == doctest::Approx(2.7421).epsilon(0.0005));
    CHECK_FALSE(r.noise);
    // Wider than the verdict's interval, so 1.0 can fall inside it alone: 1.10 [1.02, 1.19].
    s.value = 1.10;
    s.low = 1.02;
    s.high = 1.19;
    const Speedup near = rerun_interval(s);
    CHECK(near.low < 1.0);  // 1.1 x (1.02/1.1)^1.414 = 0.9915
    CHECK(near.noise);
    // Under --precision 3 a rerun stops at up to +-3% however narrow this run
    // came out: 1.00 [0.99, 1.01] has log half-widths 0.010050 and 0.009950
    // against -ln(0.97) = 0.030459; hypot: 0.032074 and 0.032043, so [0.96844, 1.03256].
    s.value = 1.0;
    s.low = 0.99;
    s.high = 1.01;
    const Speedup narrow = rerun_interval(s, 3);
    CHECK(narrow.low == doctest::Approx(0.96844).epsilon(0.0001));
    CHECK(narrow.high == doctest::Approx(1.03256).epsilon(0.0001));
    // Wider than the target already (a run that did not reach it): sqrt(2) as without one.
    s.value = 2.0;
    s.low = 1.8;
    s.high = 2.5;
    CHECK(rerun_interval(s, 3).low == doctest::Approx(1.7226).epsilon(0.0005));
    CHECK(rerun_interval(s, 3).high == doctest::Approx(2.7421).epsilon(0.0005));
    s.value = 1.10;
    // A point without an interval stays a point; a ratio that could not be formed is left alone.
    s.low = s.high = s.value;
    CHECK(rerun_interval(s).low == doctest::Approx(1.10));
    CHECK(rerun_interval(s).high == doctest::Approx(1.10));
    s.low = 0;
    CHECK(rerun_interval(s).low == 0);
  }

  TEST_CASE("singletons dominate: their noise comes from the pooled within-class spread, with a known answer") {
    // Input 0, ten times, uncached on both sides: b = 100 +- 10 alternating,
    // o = 100. Ten more inputs once each (the other side misses them): b = o = 100.
    // Pool "none" (a miss pools with it): residuals (b / 100 - 1) x sqrt(10 / 9)
    // and ten zeros, relative variance 0.01 x 10/9 / 2 = 0.005556. Each single
    // request: 100^2 x 0.005556 x (1 + R^2) = 111.1, ten of them 1111.1; the
    // class of input 0: e = +-10, 10 x 1000 / 9 = 1111.1. SE(R) =
    // sqrt(2222.2) / 2000 = 0.02357, t(9) = 2.262: R x exp(+-0.05332) =
    // [0.9481, 1.0548] at least (the bootstrap may widen it).
    std::vector<double> b, o;
    std::vector<std::uint64_t> input;
    std::vector<std::uint8_t> bo, oo;
    for (int i = 0; i < 20; ++i) {
      const bool repeat = i < 10;
      b.push_back(repeat ? (i % 2 ? 110 : 90) : 100);
      o.push_back(100);
      input.push_back(repeat ? 0u : static_cast<std::uint64_t>(i));
      bo.push_back(outcome_code(CacheOutcome::none));
      oo.push_back(outcome_code(repeat ? CacheOutcome::none : CacheOutcome::miss));
    }
    TraceIntervalInfo facts;
    const Speedup s = this_trace_speedup(b, o, input, bo, oo, 2000, {}, &facts);
    CHECK(facts.singletons == 10);
    CHECK(facts.classes == 11);
    CHECK_FALSE(facts.borrowed);
    CHECK(s.value == doctest::Approx(1.0));
    CHECK(s.low <= 0.9481 + 1e-4);
    CHECK(s.low > 0.9);
    CHECK(s.high >= 1.0548 - 1e-4);
    CHECK(s.high < 1.1);
  }

  TEST_CASE("no input repeats: classes by outcome alone, said so, and never a bound at or below 0") {
    std::vector<double> b, o;
    std::vector<std::uint64_t> input;
    for (int i = 0; i < 30; ++i) {
      b.push_back(100 + (i * 37 % 11));
      o.push_back(i == 3 ? 5000 : 100 + (i * 53 % 13));  // one request 50x slower: heavy tail
      input.push_back(static_cast<std::uint64_t>(i));
    }
    const std::vector<std::uint8_t> none(30, outcome_code(CacheOutcome::none));
    TraceIntervalInfo facts;
    const Speedup s = this_trace_speedup(b, o, input, none, none, 2000, {}, &facts);
    CHECK(facts.inputs_ignored);
    CHECK(s.low > 0);
    CHECK(s.low <= s.value);
    CHECK(s.value <= s.high);
    const Speedup traffic = paired_bootstrap_speedup(b, o);
    CHECK(traffic.low > 0);  // the t-widening on the ratio's own scale went below 0 here
  }

  TEST_CASE("passes that move as a whole widen the interval to their own spread, with a known answer") {
    // Four lockstep passes of ten requests of one input: b = 100, o = 100 x f
    // with f = 0.96, 1.04, 0.98, 1.02 per pass. R = 4000 / 4000 = 1. Per
    // pass e_p = B_p - R O_p = 40, -40, 20, -20; Var(R) = 4/3 x 4000 / 4000^2,
    // SE 0.018257; t(3) = 3.182: half-width 0.058094, [0.94356, 1.05981].
    // The requests alone, resampled as if independent, give about +-1%.
    const double f[] = {0.96, 1.04, 0.98, 1.02};
    std::vector<double> b, o;
    std::vector<std::uint32_t> pass;
    for (std::uint32_t p = 0; p < 4; ++p)
      for (int i = 0; i < 10; ++i) {
        b.push_back(100);
        o.push_back(100 * f[p]);
        pass.push_back(p);
      }
    const std::vector<std::uint64_t> input(40, 7);
    const std::vector<std::uint8_t> none(40, outcome_code(CacheOutcome::none));
    TraceIntervalInfo facts;
    const Speedup requests_only = this_trace_speedup(b, o, input, none, none, 2000, {}, &facts);
    CHECK(facts.passes == 0);
    CHECK(requests_only.high < 1.02);
    const Speedup s = this_trace_speedup(b, o, input, none, none, 2000, {}, &facts, pass);
    CHECK(facts.passes == 4);
    CHECK(facts.between_passes);
    CHECK(s.value == doctest::Approx(1.0));
    CHECK(s.low == doctest::Approx(0.94356).epsilon(0.0002));
    CHECK(s.high == doctest::Approx(1.05981).epsilon(0.0002));
    CHECK(s.noise);
    // Two passes cannot show their spread (t with 1 df): the requests' interval stands.
    const std::vector<double> b2(b.begin(), b.begin() + 20), o2(o.begin(), o.begin() + 20);
    const std::vector<std::uint32_t> pass2(pass.begin(), pass.begin() + 20);
    const Speedup two = this_trace_speedup(b2, o2, std::vector<std::uint64_t>(20, 7), std::vector<std::uint8_t>(20, 0),
                                           std::vector<std::uint8_t>(20, 0), 2000, {}, &facts, pass2);
    CHECK(facts.passes == 2);
    CHECK_FALSE(facts.between_passes);
    CHECK(two.high < 1.06);
    // Passes that agree leave the interval as the requests give it.
    std::vector<double> steady(40, 100);
    const Speedup same = this_trace_speedup(b, steady, input, none, none, 2000, {}, &facts, pass);
    CHECK_FALSE(facts.between_passes);
    CHECK(same.low == doctest::Approx(1.0));
    CHECK(same.high == doctest::Approx(1.0));
  }

  TEST_CASE("this-trace inputs must be one per request") {
    CHECK_THROWS_AS(this_trace_speedup({1, 2}, {1, 2}, {1}, {0, 0}, {0, 0}), std::invalid_argument);
    CHECK_THROWS_AS(this_trace_speedup({1, 2}, {1, 2}, {1, 1}, {0, 0}, {0, 0}, 2000, {}, nullptr, {0}),
                    std::invalid_argument);
  }
}
