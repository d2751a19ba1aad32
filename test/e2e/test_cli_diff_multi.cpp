// End-to-end: `inferprof diff --base DIR... --new DIR...` on real runs, the
// two-folder form beside it, and bad input.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <fstream>

#include "cli_harness.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

// Two runs of a CNN on 16x16 images with the default profile (base), two
// with a profile that resizes up to 1024x1024 and back (slow: many times the
// CPU time, far past any noise), and one of another model file. How often
// runs of identical code fail a gate is a timing question:
// bench/diff_stability.sh.
struct MultiFixture {
  TempDir dir;
  std::string model = dir.file("cnn.pt"), other_model = dir.file("cnn2.pt"), trace = dir.file("t.jsonl");
  std::string heavy = dir.file("heavy.toml");
  std::vector<std::string> base, slow;
  std::string other = dir.file("other");
  MultiFixture() {
    must({"gen-model", "--arch", "cnn", "-o", model});
    must({"gen-model", "--arch", "cnn", "--seed", "2", "-o", other_model});
    must({"gen-trace", "--requests", "40", "--keys", "40", "--shape", "1,3,16,16", "--dtype", "uint8", "-o", trace});
    std::ofstream(heavy) << "name = \"heavy\"\n[model]\ndevice = \"cpu\"\nthreads = 1\nwarmup = 2\n"
                            "[[preprocess]]\nop = \"to_float\"\n[[preprocess]]\nop = \"resize\"\nsize = [1024, 1024]\n"
                            "[[preprocess]]\nop = \"resize\"\nsize = [16, 16]\n";
    for (int i = 0; i < 2; ++i) {
      base.push_back(run(model, "base" + std::to_string(i)));
      slow.push_back(run(model, "slow" + std::to_string(i), heavy));
    }
    run(other_model, "other");
  }
  std::string run(const std::string& m, const std::string& name, const std::string& profile = "") {
    std::vector<std::string> args = {"run", m,       "--trace",      trace,          "--warmup",
                                     "2",   "--out", dir.file(name), "--no-progress"};
    if (!profile.empty()) args.insert(args.end(), {"--profile", profile});
    must(args);
    return dir.file(name);
  }
  static void must(const std::vector<std::string>& args) {
    auto r = run_cli(args);
    if (r.code != 0) throw std::runtime_error(args[0] + " failed: " + r.err);
  }
};
MultiFixture& multi_diff_fixture() {
  static MultiFixture f;
  return f;
}

std::vector<std::string> diff_args(const std::vector<std::string>& base, const std::vector<std::string>& now,
                                   const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {"diff", "--base"};
  args.insert(args.end(), base.begin(), base.end());
  args.push_back("--new");
  args.insert(args.end(), now.begin(), now.end());
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

TEST_SUITE("e2e diff over several runs") {
  TEST_CASE("diff --base --new: several runs per side, the hierarchical interval, in every format") {
    auto& f = multi_diff_fixture();
    TempDir out;
    // The same two runs on both sides (in another order): no change at all.
    auto r = run_cli(diff_args(f.base, {f.base[1], f.base[0]}, {"--junit", out.file("junit.xml")}));
    CHECK_MESSAGE(r.code == 0, r.out << r.err);
    CHECK(r.out.find("ok: 2 gates passed\n") != std::string::npos);
    CHECK(r.out.find("  base: 2 runs · 80 requests\n    1: " + f.base[0] + "/summary.json") != std::string::npos);
    CHECK(r.out.find("95% hierarchical bootstrap intervals (1000 resamples, each drawing 2 base and 2 new runs") !=
          std::string::npos);
    CHECK(r.out.find("spread b / n") != std::string::npos);
    CHECK(r.out.find("total.cpu.mean=5%") != std::string::npos);
    CHECK(slurp(out.path() / "junit.xml").find("name=\"total.cpu.p50 (total.cpu.p50=5%)\"") != std::string::npos);

    // A genuinely slower side fails the default cpu gates.
    auto slow = run_cli(diff_args(f.base, f.slow, {"--format", "json"}));
    CHECK_MESSAGE(slow.code == 1, slow.out << slow.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(slow.out).get(doc) == simdjson::SUCCESS);
    CHECK(std::string_view(doc["verdict"].get_string()) == "regression");
    CHECK(std::string_view(doc["method"].get_string()) == "hierarchical bootstrap");
    CHECK(doc["base_runs"].get_array().size() == 2);
    CHECK(doc["new_runs"].get_array().size() == 2);
    bool seen = false;
    for (auto row : doc["rows"].get_array()) {
      if (std::string_view(row["stage"].get_string()) != "total" ||
          std::string_view(row["clock"].get_string()) != "cpu" ||
          std::string_view(row["metric"].get_string()) != "mean")
        continue;
      seen = true;
      CHECK(std::string_view(row["verdict"].get_string()) == "REGRESSION");
      CHECK(json_number(row["interval_pct"].at(0)) > 5);
      CHECK(row["new_runs"].get_array().size() == 2);
    }
    CHECK(seen);
    auto md = run_cli(diff_args(f.base, f.slow, {"--format", "markdown"}));
    CHECK(md.code == 1);
    CHECK(md.out.find("| total | cpu.mean |") != std::string::npos);
  }

  TEST_CASE("diff BASE NEW: the two-folder form is one run per side") {
    auto& f = multi_diff_fixture();
    auto r = run_cli({"diff", f.base[0], f.base[0], "--format", "json"});
    REQUIRE_MESSAGE(r.code == 0, r.out << r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(r.out).get(doc) == simdjson::SUCCESS);
    CHECK(std::string_view(doc["method"].get_string()) == "request bootstrap");
    CHECK(std::string_view(doc["intervals_note"].get_string()).find("one run per side") != std::string_view::npos);
    auto slow = run_cli({"diff", f.base[0], f.slow[0]});
    CHECK(slow.code == 1);
    CHECK(slow.out.find("REGRESSION: 2 of 2 gates failed") != std::string::npos);
  }

  TEST_CASE("diff over several runs: bad input is one line and exit 2") {
    auto& f = multi_diff_fixture();
    TempDir empty;
    auto r = run_cli(diff_args({f.base[0], empty.path().string()}, f.base));
    CHECK(r.code == 2);
    CHECK(r.err == "inferprof: error: " + empty.path().string() +
                       ": no summary.json in this folder (expected a run's --out folder)\n");
    r = run_cli(diff_args({f.base[0], f.other}, f.base));
    CHECK(r.code == 2);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.find("are not comparable: models differ: base 1 xxh3:") != std::string::npos);
    CHECK(r.err.find(" vs base 2 xxh3:") != std::string::npos);
    r = run_cli(diff_args(f.base, {f.base[0], f.other}));
    CHECK(r.code == 2);
    CHECK(r.err.find("models differ: base 1 xxh3:") != std::string::npos);
    CHECK(r.err.find(" vs new 2 xxh3:") != std::string::npos);
    r = run_cli({"diff", "--base", f.base[0]});
    CHECK(r.code == 2);
    CHECK(r.err == "inferprof: error: diff: --base given without --new (expected --base DIR... --new DIR...)\n");
    r = run_cli({"diff", f.base[0], "--new", f.base[1]});
    CHECK(r.code == 2);
    CHECK(r.err == "inferprof: error: diff: give BASE NEW, or --base DIR... --new DIR..., not both\n");
    r = run_cli({"diff", f.base[0]});
    CHECK(r.code == 2);
    CHECK(r.err == "inferprof: error: diff: expected two runs, BASE NEW (got 1), or --base DIR... --new DIR...\n");
  }
}
