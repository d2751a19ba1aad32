// End-to-end: --skip-invalid also covers requests whose input proves bad only
// when served (here a .npy file that is not there): counted, named, left out
// of every report and, in lockstep compare, of every configuration alike.
#include <doctest/doctest.h>
#include <simdjson.h>

#include "cli_harness.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

struct SkipFixture {
  TempDir dir;
  std::string model = dir.file("mlp.pt");
  std::string trace;
  SkipFixture() {
    auto r = run_cli({"gen-model", "--arch", "mlp", "-o", model});
    if (r.code != 0) throw std::runtime_error("gen-model failed: " + r.err);
    // Line 3 names a file that does not exist: valid JSON, bad only at serve time.
    trace = dir.write("t.jsonl",
                      "{\"id\": 1, \"key\": \"a\", \"input\": {\"shape\": [1, 16], \"seed\": 1}}\n"
                      "{\"id\": 2, \"key\": \"b\", \"input\": {\"shape\": [1, 16], \"seed\": 2}}\n"
                      "{\"id\": 3, \"key\": \"c\", \"input\": {\"file\": \"missing.npy\"}}\n"
                      "{\"id\": 4, \"key\": \"a\", \"input\": {\"shape\": [1, 16], \"seed\": 1}}\n");
  }
};
SkipFixture& skip_fixture() {
  static SkipFixture f;
  return f;
}

}  // namespace

TEST_SUITE("e2e skip invalid at serve time") {
  TEST_CASE("run: without --skip-invalid the bad request is an error naming its line, and nothing is written") {
    auto& f = skip_fixture();
    TempDir out;
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--warmup", "0", "--no-progress", "--out", out.file("r")});
    CHECK(r.code == 2);
    CHECK(r.err.find(f.trace + ":3") != std::string::npos);
    CHECK(!fs::exists(out.path() / "r" / "summary.json"));
  }

  TEST_CASE("run --skip-invalid: the request is counted and named, the others reported") {
    auto& f = skip_fixture();
    TempDir out;
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--warmup", "0", "--no-progress", "--skip-invalid", "--out",
                      out.file("r")});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("skipped 1 invalid trace line") != std::string::npos);
    CHECK(r.out.find(f.trace + ":3") != std::string::npos);
    simdjson::dom::parser parser;
    simdjson::dom::element summary;
    REQUIRE(parser.parse(slurp(out.path() / "r" / "summary.json")).get(summary) == simdjson::SUCCESS);
    CHECK(json_number(summary["requests"]) == 3);
    CHECK(json_number(summary["run"]["skipped"]["invalid"]) == 1);
  }

  TEST_CASE("compare --skip-invalid in lockstep: every configuration leaves the same request out") {
    auto& f = skip_fixture();
    TempDir out;
    auto r = run_cli({"compare", f.model, "--trace", f.trace, "--warmup", "0", "--no-progress", "--skip-invalid",
                      "--caches", "none", "--caches", "l1", "--out", out.file("c")});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    for (const char* config : {"none", "l1"}) {
      CAPTURE(config);
      simdjson::dom::element summary;
      REQUIRE(parser.parse(slurp(out.path() / "c" / config / "summary.json")).get(summary) == simdjson::SUCCESS);
      CHECK(json_number(summary["requests"]) == 3);
      CHECK(json_number(summary["run"]["skipped"]["invalid"]) == 1);
    }
  }
}
