// End-to-end: `inferprof diff` on real runs of a generated model and trace.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <fstream>

#include "cli_harness.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

// Two real runs of one CNN on one trace of 16x16 images: BASE with the default
// preprocessing, NEW with a profile that adds a resize up to 1024x1024 and
// back. That is three megapixels of interpolation per request against a CNN
// of about a millisecond: several times slower in mean and median, far past
// any scheduling noise, so the test is not flaky on a loaded machine (the
// tail is not asserted on: one stall in BASE can own its p99). A third run
// uses another model file.
struct DiffFixture {
  TempDir dir;
  std::string model = dir.file("cnn.pt");
  std::string other_model = dir.file("cnn-seed2.pt");
  std::string trace = dir.file("t.jsonl");
  std::string heavy_profile = dir.file("heavy.toml");
  std::string base = dir.file("base"), slow = dir.file("slow"), other = dir.file("other");
  DiffFixture() {
    auto m = run_cli({"gen-model", "--arch", "cnn", "-o", model});
    if (m.code != 0) throw std::runtime_error("gen-model failed: " + m.err);
    m = run_cli({"gen-model", "--arch", "cnn", "--seed", "2", "-o", other_model});
    if (m.code != 0) throw std::runtime_error("gen-model failed: " + m.err);
    auto t = run_cli(
        {"gen-trace", "--requests", "60", "--keys", "60", "--shape", "1,3,16,16", "--dtype", "uint8", "-o", trace});
    if (t.code != 0) throw std::runtime_error("gen-trace failed: " + t.err);
    std::ofstream(heavy_profile) << "name = \"heavy\"\n[model]\ndevice = \"cpu\"\nthreads = 1\nwarmup = 2\n"
                                    "[[preprocess]]\nop = \"to_float\"\n"
                                    "[[preprocess]]\nop = \"resize\"\nsize = [1024, 1024]\n"
                                    "[[preprocess]]\nop = \"resize\"\nsize = [16, 16]\n";
    run_or_throw({"run", model, "--trace", trace, "--warmup", "2", "--out", base, "--no-progress"});
    run_or_throw({"run", model, "--trace", trace, "--profile", heavy_profile, "--out", slow, "--no-progress"});
    run_or_throw({"run", other_model, "--trace", trace, "--warmup", "2", "--out", other, "--no-progress"});
  }
  static void run_or_throw(const std::vector<std::string>& args) {
    auto r = run_cli(args);
    if (r.code != 0) throw std::runtime_error("inferprof run failed: " + r.err);
  }
};
DiffFixture& diff_fixture() {
  static DiffFixture f;
  return f;
}

}  // namespace

TEST_SUITE("e2e diff") {
  TEST_CASE("diff: a run against itself passes every gate") {
    auto& f = diff_fixture();
    TempDir out;
    auto r = run_cli({"diff", f.base, f.base + "/summary.json", "--max-regression", "p99=10%,mean=5%", "--junit",
                      out.file("junit.xml")});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("REGRESSION") == std::string::npos);
    CHECK(r.out.find("ok: ") != std::string::npos);
    CHECK(r.out.find("95% bootstrap intervals over requests") != std::string::npos);
    // Both sides are one run: the same probes, +0.0%.
    CHECK(r.out.find("machine speed probe (fixed work before and after each run, thread CPU): compute base") !=
          std::string::npos);
    CHECK(r.out.find("(+0.0%, within the probe's noise)") != std::string::npos);
    std::string junit = slurp(out.path() / "junit.xml");
    CHECK(junit.find("failures=\"0\"") != std::string::npos);
    CHECK(junit.find("<failure") == std::string::npos);
    CHECK(junit.find("<testcase classname=\"inferprof.diff\" name=\"total.p99 (p99=10%)\">") != std::string::npos);
  }

  TEST_CASE("diff: a genuinely slower run fails the gate, in every format") {
    auto& f = diff_fixture();
    TempDir out;
    auto r = run_cli({"diff", f.base, f.slow, "--junit", out.file("junit.xml")});
    REQUIRE_MESSAGE(r.code == 1, r.out << r.err);
    CHECK(r.out.find("REGRESSION: ") != std::string::npos);
    CHECK(r.out.find("note: profiles differ: base default vs new heavy") != std::string::npos);
    std::string junit = slurp(out.path() / "junit.xml");
    CHECK(junit.find("<testsuites name=\"inferprof diff\" tests=\"2\"") != std::string::npos);
    CHECK(junit.find("failures=\"0\"") == std::string::npos);
    CHECK(junit.find("<failure message=\"total cpu.mean regressed") != std::string::npos);

    auto md = run_cli({"diff", f.base, f.slow, "--format", "markdown"});
    CHECK(md.code == 1);
    CHECK(md.out.rfind("**inferprof diff: REGRESSION", 0) == 0);
    CHECK(md.out.find("| total | cpu.mean |") != std::string::npos);

    auto js = run_cli({"diff", f.base, f.slow, "--format", "json", "--max-regression", "preprocess.mean=50%"});
    CHECK(js.code == 1);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(js.out).get(doc) == simdjson::SUCCESS);
    CHECK(std::string_view(doc["verdict"].get_string()) == "regression");
    CHECK(json_number(doc["regressions"]) == 1);
    bool seen = false;
    for (auto row : doc["rows"].get_array()) {
      if (std::string_view(row["stage"].get_string()) != "preprocess" ||
          std::string_view(row["clock"].get_string()) != "wall" ||
          std::string_view(row["metric"].get_string()) != "mean")
        continue;
      seen = true;
      CHECK(std::string_view(row["verdict"].get_string()) == "REGRESSION");
      // Many times slower, and the interval of the change lies wholly above 0.
      CHECK(json_number(row["new"]) > 3 * json_number(row["base"]));
      CHECK(json_number(row["interval"].at(0)) > 0);
    }
    CHECK(seen);

    // Turned around, the same pair is an improvement and passes.
    auto back = run_cli({"diff", f.slow, f.base, "--max-regression", "total.mean=5%,total.p50=10%"});
    CHECK_MESSAGE(back.code == 0, back.out << back.err);
    CHECK(back.out.find("2 improved") != std::string::npos);
  }

  TEST_CASE("diff: different models are refused with the reason, unless --force") {
    auto& f = diff_fixture();
    TempDir out;
    auto r = run_cli({"diff", f.base, f.other, "--junit", out.file("junit.xml")});
    CHECK(r.code == 2);
    CHECK(r.err.find("are not comparable: models differ: base xxh3:") != std::string::npos);
    CHECK(r.err.find("(--force compares them anyway)") != std::string::npos);
    CHECK_FALSE(fs::exists(out.path() / "junit.xml"));
    auto forced = run_cli({"diff", f.base, f.other, "--force"});
    CHECK(forced.code != 2);
    CHECK(forced.out.find("warning (--force): models differ") != std::string::npos);
  }

  TEST_CASE("diff: bad thresholds and missing files exit 2 with one clear line") {
    auto& f = diff_fixture();
    auto r = run_cli({"diff", f.base, f.base, "--max-regression", "p99=10"});
    CHECK(r.code == 2);
    CHECK(r.err ==
          "inferprof: error: --max-regression: '10' is not a percentage (expected a number followed by %, e.g. 10%) "
          "in 'p99=10'; expected [STAGE.][cpu.|wall.]METRIC=PCT%[+FLOOR(ms|us)], e.g. "
          "total.cpu.p50=5%,compute.mean=5%+0.05ms\n");
    r = run_cli({"diff", f.base, f.dir.file("missing")});
    CHECK(r.code == 2);
    CHECK(r.err == "inferprof: error: " + f.dir.file("missing") +
                       ": no such file or folder (expected a run's summary.json or its --out folder)\n");
    r = run_cli({"diff", f.base, f.base, "--confidence", "2"});
    CHECK(r.code == 2);
    CHECK(r.err.find("--confidence 2 is out of range") != std::string::npos);
  }

  TEST_CASE("diff: without requests.csv the gate uses the threshold alone and says so") {
    auto& f = diff_fixture();
    TempDir copy;
    fs::copy_file(fs::path(f.base) / "summary.json", copy.file("summary.json"));
    auto r = run_cli({"diff", copy.file("summary.json"), f.base});
    CHECK(r.code == 0);
    CHECK(r.out.find("no confidence intervals: base has no requests.csv") != std::string::npos);
  }

  TEST_CASE("diff: runs that read the CPU clock on 1 in N requests keep their cpu gates and intervals") {
    auto& f = diff_fixture();
    TempDir out;
    for (const char* side : {"a", "b"})
      DiffFixture::run_or_throw({"run", f.model, "--trace", f.trace, "--warmup", "2", "--cpu-sample", "3", "--out",
                                 out.file(side), "--no-progress"});
    auto r =
        run_cli({"diff", out.file("a"), out.file("b"), "--max-regression", "total.cpu.p50=200%", "--format", "json"});
    REQUIRE_MESSAGE(r.code == 0, r.out << r.err);
    CHECK(r.out.find("\"total.cpu.p50") != std::string::npos);
    CHECK(r.out.find("threshold only: requests.csv has no cpu times") == std::string::npos);
    CHECK(r.out.find("no intervals on cpu rows") == std::string::npos);
  }
}
