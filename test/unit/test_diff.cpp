// diff: the threshold grammar, the gate decision, the bootstrap intervals,
// and reading saved runs back.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>

#include "diff_runs.hpp"
#include "inferprof/diff.hpp"
#include "inferprof/error.hpp"
#include "inferprof/report.hpp"
#include "temp_dir.hpp"

using namespace inferprof;
using inferprof::testing::run_of;
using inferprof::testing::spread_values;
using inferprof::testing::TempDir;

namespace {

const std::string kGrammar =
    "; expected [STAGE.][cpu.|wall.]METRIC=PCT%[+FLOOR(ms|us)], e.g. total.cpu.p50=5%,compute.mean=5%+0.05ms";

const DiffRow& row_of(const DiffResult& r, const std::string& stage, const std::string& metric) {
  for (const auto& row : r.rows)
    if (row.stage == stage && row.clock == "wall" && row.metric == metric) return row;
  throw std::runtime_error("no row " + stage + "." + metric);
}

}  // namespace

TEST_SUITE("diff") {
  TEST_CASE("gates: the grammar with stages, floors and throughput") {
    auto g = parse_gates("p99=10%, mean=5%");
    REQUIRE(g.size() == 2);
    CHECK(g[0].stage == "*");
    CHECK(g[0].metric == "p99");
    CHECK(g[0].pct == 10);
    CHECK(g[0].floor_us == GateSpec::kDefaultFloorUs);
    CHECK_FALSE(g[0].floor_given);
    CHECK(g[1].metric == "mean");

    g = parse_gates("compute.p99=5%+0.05ms,total.mean=2.5%+20us,throughput=10%,preprocess.max=50%+0us");
    REQUIRE(g.size() == 4);
    CHECK(g[0].stage == "compute");
    CHECK(g[0].floor_us == doctest::Approx(50));
    CHECK(g[0].floor_given);
    CHECK(g[1].stage == "total");
    CHECK(g[1].pct == 2.5);
    CHECK(g[1].floor_us == 20);
    CHECK(g[2].stage.empty());
    CHECK(g[2].metric == "throughput");
    CHECK(g[2].floor_us == 0);
    CHECK(g[3].floor_us == 0);

    auto defaults = parse_gates(kDefaultGates);
    REQUIRE(defaults.size() == 2);
    CHECK(defaults[0].stage == "total");
    CHECK(defaults[1].stage == "total");
  }

  TEST_CASE("gates: malformed thresholds name the item and what was expected") {
    CHECK_THROWS_WITH(parse_gates("p99"), ("--max-regression: no '=' in 'p99'" + kGrammar).c_str());
    CHECK_THROWS_WITH(parse_gates("p95=10%"),
                      ("--max-regression: unknown metric 'p95' (expected one of mean, p50, p90, p99, max, "
                       "throughput) in 'p95=10%'" +
                       kGrammar)
                          .c_str());
    CHECK_THROWS_WITH(parse_gates("gpu.p99=5%"),
                      ("--max-regression: unknown stage 'gpu' (expected one of queue, cache, load, input, "
                       "preprocess, batch_wait, h2d, compute, d2h, overhead, total) in 'gpu.p99=5%'" +
                       kGrammar)
                          .c_str());
    CHECK_THROWS_WITH(parse_gates("p99=10"),
                      ("--max-regression: '10' is not a percentage (expected a number followed by %, e.g. 10%) in "
                       "'p99=10'" +
                       kGrammar)
                          .c_str());
    CHECK_THROWS_WITH(parse_gates("p99=ten%"),
                      ("--max-regression: 'ten%' is not a percentage (expected a number followed by %, e.g. 10%) in "
                       "'p99=ten%'" +
                       kGrammar)
                          .c_str());
    CHECK_THROWS_WITH(parse_gates("p99=10%+5"),
                      ("--max-regression: '5' is not a duration (expected a number followed by ms or us, e.g. "
                       "+0.05ms) in 'p99=10%+5'" +
                       kGrammar)
                          .c_str());
    CHECK_THROWS_WITH(parse_gates("compute.throughput=5%"),
                      ("--max-regression: throughput belongs to the whole run, not to a stage or a clock (write "
                       "throughput=PCT%) in 'compute.throughput=5%'" +
                       kGrammar)
                          .c_str());
    CHECK_THROWS_WITH(
        parse_gates("p99=10%,p99=5%"),
        ("--max-regression: a second gate for the same metric (first: 'p99=10%') in 'p99=5%'" + kGrammar).c_str());
    CHECK_THROWS_WITH(parse_gates(""), ("--max-regression: no gates given" + kGrammar).c_str());
    CHECK_THROWS_WITH(parse_gates("p99=10%,,mean=5%"),
                      ("--max-regression: an empty item in 'p99=10%,,mean=5%'" + kGrammar).c_str());
    try {
      parse_gates("p99=-5%");
      FAIL("a negative percentage was accepted");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::bad_input);
    }
  }

  TEST_CASE("judge: regression only when past the threshold and clear") {
    // Past the threshold, interval above 0: a regression.
    CHECK(judge(Change{100, 130, std::make_pair(20.0, 40.0)}, 10) == Verdict::regression);
    // Past the threshold, the interval above 0 but not wholly past the threshold: noise.
    CHECK(judge(Change{100, 130, std::make_pair(5.0, 40.0)}, 10) == Verdict::noise);
    CHECK(judge(Change{100, 70, std::make_pair(-40.0, -5.0)}, 10) == Verdict::noise);
    // Past the threshold, interval straddles 0: noise.
    CHECK(judge(Change{100, 130, std::make_pair(-5.0, 60.0)}, 10) == Verdict::noise);
    // Faster past the threshold and clear: improved; not clear: noise.
    CHECK(judge(Change{100, 70, std::make_pair(-40.0, -20.0)}, 10) == Verdict::improved);
    CHECK(judge(Change{100, 70, std::make_pair(-40.0, 5.0)}, 10) == Verdict::noise);
    // Within the threshold: ok, however clear.
    CHECK(judge(Change{100, 105, std::make_pair(4.0, 6.0)}, 10) == Verdict::ok);
    CHECK(judge(Change{100, 110, std::make_pair(9.0, 11.0)}, 10) == Verdict::ok);
    // Without an interval the threshold alone decides.
    CHECK(judge(Change{100, 111, std::nullopt}, 10) == Verdict::regression);
    CHECK(judge(Change{100, 89, std::nullopt}, 10) == Verdict::improved);
    // Throughput: a drop is the regression.
    CHECK(judge(Change{1000, 800, std::nullopt}, 100, true) == Verdict::regression);
    CHECK(judge(Change{1000, 1200, std::nullopt}, 100, true) == Verdict::improved);
  }

  TEST_CASE("gate limits: percent of the base plus the floor") {
    auto g = parse_gates("p99=10%+0.05ms")[0];
    CHECK(gate_limit(g, 1000) == doctest::Approx(150));
    g = parse_gates("mean=5%")[0];
    CHECK(gate_limit(g, 1000) == doctest::Approx(60));  // 5% + the default 10 µs floor
    CHECK(Change{200, 250, std::nullopt}.pct() == doctest::Approx(25));
    CHECK(Change{0, 250, std::nullopt}.pct() == 0);
  }

  TEST_CASE("bootstrap intervals: a shift is inside its interval, zero is not") {
    auto base = spread_values(2000, 1000, 100, 1);
    auto shifted = spread_values(2000, 1050, 100, 2);
    auto ci = bootstrap_metric_intervals(base, shifted, 0.95);
    const double mean_diff = std::accumulate(shifted.begin(), shifted.end(), 0.0) / 2000 -
                             std::accumulate(base.begin(), base.end(), 0.0) / 2000;
    for (std::size_t k = 0; k < 4; ++k) {
      INFO("metric " << k);
      CHECK(ci.mean_p50_p90_p99[k].first > 0);
      CHECK(ci.mean_p50_p90_p99[k].first < ci.mean_p50_p90_p99[k].second);
    }
    CHECK(ci.mean_p50_p90_p99[0].first < mean_diff);
    CHECK(mean_diff < ci.mean_p50_p90_p99[0].second);
    // The mean's interval is about ±1.96 · σ · √(2/n) wide: σ = 100/√3 here.
    const double half = (ci.mean_p50_p90_p99[0].second - ci.mean_p50_p90_p99[0].first) / 2;
    CHECK(half == doctest::Approx(1.96 * (100 / std::sqrt(3.0)) * std::sqrt(2.0 / 2000)).epsilon(0.15));

    // The same data against itself: every interval holds 0.
    auto same = bootstrap_metric_intervals(base, base, 0.95);
    for (auto [lo, hi] : same.mean_p50_p90_p99) {
      CHECK(lo <= 0);
      CHECK(hi >= 0);
    }
    // Deterministic: the same inputs give the same interval.
    auto again = bootstrap_metric_intervals(base, shifted, 0.95);
    CHECK(again.mean_p50_p90_p99[3] == ci.mean_p50_p90_p99[3]);
    // A higher confidence gives a wider interval.
    auto wide = bootstrap_metric_intervals(base, shifted, 0.99);
    CHECK(wide.mean_p50_p90_p99[0].first <= ci.mean_p50_p90_p99[0].first);
    CHECK(wide.mean_p50_p90_p99[0].second >= ci.mean_p50_p90_p99[0].second);
  }

  TEST_CASE("diff_runs: a clear regression fails its gates") {
    auto base = spread_values(300, 1000, 50, 3);
    auto slower = base;
    for (double& v : slower)
      v += 200;  // +20%: past mean 5% and p99 10%
    DiffResult r = diff_runs(run_of(base), run_of(slower), DiffConfig{});
    CHECK(r.intervals);
    CHECK(r.gated == 2);
    CHECK(r.regressions == 2);
    CHECK(r.failed());
    CHECK(row_of(r, "total", "mean").verdict == Verdict::regression);
    CHECK(row_of(r, "total", "p99").verdict == Verdict::regression);
    CHECK(row_of(r, "total", "mean").change.delta() == doctest::Approx(200));
    // Stage rows are shown but not gated by default.
    CHECK(row_of(r, "compute", "mean").verdict == Verdict::none);
    // Stages that are 0 in both runs are listed as hidden, not as rows.
    CHECK(std::find(r.hidden.begin(), r.hidden.end(), "queue") != r.hidden.end());
    CHECK(render_diff_table(r).find("REGRESSION: 2 of 2 gates failed") != std::string::npos);
    CHECK(render_diff_markdown(r).rfind("**inferprof diff: REGRESSION", 0) == 0);
    std::string junit = render_diff_junit(r);
    CHECK(junit.find("failures=\"2\"") != std::string::npos);
    CHECK(junit.find("<failure") != std::string::npos);

    // Every stage gated: compute regresses too.
    DiffConfig all;
    all.gates = "p99=10%,mean=5%";
    r = diff_runs(run_of(base), run_of(slower), all);
    CHECK(r.gated == 4);
    CHECK(r.regressions == 4);
    // A stage gate overrides the every-stage one for that stage.
    all.gates = "mean=5%,compute.mean=50%";
    r = diff_runs(run_of(base), run_of(slower), all);
    CHECK(row_of(r, "compute", "mean").verdict == Verdict::ok);
    CHECK(row_of(r, "total", "mean").verdict == Verdict::regression);
  }

  TEST_CASE("diff_runs: a change within noise is named noise and passes") {
    // Ten requests, one outlier grows: past the thresholds, but resampling
    // ten requests cannot tell it from chance.
    std::vector<double> base = {100, 200, 300, 400, 500, 600, 700, 800, 900, 1000};
    auto now = base;
    now.back() = 1600;
    DiffResult r = diff_runs(run_of(base), run_of(now), DiffConfig{});
    CHECK(row_of(r, "total", "mean").change.delta() == doctest::Approx(60));
    CHECK(row_of(r, "total", "mean").verdict == Verdict::noise);
    CHECK(row_of(r, "total", "p99").verdict == Verdict::noise);
    CHECK(r.noise == 2);
    CHECK_FALSE(r.failed());
    std::string table = render_diff_table(r);
    CHECK(table.find("ok: 2 gates passed, 2 past the threshold but within noise") != std::string::npos);
    CHECK(render_diff_junit(r).find("<system-out>noise: past the threshold but not statistically clear") !=
          std::string::npos);

    // Without per-request data the threshold alone decides, and the report says so.
    RunData b = run_of(base), n = run_of(now);
    for (auto& v : b.per_request)
      v.clear();
    b.csv_path.clear();
    r = diff_runs(b, n, DiffConfig{});
    CHECK_FALSE(r.intervals);
    CHECK(r.intervals_note.find("base has no requests.csv") != std::string::npos);
    CHECK(r.failed());
  }

  TEST_CASE("diff_runs: an improvement passes and the same run is ok") {
    auto base = spread_values(300, 1000, 50, 4);
    auto faster = base;
    for (double& v : faster)
      v -= 300;
    DiffResult r = diff_runs(run_of(base), run_of(faster), DiffConfig{});
    CHECK(r.improved == 2);
    CHECK_FALSE(r.failed());
    r = diff_runs(run_of(base), run_of(base), DiffConfig{});
    CHECK(r.regressions + r.noise + r.improved == 0);
    CHECK(row_of(r, "total", "p99").verdict == Verdict::ok);
  }

  TEST_CASE("diff_runs: different models are refused unless forced") {
    auto base = spread_values(50, 1000, 50, 5);
    RunData a = run_of(base, "xxh3:1111111111111111"), b = run_of(base, "xxh3:2222222222222222");
    b.threads = 4;
    CHECK_THROWS_WITH(diff_runs(a, b, DiffConfig{}),
                      "run/summary.json and run/summary.json are not comparable: models differ: base "
                      "xxh3:1111111111111111 vs new xxh3:2222222222222222; intra-op threads differ: base 1 vs new 4 "
                      "(--force compares them anyway)");
    DiffConfig forced;
    forced.force = true;
    DiffResult r = diff_runs(a, b, forced);
    CHECK(r.mismatches.size() == 2);
    CHECK(render_diff_table(r).find("warning (--force): models differ") != std::string::npos);
    // A summary from before the hashes were recorded: the paths stand in, and the report says so.
    RunData old_base = run_of(base), old_new = run_of(base);
    old_base.model_hash.clear();
    old_base.model_path = "a.pt";
    old_new.model_path = "b.pt";
    CHECK_THROWS_WITH(diff_runs(old_base, old_new, DiffConfig{}),
                      doctest::Contains("models differ: base a.pt vs new b.pt"));
    old_new.model_path = "a.pt";
    r = diff_runs(old_base, old_new, DiffConfig{});
    REQUIRE_FALSE(r.notes.empty());
    CHECK(r.notes[0].find("hashes not recorded in base") != std::string::npos);
    // The host name alone is not a different machine (CI runners change names every job).
    RunData c = run_of(base), d = run_of(base);
    c.hostname = "runner-1";
    d.hostname = "runner-2";
    CHECK_NOTHROW(diff_runs(c, d, DiffConfig{}));
  }

  TEST_CASE("load_run: summary.json written by the report module, and requests.csv") {
    TempDir dir;
    RunSummary s;
    s.info.model_hash = "xxh3:0123456789abcdef";
    s.info.trace_hash = "xxh3:fedcba9876543210";
    s.info.cpu_model = "Some CPU @ 2.0GHz";
    s.info.cpu_cores = 8;
    s.info.threads = 2;
    s.requests = 3;
    s.throughput_rps = 123.5;
    s.stages[static_cast<std::size_t>(Stage::compute)] = StageStats{3, 30, 10, 9, 11, 12, 13, 8, 0.5, true};
    s.stages[static_cast<std::size_t>(Stage::h2d)].applicable = false;
    s.total = StageStats{3, 60, 20, 19, 21, 22, 23, 18, 1, true};
    {
      std::ofstream(dir.file("summary.json")) << render_summary_json(s);
      std::ofstream csv(dir.file("requests.csv"));
      csv << "seq,id,line,key,worker,arrival_us,start_us,total_us,queue_us,cache_us,load_us,input_us,"
             "preprocess_us,h2d_us,compute_us,d2h_us,overhead_us,cache,ok,error\n"
          << "0,1,1,\"a,\"\"b\"\"\",0,0.000,0.000,20.000,0.000,0.000,0.000,1.000,2.000,,10.000,,7.000,none,true,\n"
          << "1,2,2,\"multi\nline\",0,1.000,1.000,21.500,0.000,0.000,0.000,1.000,2.000,,11.000,,7.500,none,true,\n"
          << "2,3,3,k,0,2.000,2.000,5.000,0.000,0.000,0.000,1.000,0.000,,0.000,,4.000,none,false,\"bad, input\"\n";
    }
    RunData r = load_run(dir.path().string());
    CHECK(r.model_hash == "xxh3:0123456789abcdef");
    CHECK(r.trace_hash == "xxh3:fedcba9876543210");
    CHECK(r.cpu_model == "Some CPU @ 2.0GHz");
    CHECK(r.cpu_cores == 8);
    CHECK(r.threads == 2);
    CHECK(r.requests == 3);
    CHECK(r.throughput_rps == doctest::Approx(123.5));
    CHECK(r.stages[static_cast<std::size_t>(Stage::compute)].p99_us == 12);
    CHECK_FALSE(r.stages[static_cast<std::size_t>(Stage::h2d)].applicable);
    CHECK(r.stages[kStageCount].mean_us == 20);
    // Two successful rows (the quoted key with a comma, quotes and a newline
    // did not shift the columns); the failed one is left out.
    CHECK(r.csv_rows == 2);
    CHECK(r.per_request[kStageCount] == std::vector<double>{20, 21.5});
    CHECK(r.per_request[static_cast<std::size_t>(Stage::compute)] == std::vector<double>{10, 11});
    CHECK(r.per_request[static_cast<std::size_t>(Stage::h2d)] == std::vector<double>{0, 0});

    // The summary.json path itself works too.
    CHECK(load_run(dir.file("summary.json")).csv_rows == 2);
  }

  TEST_CASE("load_run: bad input names the file and what was expected") {
    TempDir dir;
    CHECK_THROWS_WITH(
        load_run(dir.file("nope")),
        (dir.file("nope") + ": no such file or folder (expected a run's summary.json or its --out folder)").c_str());
    CHECK_THROWS_WITH(
        load_run(dir.path().string()),
        (dir.path().string() + ": no summary.json in this folder (expected a run's --out folder)").c_str());
    std::ofstream(dir.file("summary.json")) << "{\"schema\": \"other/2\"}";
    CHECK_THROWS_WITH(load_run(dir.file("summary.json")),
                      (dir.file("summary.json") + ": not an inferprof summary (schema 'other/2', expected "
                                                  "'inferprof.summary/1')")
                          .c_str());
    std::ofstream(dir.file("summary.json")) << "{\"schema\": ";
    CHECK_THROWS_WITH(load_run(dir.file("summary.json")),
                      doctest::Contains((dir.file("summary.json") + ": malformed JSON").c_str()));

    RunSummary s;
    s.requests = 1;
    std::ofstream(dir.file("summary.json")) << render_summary_json(s);
    std::ofstream(dir.file("requests.csv")) << "seq,total_us,ok\n0,1.0,true\n";
    CHECK_THROWS_WITH(load_run(dir.file("summary.json")),
                      (dir.file("requests.csv") + ":1: no 'queue_us' column in the header (is this an inferprof "
                                                  "requests.csv?)")
                          .c_str());
  }
}
