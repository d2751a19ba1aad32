// End-to-end: `inferprof sweep` as a user runs it: steps of load, the stopping
// rule, the result files, and bad input that leaves nothing behind.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "cli_harness.hpp"
#include "test_util.hpp"
#include "text_util.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

struct SweepFixture {
  TempDir dir;
  std::string model = dir.file("mlp.pt");
  std::string trace = dir.file("t.jsonl");    // 200 requests at 1,000 req/s
  std::string untimed = dir.file("u.jsonl");  // no ts_ms
  SweepFixture() {
    make_model_and_trace(model, trace, {"--requests", "200", "--keys", "20", "--rate", "1000"});
    auto t = run_cli({"gen-trace", "--requests", "50", "--rate", "0", "-o", untimed});
    if (t.code != 0) throw std::runtime_error("gen-trace failed: " + t.err);
  }
};
SweepFixture& sweep_fixture() {
  static SweepFixture f;
  return f;
}

}  // namespace

TEST_SUITE("e2e sweep") {
  TEST_CASE("sweep --concurrency: one curve per configuration in sweep.json, sweep.csv and report.html") {
    auto& f = sweep_fixture();
    TempDir out;
    auto r = run_cli({"sweep", f.model, "--trace", f.trace, "--concurrency", "1:2", "--caches", "none", "--caches",
                      "l1", "--out", out.file("s"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("capacity:") != std::string::npos);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.load(out.file("s/sweep.json"));
    CHECK(std::string_view(doc["schema"]) == "inferprof.sweep/1");
    CHECK(std::string_view(doc["load"]) == "concurrency");
    simdjson::dom::array configs = doc["configurations"];
    REQUIRE(configs.size() == 2);
    std::size_t rows = 0;
    for (simdjson::dom::element c : configs) {
      simdjson::dom::array steps = c["steps"];
      CHECK(steps.size() >= 1);
      for (simdjson::dom::element s : steps) {
        ++rows;
        CHECK(std::uint64_t(s["requests"]) == 200);
        CHECK(double(s["achieved_rps"]) > 0);
        CHECK(double(s["p99"]["low_us"]) <= double(s["p99"]["value_us"]));
        CHECK(double(s["p99"]["value_us"]) <= double(s["p99"]["high_us"]));
      }
    }
    // The CSV has a header and one row per step the JSON lists.
    const std::string csv = slurp(out.path() / "s" / "sweep.csv");
    CHECK(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')) == rows + 1);
    const std::string html = slurp(out.path() / "s" / "report.html");
    CHECK(html.find("Latency against served traffic") != std::string::npos);
    CHECK(html.find("<svg") != std::string::npos);
  }

  TEST_CASE("sweep --measure-after N: each step measures the requests after the first N, offered over their span") {
    auto& f = sweep_fixture();
    auto r = run_cli({"sweep", f.model, "--trace", f.trace, "--speeds", "1", "--measure-after", "50", "--format",
                      "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.out);
    CHECK(std::uint64_t(doc["measure_after"]) == 50);
    simdjson::dom::element step = doc["configurations"].at(0)["steps"].at(0);
    CHECK(std::uint64_t(step["requests"]) == 150);
    // 150 requests over the span from the 51st arrival to the last: about 1,000 req/s, as the trace was made.
    CHECK(double(step["offered_rps"]) > 700);
    CHECK(double(step["offered_rps"]) < 1400);
    auto bad = run_cli({"sweep", f.model, "--trace", f.trace, "--speeds", "1", "--measure-after", "200"});
    CHECK(bad.code == 2);
    CHECK(bad.err.find("sweep --measure-after 200: a step replays 200 requests, so none would be measured") !=
          std::string::npos);
  }

  TEST_CASE("sweep --speeds stops a configuration at its first saturated step and runs no step after it") {
    auto& f = sweep_fixture();
    // At 10,000x the trace offers millions of requests a second: no MLP replay serves 95% of that.
    auto r = run_cli(
        {"sweep", f.model, "--trace", f.trace, "--speeds", "10000,20000,40000", "--format", "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.out);
    simdjson::dom::element c = doc["configurations"].at(0);
    CHECK(simdjson::dom::array(c["steps"]).size() == 1);
    CHECK(bool(c["steps"].at(0)["saturated"]));
    CHECK(std::string_view(c["stopped"]).find("saturated at 10000×") != std::string_view::npos);
    CHECK(double(c["steps"].at(0)["offered_rps"]) > 1e6);
  }

  TEST_CASE("sweep --refine bisects between the last step served in full and the first saturated, in load order") {
    auto& f = sweep_fixture();
    auto r = run_cli({"sweep", f.model, "--trace", f.trace, "--speeds", "0.5,20000", "--refine", "2", "--format",
                      "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.out);
    simdjson::dom::array steps = doc["configurations"].at(0)["steps"];
    // 0.5x is served in full; 20,000x is not, nor is 10,000.25x: the second round halves again.
    REQUIRE(steps.size() == 4);
    std::vector<double> loads;
    for (simdjson::dom::element s : steps)
      loads.push_back(double(s["load"]));
    CHECK(loads == std::vector<double>{0.5, 5000.375, 10000.25, 20000});
    CHECK_FALSE(bool(steps.at(0)["refined"]));
    CHECK(bool(steps.at(1)["refined"]));
    CHECK(bool(steps.at(2)["refined"]));
    auto bad = run_cli({"sweep", f.model, "--trace", f.trace, "--concurrency", "1:2", "--refine", "1"});
    CHECK(bad.code == 2);
    CHECK(bad.err.find("--refine bisects between offered loads") != std::string::npos);
  }

  TEST_CASE("sweep --slo-ms: a step past the objective ends the curve, and the table says no step met it") {
    auto& f = sweep_fixture();
    auto r = run_cli(
        {"sweep", f.model, "--trace", f.trace, "--concurrency", "1:3", "--slo-ms", "0.000001", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("no step met p99 ≤ 1e-06 ms") != std::string::npos);
    CHECK(r.out.find("past the 1e-06 ms objective at concurrency 1") != std::string::npos);
    CHECK(r.out.find("past SLO") != std::string::npos);
  }

  TEST_CASE("sweep --tries: a step past the objective is replayed until most tries are past it, and says so") {
    auto& f = sweep_fixture();
    TempDir out;
    // Every try is past an objective of 1 ns: the second try makes two of
    // three, so the third is not run and the curve ends at the first step.
    auto r = run_cli({"sweep", f.model, "--trace", f.trace, "--speeds", "0.5,1", "--slo-ms", "0.000001", "--out",
                      out.file("s"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("past SLO (2 tries)") != std::string::npos);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.load(out.file("s/sweep.json"));
    simdjson::dom::element c = doc["configurations"].at(0);
    REQUIRE(simdjson::dom::array(c["steps"]).size() == 1);
    simdjson::dom::array tries = c["steps"].at(0)["tries_p99_us"];
    REQUIRE(tries.size() == 2);
    // The step shown is the lower of the two tries.
    const double shown = double(c["steps"].at(0)["p99"]["value_us"]);
    CHECK(shown == doctest::Approx(std::min(double(tries.at(0)), double(tries.at(1)))).epsilon(1e-3));
    const std::string csv = slurp(out.path() / "s" / "sweep.csv");
    CHECK(csv.substr(0, csv.find('\n')).find(",tries") != std::string::npos);
    // The step's row: 2 tries, then its service pace.
    const std::string row = lines_of(csv).at(1);
    const std::string before_pace = row.substr(0, row.rfind(','));
    CHECK(before_pace.substr(before_pace.rfind(',')) == ",2");
    // --tries 1: the first try decides, as before.
    auto once = run_cli({"sweep", f.model, "--trace", f.trace, "--speeds", "0.5,1", "--slo-ms", "0.000001", "--tries",
                         "1", "--format", "json", "--no-progress"});
    REQUIRE_MESSAGE(once.code == 0, once.err);
    CHECK(once.out.find("tries_p99_us") == std::string::npos);
    // An even count has no median try.
    auto even = run_cli(
        {"sweep", f.model, "--trace", f.trace, "--speeds", "0.5,1", "--slo-ms", "1", "--tries", "2", "--no-progress"});
    CHECK(even.code == 2);
    CHECK(even.err.find("--tries 2: expected an odd number") != std::string::npos);
  }

  TEST_CASE(
      "sweep --speeds --slo-ms: the queueing model's p99 beside each step's, rising with the load, and its "
      "capacity") {
    auto& f = sweep_fixture();
    TempDir out;
    auto r = run_cli({"sweep", f.model, "--trace", f.trace, "--speeds", "0.25,0.5,1", "--slo-ms", "1000", "--out",
                      out.file("s"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("p99 model") != std::string::npos);
    CHECK(r.out.find(" pace ") != std::string::npos);
    CHECK(r.out.find("; queueing model: ") != std::string::npos);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.load(out.file("s/sweep.json"));
    simdjson::dom::element c = doc["configurations"].at(0);
    CHECK(bool(c["queueing_model"]["capacity_found"]));
    // The MLP serves in well under a millisecond: 1 s is met at 1.25x the heaviest step, so "at least".
    CHECK(bool(c["queueing_model"]["capacity_at_least"]));
    CHECK(double(c["queueing_model"]["capacity_rps"]) > double(c["steps"].at(2)["offered_rps"]));
    double before = 0, paces = 0;
    for (simdjson::dom::element s : simdjson::dom::array(c["steps"])) {
      // The same service times at a heavier load can only wait longer.
      const double p99 = double(s["model_p99_us"]);
      CHECK(p99 > 0);
      CHECK(p99 >= before);
      before = p99;
      paces += double(s["service_pace"]);
    }
    // Three steps, no tries: the model serves at their mean pace, 1.
    CHECK(paces / 3 == doctest::Approx(1.0).epsilon(1e-3));
    const std::string csv = slurp(out.path() / "s" / "sweep.csv");
    CHECK(csv.substr(0, csv.find('\n')).find(",model_p99_us") != std::string::npos);
    // Closed-loop steps have no open-loop queue to model.
    auto closed = run_cli({"sweep", f.model, "--trace", f.trace, "--concurrency", "1", "--slo-ms", "1000", "--format",
                           "json", "--no-progress"});
    REQUIRE_MESSAGE(closed.code == 0, closed.err);
    CHECK(closed.out.find("queueing_model") == std::string::npos);
    CHECK(closed.out.find("model_p99_us") == std::string::npos);
  }

  TEST_CASE("sweep --service-times: every replay's service times, whose totals give each step's pace") {
    auto& f = sweep_fixture();
    TempDir out;
    auto r = run_cli({"sweep", f.model, "--trace", f.trace, "--speeds", "0.25,0.5,1", "--caches", "none", "--caches",
                      "l1", "--slo-ms", "1000", "--out", out.file("s"), "--service-times", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("report.html service_times.csv") != std::string::npos);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.load(out.file("s/sweep.json"));
    const std::vector<std::string> rows = lines_of(slurp(out.path() / "s" / "service_times.csv"));
    REQUIRE(!rows.empty());
    CHECK(rows[0] == "caches,replay,load,request,unit_arrival_us,service_us,measured");
    // Per configuration and replay: its total service; every row's load is one of the steps'.
    std::map<std::string, std::map<int, double>> totals;
    std::size_t data_rows = 0;
    for (std::size_t k = 1; k < rows.size(); ++k) {
      std::vector<std::string> cells;
      std::stringstream row(rows[k]);
      for (std::string cell; std::getline(row, cell, ',');)
        cells.push_back(cell);
      REQUIRE(cells.size() == 7);
      const double load = std::stod(cells[2]), service = std::stod(cells[5]);
      CHECK((load == 0.25 || load == 0.5 || load == 1));
      CHECK(service > 0);
      totals[cells[0]][std::stoi(cells[1])] += service;
      ++data_rows;
    }
    // Three steps a configuration (1 s is met at each: no tries), 200 requests each.
    CHECK(data_rows == 2 * 3 * 200);
    for (simdjson::dom::element c : simdjson::dom::array(doc["configurations"])) {
      const std::map<int, double>& replays = totals[std::string(std::string_view(c["name"]))];
      REQUIRE(replays.size() == 3);
      double mean = 0;
      for (const auto& [replay, total] : replays)
        mean += total / 3;
      // A step's pace is its replay's total over the replays' mean.
      int step = 0;
      for (simdjson::dom::element s : simdjson::dom::array(c["steps"]))
        CHECK(double(s["service_pace"]) == doctest::Approx(replays.at(step++) / mean).epsilon(1e-3));
    }
    // Without --out there is nowhere to write it: refused before any replay.
    auto bare = run_cli({"sweep", f.model, "--trace", f.trace, "--speeds", "1", "--service-times", "--no-progress"});
    CHECK(bare.code == 2);
    CHECK(bare.err.find("--service-times") != std::string::npos);
    CHECK(bare.err.find("needs --out") != std::string::npos);
  }

  TEST_CASE("sweep --workers 1,2: a curve per number of workers, each named, with its workers and queueing model") {
    auto& f = sweep_fixture();
    TempDir out;
    auto r = run_cli({"sweep", f.model, "--trace", f.trace, "--speeds", "0.25,0.5", "--workers", "1,2", "--caches",
                      "none", "--caches", "l1", "--slo-ms", "1000", "--out", out.file("s"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.load(out.file("s/sweep.json"));
    const std::vector<std::pair<std::string, std::int64_t>> expected{
        {"none · 1 worker", 1}, {"none · 2 workers", 2}, {"l1 · 1 worker", 1}, {"l1 · 2 workers", 2}};
    simdjson::dom::array configurations = doc["configurations"];
    REQUIRE(configurations.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      simdjson::dom::element c = configurations.at(i);
      CHECK(std::string(std::string_view(c["name"])) == expected[i].first);
      CHECK(std::int64_t(c["workers"]) == expected[i].second);
      CHECK(bool(c["queueing_model"]["capacity_found"]));
      CHECK(simdjson::dom::array(c["steps"]).size() == 2);
      CHECK(r.out.find(expected[i].first) != std::string::npos);
    }
    // sweep.csv: a row per configuration and step, its workers, batch size, tries
    // and service pace last (a modelled step's pace is a positive number).
    const std::vector<std::string> rows = lines_of(slurp(out.path() / "s" / "sweep.csv"));
    REQUIRE(rows.size() == 1 + 4 * 2);
    const std::string tail = ",workers,max_batch,tries,service_pace";
    CHECK(rows[0].substr(rows[0].size() - tail.size()) == tail);
    const auto before_pace = [](const std::string& row) { return row.substr(0, row.rfind(',')); };
    CHECK(before_pace(rows[1]).substr(before_pace(rows[1]).size() - 6) == ",1,1,1");
    CHECK(before_pace(rows[3]).substr(before_pace(rows[3]).size() - 6) == ",2,1,1");
    CHECK(std::stod(rows[1].substr(rows[1].rfind(',') + 1)) > 0);
    CHECK(double(configurations.at(0)["steps"].at(0)["service_pace"]) > 0);
  }

  TEST_CASE("sweep --rates: Poisson steps need no ts_ms, offer their rate, and run --rate releases requests at it") {
    auto& f = sweep_fixture();
    TempDir out;
    auto r = run_cli({"sweep", f.model, "--trace", f.untimed, "--rates", "100,200", "--caches", "none", "--out",
                      out.file("s"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("100/s") != std::string::npos);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.load(out.file("s/sweep.json"));
    CHECK(std::string_view(doc["load"]) == "rate");
    simdjson::dom::array steps = doc["configurations"].at(0)["steps"];
    REQUIRE(steps.size() >= 1);
    CHECK(double(steps.at(0)["offered_rps"]) == 100);
    CHECK(std::uint64_t(steps.at(0)["requests"]) == 50);

    // One replay at a rate: its summary says so, and requests.csv's arrivals are the Poisson clock's.
    r = run_cli({"run", f.model, "--trace", f.untimed, "--open-loop", "--rate", "400", "--warmup", "0", "--out",
                 out.file("r"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("Poisson arrivals at 400 req/s") != std::string::npos);
    simdjson::dom::element summary = parser.load(out.file("r/summary.json"));
    CHECK(double(summary["run"]["poisson_rps"]) == 400);
    // arrival_us is the sixth column, after seq, id, line, key (gen-trace's keys hold no comma) and worker.
    std::istringstream csv(slurp(out.path() / "r" / "requests.csv"));
    std::string line;
    std::getline(csv, line);
    REQUIRE(line.rfind("seq,id,line,key,worker,arrival_us,", 0) == 0);
    int rows = 0;
    double last = 0;
    while (std::getline(csv, line)) {
      std::istringstream cells(line);
      std::string cell;
      for (int i = 0; i < 6; ++i)
        std::getline(cells, cell, ',');
      last = std::max(last, std::stod(cell));
      ++rows;
    }
    CHECK(rows == 50);
    // 49 gaps of mean 2.5 ms: well within 1.2 s in all, and not all at once.
    CHECK(last > 40'000);
    CHECK(last < 1'200'000);
  }

  TEST_CASE("sweep --model A --model B, or --profile P --profile Q: each one's curve beside the other's") {
    auto& f = sweep_fixture();
    TempDir dir;
    const std::string second = dir.file("second.pt");
    auto g = run_cli({"gen-model", "--arch", "mlp", "--seed", "2", "-o", second});
    REQUIRE_MESSAGE(g.code == 0, g.err);
    auto r = run_cli({"sweep", "--model", f.model, "--model", second, "--trace", f.trace, "--concurrency", "1",
                      "--limit", "40", "--format", "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.out);
    simdjson::dom::array configs = doc["configurations"];
    REQUIRE(configs.size() == 2);
    CHECK(std::string_view(configs.at(0)["name"]) == "mlp.pt");
    CHECK(std::string_view(configs.at(0)["model"]) == f.model);
    CHECK(std::string_view(configs.at(1)["name"]) == "second.pt");
    CHECK(std::string_view(configs.at(1)["model"]) == second);
    for (simdjson::dom::element c : configs)
      CHECK(std::uint64_t(c["steps"].at(0)["requests"]) == 40);

    // Two profiles, each with two cache configurations: four curves, named profile · caches.
    for (const char* name : {"one", "two"})
      std::ofstream(dir.file(std::string(name) + ".toml"))
          << "name = \"" << name << "\"\n[[preprocess]]\nop = \"to_float\"\n";
    r = run_cli({"sweep", f.model, "--trace", f.trace, "--concurrency", "1", "--limit", "20", "--profile",
                 dir.file("one.toml"), "--profile", dir.file("two.toml"), "--caches", "none", "--caches", "l1",
                 "--format", "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::element by_profile = parser.parse(r.out);
    simdjson::dom::array four = by_profile["configurations"];
    REQUIRE(four.size() == 4);
    CHECK(std::string_view(four.at(0)["name"]) == "one · none");
    CHECK(std::string_view(four.at(3)["name"]) == "two · l1");
    CHECK(std::string_view(four.at(3)["profile"]) == "two");

    r = run_cli({"sweep", "--model", f.model, "--model", second, "--trace", f.trace, "--concurrency", "1", "--profile",
                 dir.file("one.toml"), "--profile", dir.file("two.toml"), "--no-progress"});
    CHECK(r.code == 2);
    CHECK(r.err.find("sweep varies the model or the profile, not both: 2 models and 2 profiles given") !=
          std::string::npos);
  }

  TEST_CASE("sweep: bad input is one line naming what was expected, exit 2, nothing in --out") {
    auto& f = sweep_fixture();
    TempDir out;
    struct Case {
      std::vector<std::string> extra;
      std::string says;
    };
    const Case cases[] = {
        {{"--trace", f.untimed, "--speeds", "1,2"}, f.untimed + ":1: a speed sweep replays the trace's arrivals"},
        {{"--trace", f.trace, "--speeds", "1,2", "--concurrency", "1:2"}, "sweep needs one kind of step"},
        {{"--trace", f.trace, "--speeds", "1,2", "--rates", "10,20"}, "sweep needs one kind of step"},
        {{"--trace", f.trace, "--rates", "10", "--rate", "5"}, "leave out --open-loop, --speed and --rate"},
        {{"--trace", f.trace, "--speeds", "4:1"}, "--speeds 4:1: expected FROM <= TO"},
        {{"--trace", f.trace, "--speeds", "2,1"}, "the steps must rise: 1 after 2"},
        {{"--trace", f.trace, "--concurrency", "1.5,2"}, "1.5 is not a whole number of workers"},
        {{"--trace", f.trace, "--speeds", "1,x"}, "'x' is not a number"},
        {{"--trace", f.trace, "--speeds", "1,,2"}, "'' is not a number"},
        {{"--trace", f.trace, "--speeds", "1:2:3:4"}, "--speeds 1:2:3:4: expected FROM:TO:STEP"},
        {{"--trace", f.trace, "--speeds", "1", "--caches", "l9"}, "l9"},
        {{"--trace", f.trace, "--concurrency", "1:2", "--workers", "2"}, "leave out --workers"},
        {{"--trace", f.trace, "--speeds", "1", "--workers", "1,0"},
         "--workers 1,0: expected numbers of workers from 1"},
        {{"--trace", f.trace, "--speeds", "1", "--workers", "2.5"}, "--workers 2.5: expected numbers of workers"},
    };
    for (const Case& c : cases) {
      std::vector<std::string> args{"sweep", f.model, "--out", out.file("s"), "--no-progress"};
      args.insert(args.end(), c.extra.begin(), c.extra.end());
      auto r = run_cli(args);
      CAPTURE(c.says);
      CHECK(r.code == 2);
      CHECK(r.err.find(c.says) != std::string::npos);
      CHECK(dir_is_empty_or_missing(out.path() / "s"));
    }
  }
}
