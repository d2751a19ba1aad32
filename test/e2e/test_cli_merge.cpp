// merge and run --replicas' merged report: statistics over every replica's
// requests, checked against the union of their requests.csv files.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_harness.hpp"
#include "temp_dir.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

// total_us of every row of a requests.csv (read here, not with inferprof's reader).
std::vector<double> totals_of(const std::string& csv) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::size_t at = 0;;) {
    const std::size_t comma = line.find(',', at);
    header.push_back(line.substr(at, comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  const auto col = static_cast<std::size_t>(std::find(header.begin(), header.end(), "total_us") - header.begin());
  REQUIRE(col < header.size());
  std::vector<double> out;
  while (std::getline(in, line)) {
    std::size_t at = 0;
    for (std::size_t i = 0; i < col; ++i)
      at = line.find(',', at) + 1;  // the columns before total_us hold no comma (keys are "kN")
    out.push_back(std::stod(line.substr(at, line.find(',', at) - at)));
  }
  return out;
}

// Nearest-rank quantile.
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::max(1.0, std::ceil(q * static_cast<double>(v.size()))));
  return v[rank - 1];
}

struct MergeFixture {
  TempDir dir;
  std::string model = dir.file("m.pt"), trace = dir.file("t.jsonl"), run = dir.file("r");
  MergeFixture() {
    make_model_and_trace(model, trace, {"--requests", "600", "--keys", "50"});
    auto r = run_cli({"run", model, "--trace", trace, "--replicas", "3", "--warmup", "1", "--out", run});
    if (r.code != 0) throw std::runtime_error("run --replicas failed: " + r.err);
  }
  std::string replica(int k) const { return fmt::format("{}/replica-{}", run, k); }
};

MergeFixture& merge_fixture() {
  static MergeFixture f;
  return f;
}

}  // namespace

TEST_SUITE("e2e merge") {
  TEST_CASE("run --replicas writes one report over every replica's requests: its percentiles are the union's") {
    auto& f = merge_fixture();
    simdjson::dom::parser parser;
    auto s = parser.load(f.run + "/summary.json");
    std::vector<double> all;
    for (int k = 0; k < 3; ++k) {
      const std::vector<double> t = totals_of(f.replica(k) + "/requests.csv");
      CHECK(t.size() == 200);  // round-robin
      all.insert(all.end(), t.begin(), t.end());
    }
    CHECK(json_number(s["requests"]) == 600);
    CHECK(std::string_view(s["run"]["command"]) == "merge");
    CHECK(json_number(s["run"]["merged_from"]) == 3);
    CHECK(json_number(s["run"]["concurrency"]) == 3);
    // Under 1,024 requests the histogram keeps every value: the quantiles are exact (to the file's 3 decimals).
    for (auto [name, q] : {std::pair{"p50_us", 0.5}, std::pair{"p90_us", 0.9}, std::pair{"p99_us", 0.99}})
      CHECK(json_number(s["total"][name]) == doctest::Approx(quantile(all, q)).epsilon(1e-6));
    CHECK(json_number(s["total"]["max_us"]) == doctest::Approx(*std::max_element(all.begin(), all.end())));
    // The merged requests.csv holds every request once.
    CHECK(totals_of(f.run + "/requests.csv").size() == 600);
    auto reps = parser.load(f.run + "/replicas.json");
    CHECK(json_number(reps["requests"]) == 600);
    CHECK(json_number(reps["failed"]) == 0);
  }

  TEST_CASE("merge of the replicas' folders gives the report run --replicas wrote") {
    auto& f = merge_fixture();
    TempDir out;
    auto r = run_cli({"merge", f.replica(2), f.replica(0), f.replica(1), "--out", out.file("m")});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("inferprof merge") != std::string::npos);
    CHECK(r.out.find("3 replicas merged") != std::string::npos);
    CHECK(slurp(out.file("m") + "/stages.csv") == slurp(f.run + "/stages.csv"));
    simdjson::dom::parser p1, p2;
    auto a = p1.load(out.file("m") + "/summary.json");
    auto b = p2.load(f.run + "/summary.json");
    CHECK(json_number(a["total"]["p99_us"]) == json_number(b["total"]["p99_us"]));
    CHECK(json_number(a["throughput_rps"]) == doctest::Approx(json_number(b["throughput_rps"])));
    // The merged run is a run: diff reads it.
    auto d = run_cli({"diff", f.run, out.file("m")});
    CHECK_MESSAGE(d.code == 0, std::string(d.out + d.err));
  }

  TEST_CASE("a replica without a folder is reported as failed, the others are merged, exit 3") {
    auto& f = merge_fixture();
    TempDir out;
    auto r = run_cli({"merge", f.replica(0), f.replica(2), "--out", out.file("m")});
    CHECK(r.code == 3);
    CHECK(r.err.find("1 of 3 replicas failed or left no report") != std::string::npos);
    simdjson::dom::parser parser;
    auto reps = parser.load(out.file("m") + "/replicas.json");
    CHECK(std::string_view(reps["replicas"].at(1)["status"]) == "no report");
    CHECK(json_number(reps["failed"]) == 1);
    auto s = parser.load(out.file("m") + "/summary.json");
    CHECK(json_number(s["requests"]) == 400);
    CHECK(std::string(s["run"]["warnings"].at(0)).find("1 of 3 replicas") != std::string::npos);
  }

  TEST_CASE("merge refuses what is not one run's replicas, with one line, and writes nothing") {
    auto& f = merge_fixture();
    TempDir out;
    const std::string o = out.file("m");
    auto none = run_cli({"merge", out.path(), "--out", o});
    CHECK(none.code == 2);
    CHECK(count_lines(none.err) == 1);
    CHECK(none.err.find("summary.json") != std::string::npos);
    auto twice = run_cli({"merge", f.replica(0), f.replica(0), "--out", o});
    CHECK(twice.code == 2);
    CHECK(twice.err.find("replica 0 is also") != std::string::npos);
    // Another model's run.
    const std::string other = out.file("other.pt");
    REQUIRE(run_cli({"gen-model", "--arch", "mlp", "--seed", "7", "-o", other}).code == 0);
    REQUIRE(run_cli({"run", other, "--trace", f.trace, "--limit", "20", "--out", out.file("o")}).code == 0);
    auto mixed = run_cli({"merge", f.replica(0), out.file("o"), "--out", o});
    CHECK(mixed.code == 2);
    CHECK(mixed.err.find("differs from") != std::string::npos);
    CHECK(!fs::exists(o));
  }
}
