// End-to-end: compare configurations that differ by model or by profile (one
// pipeline each, served in lockstep or sequentially), and --gate, the CI gate
// on paired requests.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <fstream>

#include "cli_harness.hpp"
#include "test_util.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

// A CNN and a ResNet-18-shaped model (many times its compute) on one tensor trace;
// small pictures and two profiles that differ only by how far they resize.
struct ModelsFixture {
  TempDir dir;
  std::string cnn = dir.file("cnn.pt"), resnet = dir.file("resnet.pt");
  std::string trace = dir.file("tensors.jsonl"), images_trace = dir.file("images.jsonl");
  std::string light = dir.file("light.toml"), heavy = dir.file("heavy.toml"), threads = dir.file("threads.toml");
  ModelsFixture() {
    for (const auto& [arch, path] : {std::pair{"cnn", cnn}, std::pair{"resnet18", resnet}}) {
      auto m = run_cli({"gen-model", "--arch", arch, "-o", path});
      if (m.code != 0) throw std::runtime_error("gen-model failed: " + m.err);
    }
    auto t =
        run_cli({"gen-trace", "--requests", "16", "--keys", "4", "--zipf", "0", "--shape", "1,3,64,64", "-o", trace});
    if (t.code != 0) throw std::runtime_error("gen-trace failed: " + t.err);
    auto i = run_cli(
        {"gen-images", "--out", dir.file("pictures"), "--sizes", "320x240", "--formats", "jpeg", "--count", "2"});
    if (i.code != 0) throw std::runtime_error("gen-images failed: " + i.err);
    auto it = run_cli({"gen-trace", "--images", dir.file("pictures"), "--requests", "16", "-o", images_trace});
    if (it.code != 0) throw std::runtime_error("gen-trace --images failed: " + it.err);
    // The same steps; "heavy" resizes to 1024 before the crop, ~50x the pixels of "light".
    auto profile = [](const std::string& path, const std::string& name, int size, int threads_n) {
      std::ofstream(path) << "name = \"" << name << "\"\n[model]\nthreads = " << threads_n
                          << "\nwarmup = 2\n[[preprocess]]\nop = \"decode\"\n[[preprocess]]\nop = \"resize\"\nsize = "
                          << size
                          << "\nimpl = \"pil\"\n[[preprocess]]\nop = \"center_crop\"\nsize = [64, 64]\n"
                             "[[preprocess]]\nop = \"to_tensor\"\n";
    };
    profile(light, "light", 64, 1);
    profile(heavy, "heavy", 1024, 1);
    profile(threads, "two-threads", 64, 2);
  }
};
ModelsFixture& models_fixture() {
  static ModelsFixture f;
  return f;
}

simdjson::dom::element parse(simdjson::dom::parser& parser, const std::string& text) {
  simdjson::dom::element doc;
  REQUIRE_MESSAGE(parser.parse(text).get(doc) == simdjson::SUCCESS, text);
  return doc;
}

}  // namespace

TEST_SUITE("e2e lockstep") {
  TEST_CASE("compare MODEL --model OTHER: the faster model found, each with its own pipeline and reports") {
    auto& f = models_fixture();
    TempDir out;
    auto r =
        run_cli({"compare", f.resnet, "--model", f.cnn, "--trace", f.trace, "--out", out.file("c"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find(" · 2 models · ") != std::string::npos);
    CHECK(r.out.rfind("\nmodel ", r.out.find("speedup (95% CI)")) != std::string::npos);  // the column says what varies
    CHECK(r.out.find("compute ") != std::string::npos);  // where the time went: by stage, not by cache tier

    simdjson::dom::parser parser;
    auto doc = parse(parser, slurp(out.path() / "c" / "compare.json"));
    CHECK(std::string_view(doc["varies"]) == "model");
    simdjson::dom::array configs = doc["configurations"];
    REQUIRE(configs.size() == 2);
    CHECK(std::string_view(configs.at(0)["name"]) == "resnet.pt");
    CHECK(std::string_view(configs.at(1)["name"]) == "cnn.pt");
    CHECK(std::string_view(configs.at(1)["verdict"]) == "faster");
    CHECK(json_number(configs.at(1)["speedup"]["low"]) > 1.0);
    // Each configuration's summary names its own model: one pipeline per model.
    for (const auto& [folder, model] : {std::pair{"resnet.pt", f.resnet}, std::pair{"cnn.pt", f.cnn}}) {
      auto summary = parse(parser, slurp(out.path() / "c" / folder / "summary.json"));
      CHECK_MESSAGE(std::string_view(summary["run"]["model_path"]) == model, folder);
    }
  }

  TEST_CASE("compare --model A --model B --mode sequential replays each model whole") {
    auto& f = models_fixture();
    auto r = run_cli({"compare", "--model", f.cnn, "--model", f.resnet, "--trace", f.trace, "--mode", "sequential",
                      "--limit", "6", "--format", "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    auto doc = parse(parser, r.out);
    CHECK(std::string_view(doc["mode"]) == "sequential");
    simdjson::dom::array configs = doc["configurations"];
    REQUIRE(configs.size() == 2);
    CHECK(std::string_view(configs.at(1)["model"]) == f.resnet);
    CHECK(json_number(configs.at(1)["speedup"]["value"]) < 1.0);  // ResNet-18's shape is slower
  }

  TEST_CASE(
      "compare --profile A --profile B --gate: a heavier resize fails the gate, the same profile twice does not") {
    auto& f = models_fixture();
    auto r = run_cli({"compare", f.cnn, "--trace", f.images_trace, "--profile", f.light, "--profile", f.heavy, "--gate",
                      "preprocess.cpu.mean=10%", "--format", "json", "--no-progress"});
    CHECK_MESSAGE(r.code == 1, r.err);
    CHECK(r.err.find("compare --gate: 1 regression past the gate") != std::string::npos);
    simdjson::dom::parser parser;
    auto doc = parse(parser, r.out);
    CHECK(std::string_view(doc["varies"]) == "profile");
    CHECK(json_number(doc["gate_exit_code"]) == 1);
    simdjson::dom::array gates = doc["gates"];
    REQUIRE(gates.size() == 1);
    CHECK(std::string_view(gates.at(0)["configuration"]) == "heavy");
    CHECK(std::string_view(gates.at(0)["stage"]) == "preprocess");
    CHECK(std::string_view(gates.at(0)["clock"]) == "cpu");
    CHECK(std::string_view(gates.at(0)["verdict"]) == "REGRESSION");
    // The whole interval lies past the limit.
    CHECK(json_number(gates.at(0)["delta_low_us"]) > json_number(gates.at(0)["limit_us"]));

    // An A/A check: the profile against itself, two pipelines, the same work.
    auto same = run_cli({"compare", f.cnn, "--trace", f.images_trace, "--profile", f.light, "--profile", f.light,
                         "--gate", "preprocess.cpu.mean=10%,total.cpu.mean=10%", "--no-progress"});
    CHECK_MESSAGE(same.code != 1, same.out, same.err);
    CHECK(same.out.find("REGRESSION") == std::string::npos);
    CHECK(same.out.find("gates against light") != std::string::npos);
    CHECK(same.out.find("light-2") == std::string::npos);  // the table names configurations, not folders
  }

  TEST_CASE("compare's models, profiles and gates: bad combinations are refused in one line, exit 2") {
    auto& f = models_fixture();
    struct Case {
      std::vector<std::string> args;
      std::string expected;
    };
    const std::vector<Case> cases = {
        {{"compare", "--model", f.cnn, "--model", f.resnet, "--caches", "none", "--caches", "l1"},
         "compare varies one thing at a time"},
        {{"compare", f.cnn, "--gate", "total.p99=5%"}, "compare gates on the mean per request"},
        {{"compare", f.cnn, "--gate", "total.mean=5%", "--mode", "sequential"}, "--gate judges paired requests"},
        {{"compare", f.cnn, "--gate", "total.speed=5%"}, "--gate: unknown metric 'speed'"},
        {{"compare", "--caches", "none"}, "compare needs a model"},
        {{"compare", "--model", f.cnn, "--model", f.resnet, "--model-sha256", std::string(64, 'a')},
         "--model-sha256 checks one model"},
        {{"compare", f.cnn, "--profile", f.light, "--profile", f.threads}, "intra-op threads"},
        {{"run", f.cnn, "--profile", f.light, "--profile", f.heavy}, "run replays one profile"},
    };
    for (const Case& c : cases) {
      std::vector<std::string> args = c.args;
      for (const char* more : {"--trace", "", "--no-progress"})
        args.push_back(more);
      args[args.size() - 2] = c.args.front() == "run" || c.expected != "intra-op threads" ? f.trace : f.images_trace;
      auto r = run_cli(args);
      CHECK_MESSAGE(r.code == 2, c.expected, ": ", r.err);
      CHECK_MESSAGE(r.err.find(c.expected) != std::string::npos, r.err);
      CHECK(r.out.empty());
    }
  }
}
