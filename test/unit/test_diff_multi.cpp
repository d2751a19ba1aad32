// diff over several runs per side: the hierarchical bootstrap interval on
// constructed data with known answers, gates on cpu or wall time, and the
// unstable verdict.
#include <doctest/doctest.h>

#include <fstream>

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

// One run per offset: 200 requests around center · (1 + offset), ±5%; thread
// CPU time is `cpu_share` of each request's wall time times `cpu_scale`.
std::vector<RunData> side(const std::vector<double>& offsets, double center, std::uint32_t seed, double cpu_scale = 1.0,
                          const std::string& model = "xxh3:00000000000000aa") {
  std::vector<RunData> runs;
  for (std::size_t k = 0; k < offsets.size(); ++k) {
    const double c = center * (1 + offsets[k]);
    auto wall = spread_values(200, c, c * 0.05, seed + static_cast<std::uint32_t>(k));
    auto cpu = spread_values(200, center * 0.5 * cpu_scale, center * 0.02, seed + 100 + static_cast<std::uint32_t>(k));
    runs.push_back(run_of(wall, model, cpu));
    runs.back().summary_path = "run" + std::to_string(seed + k) + "/summary.json";
  }
  return runs;
}

std::vector<std::vector<double>> totals(const std::vector<RunData>& runs) {
  std::vector<std::vector<double>> out;
  for (const auto& r : runs)
    out.push_back(r.per_request[kStageCount]);
  return out;
}

const DiffRow& row_of(const DiffResult& r, const std::string& stage, const std::string& clock,
                      const std::string& metric) {
  for (const auto& row : r.rows)
    if (row.stage == stage && row.clock == clock && row.metric == metric) return row;
  throw std::runtime_error("no row " + stage + "." + clock + "." + metric);
}

}  // namespace

TEST_SUITE("diff over several runs") {
  TEST_CASE("hierarchical interval: the between-run spread is inside it, with a known answer") {
    // Every request of a run takes the run's value: all the variation is
    // between runs. A side's mean over three runs drawn from {90, 100, 110}
    // is one of -10%, -6.7%, ..., +10% with probabilities 1, 3, 6, 7, 6, 3,
    // 1 in 27, so the 95% interval reaches ±6.7% at least (each end of the
    // ±10% has 1/27 = 3.7% > 2.5%) and never beyond ±10%.
    std::vector<std::vector<double>> base(3, std::vector<double>(100, 100.0));
    std::vector<std::vector<double>> now = {std::vector<double>(100, 90.0), std::vector<double>(100, 100.0),
                                            std::vector<double>(100, 110.0)};
    auto ci = hierarchical_intervals(base, now, 0.95);
    for (std::size_t m = 0; m < 4; ++m) {
      INFO("metric " << m);
      CHECK(ci.relative[m].first >= -0.10 - 1e-12);
      CHECK(ci.relative[m].first <= -0.0666);
      CHECK(ci.relative[m].second >= 0.0666);
      CHECK(ci.relative[m].second <= 0.10 + 1e-12);
      // The absolute interval is the same in µs (the base is 100 in every resample).
      CHECK(ci.mean_p50_p90_p99[m].first == doctest::Approx(ci.relative[m].first * 100));
    }
    // The same requests pooled into one run: the request bootstrap sees only
    // the spread within it and gives an interval several times narrower.
    std::vector<double> pooled;
    for (const auto& r : now)
      pooled.insert(pooled.end(), r.begin(), r.end());
    auto flat = hierarchical_intervals({std::vector<double>(300, 100.0)}, {pooled}, 0.95);
    CHECK(flat.relative[0].second - flat.relative[0].first < (ci.relative[0].second - ci.relative[0].first) / 4);
    // Deterministic.
    CHECK(hierarchical_intervals(base, now, 0.95).relative[2] == ci.relative[2]);
    // Nothing to resample: no interval.
    CHECK(hierarchical_intervals({}, now, 0.95).relative[0] == std::make_pair(0.0, 0.0));
  }

  TEST_CASE("identical distributions: the interval contains 0 and every gate passes") {
    // Both sides: three runs whose levels differ by up to ±2%, like a machine
    // whose load changes between runs.
    auto base = side({-0.02, 0.0, 0.02}, 1000, 10);
    auto now = side({0.01, -0.015, 0.005}, 1000, 20);
    auto ci = hierarchical_intervals(totals(base), totals(now), 0.95);
    for (auto [lo, hi] : ci.relative) {
      CHECK(lo < 0);
      CHECK(hi > 0);
    }
    DiffConfig all;
    all.gates = "total.cpu.mean=5%,total.cpu.p50=5%,total.mean=5%,total.p50=5%,total.p99=10%";
    DiffResult r = diff_runs(base, now, all);
    CHECK(r.method == "hierarchical bootstrap");
    CHECK(r.gated == 5);
    CHECK(r.regressions + r.unstable + r.noise + r.improved == 0);
    CHECK(r.exit_code() == 0);
    const DiffRow& mean = row_of(r, "total", "wall", "mean");
    REQUIRE(mean.relative);
    CHECK(mean.relative->first < 0);
    CHECK(mean.relative->second > 0);
    CHECK(mean.base_runs.size() == 3);
    REQUIRE(mean.base_spread);
    CHECK(*mean.base_spread == doctest::Approx(0.04).epsilon(0.3));
    CHECK(r.intervals_note.find("95% hierarchical bootstrap intervals (1000 resamples, each drawing 3 base and 3 new "
                                "runs with replacement, then the requests of each drawn run; 600 base vs 600 new") ==
          0);
  }

  TEST_CASE("a true +20% shift is a REGRESSION on wall and cpu time") {
    auto base = side({-0.02, 0.0, 0.02}, 1000, 30);
    auto now = side({-0.02, 0.0, 0.02}, 1200, 40, 1.0);  // cpu_scale 1 of a 1200 centre: +20% cpu too
    DiffConfig config;
    config.gates = std::string(kDefaultGates) + ",total.mean=5%";
    DiffResult r = diff_runs(base, now, config);
    CHECK(r.regressions == 3);
    CHECK(r.exit_code() == 1);
    for (const auto* row :
         {&row_of(r, "total", "cpu", "mean"), &row_of(r, "total", "cpu", "p50"), &row_of(r, "total", "wall", "mean")}) {
      INFO(row->clock << " " << row->metric);
      CHECK(row->verdict == Verdict::regression);
      REQUIRE(row->relative);
      // The whole interval past the 5% threshold, and around the true +20%.
      CHECK(row->relative->first > 0.05);
      CHECK(row->relative->first < 0.20);
      CHECK(row->relative->second > 0.20);
    }
    CHECK(render_diff_table(r).find("REGRESSION: 3 of 3 gates failed") != std::string::npos);
  }

  // The VM of 2026-12-02: three runs of identical code took 90% more thread
  // CPU time than the three before them because the machine ran slower. The
  // speed probe each run took says so, and the verdict is unstable, not a
  // REGRESSION; a regression the machine does not explain stands.
  TEST_CASE("the machine ran slower on one side: a change it explains is unstable, a larger one a REGRESSION") {
    auto probe = [](std::vector<RunData> runs, double us) {
      for (RunData& d : runs)
        d.speed_before = d.speed_after = SpeedProbe{us, us * 2};
      return runs;
    };
    const auto base = probe(side({-0.02, 0.0, 0.02}, 1000, 30), 1000);
    DiffConfig config;  // the default gates: total.cpu.mean and p50 at 5%
    // +20% CPU time, the probe +20%: the machine.
    DiffResult r = diff_runs(base, probe(side({-0.02, 0.0, 0.02}, 1200, 40), 1200), config);
    REQUIRE(r.machine_slowdown);
    CHECK(*r.machine_slowdown == doctest::Approx(1.2));
    CHECK(r.regressions == 0);
    CHECK(r.unstable == 2);
    CHECK(r.exit_code() == kExitUnstable);
    CHECK(row_of(r, "total", "cpu", "mean").note.find("the machine ran 20% slower on the new side") !=
          std::string::npos);
    CHECK(render_diff_table(r).find("machine speed probe") != std::string::npos);
    CHECK(render_diff_json(r).find("\"slowdown\": 1.2") != std::string::npos);
    // The same +20% with the probe unchanged (within its noise): the code.
    r = diff_runs(base, probe(side({-0.02, 0.0, 0.02}, 1200, 40), 1030), config);
    CHECK(r.regressions == 2);
    // +60% while the machine ran 20% slower: still past 5% after that.
    r = diff_runs(base, probe(side({-0.02, 0.0, 0.02}, 1600, 40), 1200), config);
    CHECK(r.regressions == 2);
    // The machine ran faster on the new side and hid nothing: an improvement it explains is unstable too.
    r = diff_runs(base, probe(side({-0.02, 0.0, 0.02}, 800, 40), 800), config);
    CHECK(r.improved == 0);
    CHECK(r.unstable == 2);
    // A run without a probe (an older summary.json): no machine figure, the verdict as before.
    auto old = base;
    old[1].speed_after = SpeedProbe{};
    r = diff_runs(old, probe(side({-0.02, 0.0, 0.02}, 1200, 40), 1200), config);
    CHECK_FALSE(r.machine_slowdown);
    CHECK(r.regressions == 2);
  }

  TEST_CASE("explained_by_machine: the base scaled by the slowdown, throughput divided by it") {
    const GateSpec gate = parse_gates("total.mean=10%")[0];                                         // 10% + 10 µs
    CHECK(explained_by_machine(Change{1000, 1250, std::nullopt}, 1.2, gate, Verdict::regression));  // vs 1200: +4%
    CHECK_FALSE(explained_by_machine(Change{1000, 1400, std::nullopt}, 1.2, gate, Verdict::regression));  // +17%
    CHECK_FALSE(
        explained_by_machine(Change{1000, 1250, std::nullopt}, 1.04, gate, Verdict::regression));  // probe noise
    CHECK_FALSE(explained_by_machine(Change{1000, 1250, std::nullopt}, 1.2, gate, Verdict::noise));
    // An interval moves with the base: [+200, +300] against 1000 is [0, +100] against 1200.
    CHECK(explained_by_machine(Change{1000, 1250, std::pair{200.0, 300.0}}, 1.2, gate, Verdict::regression));
    // Throughput (higher is better): 1000 req/s on a machine 25% slower is 800 req/s.
    const GateSpec tp = parse_gates("throughput=10%")[0];
    CHECK(explained_by_machine(Change{1000, 780, std::nullopt}, 1.25, tp, Verdict::regression, true));
    CHECK_FALSE(explained_by_machine(Change{1000, 600, std::nullopt}, 1.25, tp, Verdict::regression, true));
  }

  TEST_CASE("one side with a wildly different run is unstable, not a REGRESSION") {
    auto base = side({0.0, 0.01, -0.01}, 1000, 50);
    auto now = side({0.0, 0.01, 1.0}, 1000, 60, 1.0);  // the third run twice as slow (wall)
    DiffConfig config;
    config.gates = "total.mean=5%,total.p50=5%";
    DiffResult r = diff_runs(base, now, config);
    CHECK(row_of(r, "total", "wall", "mean").verdict == Verdict::unstable);
    CHECK(row_of(r, "total", "wall", "p50").verdict == Verdict::unstable);
    REQUIRE(row_of(r, "total", "wall", "mean").new_spread);
    CHECK(*row_of(r, "total", "wall", "mean").new_spread > 0.7);
    CHECK(r.regressions == 0);
    CHECK(r.unstable == 2);
    CHECK(r.exit_code() == kExitUnstable);
    CHECK(render_diff_table(r).find("UNSTABLE: 2 of 2 gates not judged") != std::string::npos);
    CHECK(render_diff_markdown(r).rfind("**inferprof diff: UNSTABLE", 0) == 0);
    const std::string json = render_diff_json(r);
    CHECK(json.find("\"verdict\": \"unstable\"") != std::string::npos);
    CHECK(json.find("\"exit_code\": 4") != std::string::npos);
    CHECK(json.find("\"method\": \"hierarchical bootstrap\"") != std::string::npos);
    const std::string junit = render_diff_junit(r);
    CHECK(junit.find("failures=\"0\" errors=\"0\" skipped=\"2\"") != std::string::npos);
    CHECK(junit.find("<skipped message=\"unstable: the runs of one side differ by more than total.mean=5%\"/>") !=
          std::string::npos);
    // A side that disagrees beyond the threshold, but every new run beyond
    // every base run by more than it: the change is the code's, a REGRESSION.
    config.gates = "total.mean=5%";
    DiffResult apart = diff_runs(side({0.0, 0.08, -0.02}, 1000, 55), side({1.0, 1.05, 0.98}, 1000, 65), config);
    const DiffRow& far = row_of(apart, "total", "wall", "mean");
    REQUIRE(far.base_spread);
    CHECK(*far.base_spread > 0.08);
    CHECK(far.verdict == Verdict::regression);
    CHECK(apart.exit_code() == 1);
    // The same runs, but the change within the threshold: the gate passes however much a side spreads.
    config.gates = "total.mean=50%";
    CHECK(diff_runs(base, now, config).exit_code() == 0);
  }

  TEST_CASE("wall time inflated by load, cpu time unchanged: the default cpu gates pass") {
    // The new runs were descheduled: +80% wall, the same thread CPU time.
    auto base = side({0.0, 0.01, -0.01}, 1000, 70);
    auto now = side({0.8, 0.82, 0.79}, 1000, 80);
    DiffResult r = diff_runs(base, now, DiffConfig{});
    CHECK(r.gates[0].clock == "cpu");
    CHECK(r.gated == 2);
    CHECK(r.exit_code() == 0);
    CHECK(row_of(r, "total", "cpu", "mean").verdict == Verdict::ok);
    CHECK(row_of(r, "total", "wall", "mean").change.pct() > 70);  // shown, not gated
    CHECK(row_of(r, "total", "wall", "mean").verdict == Verdict::none);
    DiffConfig wall;
    wall.gates = "total.wall.mean=5%";
    CHECK(diff_runs(base, now, wall).exit_code() == 1);
  }

  TEST_CASE("one run per side: the request bootstrap, and the report says so") {
    auto base = side({0.0}, 1000, 90), now = side({0.0}, 1000, 91);
    DiffResult r = diff_runs(base, now, DiffConfig{});
    CHECK(r.method == "request bootstrap");
    CHECK(r.intervals_note.find("95% bootstrap intervals over requests (1000 resamples of 200 base vs 200 new") == 0);
    CHECK(r.intervals_note.find("one run per side: the interval cannot see drift between runs") != std::string::npos);
    CHECK_FALSE(row_of(r, "total", "cpu", "mean").base_spread);
    CHECK(render_diff_table(r).find("spread") == std::string::npos);
    // One side with one run: hierarchical, and the note names the side.
    r = diff_runs(side({0.0}, 1000, 92), side({0.0, 0.01}, 1000, 93), DiffConfig{});
    CHECK(r.method == "hierarchical bootstrap");
    CHECK(r.intervals_note.find("the base side has one run") != std::string::npos);
  }

  TEST_CASE("gates on a preprocessing op: parsed, gated with an interval, refused when a run lacks it") {
    auto g = parse_gates("preprocess.resize.cpu.p50=5%,preprocess.decode.mean=10%,preprocess.cpu.mean=5%");
    REQUIRE(g.size() == 3);
    CHECK((g[0].stage == "preprocess.resize" && g[0].clock == "cpu" && g[0].metric == "p50"));
    CHECK((g[1].stage == "preprocess.decode" && g[1].clock == "wall" && g[1].metric == "mean"));
    CHECK((g[2].stage == "preprocess" && g[2].clock == "cpu"));
    CHECK_THROWS_WITH(parse_gates("compute.resize.p50=5%"), doctest::Contains("unknown clock 'resize'"));
    CHECK_THROWS_WITH(parse_gates("preprocess.Re-size.p50=5%"),
                      doctest::Contains("'Re-size' is not a preprocessing op's name"));
    CHECK_THROWS_WITH(parse_gates("preprocess.resize.gpu.p50=5%"), doctest::Contains("unknown clock 'gpu'"));

    // resize takes 40% more on the new side, CPU and wall; decode and the rest are unchanged.
    auto with_resize = [](std::vector<RunData> runs, double scale) {
      for (std::size_t k = 0; k < runs.size(); ++k)
        for (const char* name : {"preprocess.decode", "preprocess.resize"}) {
          const double f = std::string(name) == "preprocess.resize" ? scale : 1.0;
          RunData::Part part;
          part.name = name;
          part.per_request = spread_values(200, 100 * f, 5, 7 + static_cast<std::uint32_t>(k));
          part.per_request_cpu = spread_values(200, 80 * f, 4, 9 + static_cast<std::uint32_t>(k));
          part.stats.count = 200;
          part.stats.max_us = 110 * f;
          part.stats.mean_us = part.stats.p50_us = 100 * f;
          part.stats.cpu = true;
          part.stats.cpu_mean_us = part.stats.cpu_p50_us = 80 * f;
          part.stats.cpu_p99_us = 84 * f;
          runs[k].preprocess_ops.push_back(part);
        }
      return runs;
    };
    const auto base = with_resize(side({0, 0, 0}, 1000, 1), 1.0);
    const auto now = with_resize(side({0, 0, 0}, 1000, 11), 1.4);
    DiffConfig config;
    config.gates = "total.cpu.mean=5%,preprocess.resize.cpu.p50=10%";
    const DiffResult r = diff_runs(base, now, config);
    const DiffRow& resize = row_of(r, "preprocess.resize", "cpu", "p50");
    REQUIRE(resize.change.interval);
    CHECK(resize.verdict == Verdict::regression);
    CHECK(row_of(r, "total", "cpu", "mean").verdict == Verdict::ok);
    CHECK(r.exit_code() == 1);
    // Ungated, an op's rows carry no interval (each would cost a bootstrap), and "*" leaves them alone.
    config.gates = "cpu.mean=5%";
    const DiffResult star = diff_runs(base, now, config);
    CHECK_FALSE(row_of(star, "preprocess.resize", "cpu", "mean").change.interval);
    CHECK(row_of(star, "preprocess.resize", "cpu", "mean").verdict == Verdict::none);

    config.gates = "preprocess.tokenize.mean=5%";
    CHECK_THROWS_WITH(
        diff_runs(base, now, config),
        doctest::Contains("not every run has preprocess.tokenize (they have preprocess.decode, preprocess.resize)"));
  }

  TEST_CASE("gates on cpu or wall time") {
    auto g = parse_gates("total.cpu.p50=5%,cpu.mean=3%,total.wall.p99=10%,total.mean=5%,compute.cpu.p99=8%");
    REQUIRE(g.size() == 5);
    CHECK((g[0].stage == "total" && g[0].clock == "cpu" && g[0].metric == "p50"));
    CHECK((g[1].stage == "*" && g[1].clock == "cpu" && g[1].metric == "mean"));
    CHECK((g[2].stage == "total" && g[2].clock == "wall" && g[2].metric == "p99"));
    CHECK((g[3].stage == "total" && g[3].clock == "wall" && g[3].metric == "mean"));
    CHECK((g[4].stage == "compute" && g[4].clock == "cpu"));
    CHECK_THROWS_WITH(parse_gates("total.cpu.p90=5%"),
                      doctest::Contains("cpu time has no p90 (expected cpu.mean, cpu.p50 or cpu.p99)"));
    CHECK_THROWS_WITH(parse_gates("queue.cpu.mean=5%"), doctest::Contains("queue is waiting, it has no cpu time"));
    CHECK_THROWS_WITH(parse_gates("total.gpu.mean=5%"),
                      doctest::Contains("unknown clock 'gpu' (expected cpu or wall)"));
    CHECK_THROWS_WITH(parse_gates("total.mean=5%,total.wall.mean=9%"),
                      doctest::Contains("a second gate for the same metric (first: 'total.mean=5%')"));
    CHECK_THROWS_WITH(parse_gates("cpu.throughput=5%"), doctest::Contains("throughput belongs to the whole run"));
    CHECK_NOTHROW(parse_gates("total.mean=5%,total.cpu.mean=5%"));
  }

  TEST_CASE("runs without cpu time: the defaults gate on wall time, a cpu gate is refused") {
    std::vector<RunData> base = {run_of(spread_values(100, 1000, 50, 1))},
                         now = {run_of(spread_values(100, 1000, 50, 2))};
    DiffResult r = diff_runs(base, now, DiffConfig{});
    CHECK(r.gates[0].clock == "wall");
    CHECK(r.gated == 2);
    bool noted = false;
    for (const auto& n : r.notes)
      noted = noted || n.find("default gates on wall time (total.p99=10%,total.mean=5%)") == 0;
    CHECK(noted);
    DiffConfig cpu;
    cpu.gates = "total.cpu.mean=5%";
    CHECK_THROWS_WITH(diff_runs(base, now, cpu),
                      "run/summary.json: no thread CPU time recorded (a summary.json from before inferprof measured "
                      "it), so cpu gates cannot apply; gate on wall time instead, e.g. --max-regression "
                      "total.p99=10%,total.mean=5%");
  }

  TEST_CASE("runs of different models on one side are refused, naming the pair") {
    auto base = side({0.0}, 1000, 1);
    auto other = side({0.0}, 1000, 2, 1.0, "xxh3:00000000000000ff");
    base.push_back(other[0]);
    try {
      diff_runs(base, side({0.0}, 1000, 3), DiffConfig{});
      FAIL("mixed models were accepted");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::bad_input);
      CHECK(std::string(e.what()) ==
            "run1/summary.json and run2/summary.json are not comparable: models differ: base 1 "
            "xxh3:00000000000000aa vs base 2 xxh3:00000000000000ff (--force compares them anyway)");
    }
  }

  TEST_CASE("load_run: thread CPU time from summary.json and requests.csv") {
    TempDir dir;
    RunSummary s;
    s.requests = 2;
    s.throughput_rps = 10;
    StageStats& compute = s.stages[static_cast<std::size_t>(Stage::compute)];
    compute.count = 2;
    compute.mean_us = 10.5;
    compute.cpu = true;
    compute.cpu_mean_us = 9;
    compute.cpu_p50_us = 8.5;
    compute.cpu_p99_us = 9.5;
    s.total.count = 2;
    s.total.mean_us = 20.75;
    s.total.cpu = true;
    s.total.cpu_mean_us = 15;
    s.total.cpu_p50_us = 14;
    s.total.cpu_p99_us = 16;
    const std::string header =
        "seq,id,line,key,worker,arrival_us,start_us,total_us,queue_us,cache_us,load_us,input_us,preprocess_us,h2d_us,"
        "compute_us,d2h_us,overhead_us,cache,ok,error,model_version,cpu_us,cache_cpu_us,load_cpu_us,input_cpu_us,"
        "preprocess_cpu_us,h2d_cpu_us,compute_cpu_us,d2h_cpu_us,overhead_cpu_us\n";
    std::ofstream(dir.file("summary.json")) << render_summary_json(s);
    std::ofstream(dir.file("requests.csv"))
        << header << "0,1,1,k,0,0,0,20,0,0,0,1,2,,10,,7,none,true,,v1,15,0,0,1,2,,9,,3\n"
        << "1,2,2,k,0,1,1,21.5,0,0,0,1,2,,11,,7.5,none,true,,v1,16,0,0,1,2,,10,,3\n";
    RunData r = load_run(dir.path().string());
    CHECK_FALSE(r.speed_before.measured());  // none in the summary
    s.info.speed_before = SpeedProbe{300.5, 700.25};
    s.info.speed_after = SpeedProbe{310, 720};
    std::ofstream(dir.file("summary.json")) << render_summary_json(s);
    r = load_run(dir.path().string());
    CHECK(r.speed_before.compute_us == 300.5);
    CHECK(r.speed_before.memory_us == doctest::Approx(700.25).epsilon(0.001));
    CHECK(r.speed_after.compute_us == 310);
    CHECK(r.speed_after.memory_us == 720);
    CHECK(r.stages[kStageCount].cpu);
    CHECK(r.stages[kStageCount].cpu_p50_us == 14);
    CHECK(r.stages[static_cast<std::size_t>(Stage::compute)].cpu_p99_us == 9.5);
    CHECK_FALSE(r.stages[static_cast<std::size_t>(Stage::queue)].cpu);
    CHECK(r.per_request_cpu[kStageCount] == std::vector<double>{15, 16});
    CHECK(r.per_request_cpu[static_cast<std::size_t>(Stage::compute)] == std::vector<double>{9, 10});
    // CPU sampling: a row whose CPU clock was not read (empty cells) is left out of the CPU times only.
    std::ofstream(dir.file("requests.csv"))
        << header << "0,1,1,k,0,0,0,20,0,0,0,1,2,,10,,7,none,true,,v1,15,0,0,1,2,,9,,3\n"
        << "1,2,2,k,0,1,1,21.5,0,0,0,1,2,,11,,7.5,none,true,,v1,,,,,,,,,\n";
    r = load_run(dir.path().string());
    CHECK(r.per_request_cpu[kStageCount] == std::vector<double>{15});
    CHECK(r.per_request_cpu[static_cast<std::size_t>(Stage::compute)] == std::vector<double>{9});
    CHECK(r.per_request[kStageCount] == std::vector<double>{20, 21.5});
    // No row read it: no per-request CPU times at all.
    std::ofstream(dir.file("requests.csv")) << header << "0,1,1,k,0,0,0,20,0,0,0,1,2,,10,,7,none,true,,v1,,,,,,,,,\n"
                                            << "1,2,2,k,0,1,1,21.5,0,0,0,1,2,,11,,7.5,none,true,,v1,,,,,,,,,\n";
    r = load_run(dir.path().string());
    CHECK(r.per_request_cpu[kStageCount].empty());
    std::ofstream(dir.file("requests.csv"))
        << header << "0,1,1,k,0,0,0,20,0,0,0,1,2,,10,,7,none,true,,v1,x,0,0,1,2,,9,,3\n";
    CHECK_THROWS_WITH(
        load_run(dir.path().string()),
        (dir.file("requests.csv") + ":2: 'x' in column 'cpu_us' is not a number of µs from 0 to 1e12 (about 11.6 days)")
            .c_str());
  }
}

TEST_SUITE("diff verdicts a CI gate can act on") {
  TEST_CASE("an interval wholly past the gate is a REGRESSION however much the runs of a side disagree") {
    // Five new runs from +8% to +50% against a steady base: the runs disagree
    // by far more than the 10% gate, and the lowest new run is within 10% of
    // the highest base run (so the sides' ranges are not apart: this read
    // "unstable" before), yet the interval over runs lies wholly past the gate.
    DiffConfig config;
    config.gates = "total.mean=10%";
    DiffResult r = diff_runs(side({0.0, 0.01, -0.01, 0.005, -0.005}, 1000, 70),
                             side({0.08, 0.35, 0.40, 0.45, 0.50}, 1000, 80), config);
    const DiffRow& row = row_of(r, "total", "wall", "mean");
    REQUIRE(row.change.interval);
    CHECK(row.change.interval->first > row.limit);  // the interval lies past the gate
    REQUIRE(row.new_spread);
    CHECK(*row.new_spread > 0.2);  // the new side disagrees with itself by more than the gate
    CHECK(row.verdict == Verdict::regression);
    CHECK(r.exit_code() == 1);
  }

  TEST_CASE("a change whose interval straddles the gate says how many runs per side would settle it") {
    // Runs 0%, +4% and +8% against 0%, +1%, -1%: the change (+3.3%) is past a
    // 2% gate, its interval is not wholly past it, and the runs disagree.
    DiffConfig config;
    config.gates = "total.mean=2%";
    DiffResult r = diff_runs(side({0.0, 0.01, -0.01}, 1000, 90), side({0.0, 0.04, 0.08}, 1000, 95), config);
    const DiffRow& row = row_of(r, "total", "wall", "mean");
    CHECK(row.verdict == Verdict::unstable);
    CAPTURE(row.note);
    CHECK(row.note.find("runs per side would settle it (3 now)") != std::string::npos);
    // One run per side: no spread between runs to size them from.
    DiffResult one = diff_runs(side({0.0}, 1000, 90), side({0.03}, 1000, 95), config);
    const DiffRow& single = row_of(one, "total", "wall", "mean");
    if (single.verdict == Verdict::noise || single.verdict == Verdict::unstable)
      CHECK(single.note.find("give 3 or more runs per side") != std::string::npos);
  }
}

TEST_SUITE("diff with few runs per side") {
  TEST_CASE("student_t_quantile: known answers, fractional df, symmetry") {
    CHECK(student_t_quantile(0.975, 4) == doctest::Approx(2.776445).epsilon(1e-6));
    CHECK(student_t_quantile(0.975, 1) == doctest::Approx(12.706205).epsilon(1e-6));
    CHECK(student_t_quantile(0.995, 10) == doctest::Approx(3.169273).epsilon(1e-6));
    CHECK(student_t_quantile(0.975, 1e6) == doctest::Approx(1.959966).epsilon(1e-5));
    // Welch's df is fractional: 3.5747 by an independent integration of the density.
    CHECK(student_t_quantile(0.975, 2.5) == doctest::Approx(3.5747).epsilon(1e-4));
    CHECK(student_t_quantile(0.025, 4) == doctest::Approx(-2.776445).epsilon(1e-6));
    CHECK(student_t_quantile(0.5, 3) == 0);
    // Agrees with the table compare uses, over the whole table.
    for (std::size_t df = 1; df <= 40; ++df)
      CHECK(student_t_quantile(0.975, static_cast<double>(df)) ==
            doctest::Approx(student_t_975(df)).epsilon(df <= 29 ? 2e-4 : 1e-3));
  }

  TEST_CASE("run_level_intervals: Welch over the runs' figures, with a known answer") {
    // Every request of a run takes the run's value. Base 100, 100, 100; new
    // 90, 100, 110: on the log scale the new side's SD is 0.1000 over 3 runs,
    // the base's 0, so Welch's df is 2 (t 4.3027) and the relative interval
    // is exp(mean log ± t·SD/√3) / 100 - 1 = [-22.33%, +27.89%].
    std::vector<std::vector<double>> base(3, std::vector<double>(100, 100.0));
    std::vector<std::vector<double>> now = {std::vector<double>(100, 90.0), std::vector<double>(100, 100.0),
                                            std::vector<double>(100, 110.0)};
    auto ci = run_level_intervals(base, now, 0.95);
    REQUIRE(ci);
    for (std::size_t m = 0; m < 4; ++m) {
      INFO("metric " << m);
      CHECK(ci->relative[m].first == doctest::Approx(-0.223300).epsilon(1e-4));
      CHECK(ci->relative[m].second == doctest::Approx(0.278901).epsilon(1e-4));
      // In µs: 0 ± 4.3027 · 10 / √3.
      CHECK(ci->mean_p50_p90_p99[m].first == doctest::Approx(-24.8414).epsilon(1e-4));
    }
    // Where the bootstrap over three runs never reaches beyond ±10%.
    auto boot = hierarchical_intervals(base, now, 0.95);
    CHECK(boot.relative[0].first >= -0.10 - 1e-12);
    // One base run: it takes the new side's variance between runs, so the
    // standard error is √(v/3 + v/1) with 2 df: [-39.47%, +64.11%].
    auto single = run_level_intervals({base[0]}, now, 0.95);
    REQUIRE(single);
    CHECK(single->relative[0].first == doctest::Approx(-0.394713).epsilon(1e-4));
    CHECK(single->relative[0].second == doctest::Approx(0.641076).epsilon(1e-4));
    // One run a side: nothing between runs to see.
    CHECK_FALSE(run_level_intervals({base[0]}, {now[0]}, 0.95));
  }

  // The bench of 2026-12-03 (5 v 5 runs of identical code, base runs first)
  // read REGRESSION in 2 of 10: the bootstrap over five runs a side
  // understated the spread between them. Here five new runs at +4% to +14%
  // (mean +9%, SD 4.5%) against a steady base: the bootstrap alone clears a
  // 5% gate; with Welch's t over the runs the interval reaches back over it.
  TEST_CASE("five runs a side spread between runs: unstable, not the bootstrap's REGRESSION") {
    DiffConfig config;
    config.gates = "total.mean=5%";
    auto base = side({0.0, 0.002, -0.002, 0.001, -0.001}, 1000, 110);
    auto now = side({0.14, 0.04, 0.12, 0.05, 0.10}, 1000, 120);
    auto boot = hierarchical_intervals(totals(base), totals(now), 0.95);
    CHECK(boot.relative[0].first > 0.05);  // what the verdict read before
    DiffResult r = diff_runs(base, now, config);
    const DiffRow& row = row_of(r, "total", "wall", "mean");
    REQUIRE(row.relative);
    CHECK(row.relative->first < 0.05);
    CHECK(row.relative->first > 0.0);
    CHECK(row.verdict == Verdict::unstable);
    CHECK(r.exit_code() == kExitUnstable);
    CHECK(r.intervals_note.find("Welch") != std::string::npos);
  }
}
