// End-to-end: text requests through `inferprof run --profile text-classification`
// on the two-input model gen-model --arch text writes (forward(ids, mask) ->
// (logits, pooled)); several inputs as a list and a map; the caches holding
// tuple outputs (L1) and several preprocessed inputs (L3); and the bad inputs:
// one line, the exit code, no report files.
#include <doctest/doctest.h>

#include "cli_harness.hpp"
#include "sanitized.hpp"
#include "spm_model.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

struct TextFixture {
  TempDir dir;
  std::string model = dir.file("text.pt");
  std::string profile;  // the shipped profile, next to a tokenizer trained here
  TextFixture() {
    auto m = run_cli({"gen-model", "--arch", "text", "-o", model});
    if (m.code != 0) throw std::runtime_error("gen-model failed: " + m.err);
    if (train_spm_model(dir, "text-classification").empty()) return;
    profile =
        dir.write("text-classification.toml", slurp(fs::path(INFERPROF_PROFILES_DIR) / "text-classification.toml"));
  }
};
TextFixture& text_fixture() {
  static TextFixture f;
  return f;
}

simdjson::dom::element summary_of(simdjson::dom::parser& parser, const fs::path& out) {
  simdjson::dom::element summary;
  REQUIRE(parser.parse(slurp(out / "summary.json")).get(summary) == simdjson::SUCCESS);
  return summary;
}

double tier_hits(simdjson::dom::element summary, std::string_view tier) {
  simdjson::dom::array tiers;
  if (summary["caches"].get(tiers) != simdjson::SUCCESS) return -1;
  for (auto t : tiers)
    if (std::string_view(t["tier"].get_string()) == tier) return json_number(t["hits"]);
  return -1;
}

CliResult run_text(const std::string& trace, const std::string& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {
      "run", text_fixture().model, "--trace", trace, "--profile", text_fixture().profile, "--warmup",
      "0",   "--no-progress",      "--out",   out};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_cli(args);
}

}  // namespace

TEST_SUITE("e2e text" * doctest::skip(kSanitized)) {
  TEST_CASE("text and text_file requests through the text profile: tokenize is a span, ids + mask feed forward") {
    auto& f = text_fixture();
    if (f.profile.empty()) {
      MESSAGE("spm_train is not installed: skipped");
      return;
    }
    TempDir dir;
    std::string long_text;
    for (int i = 0; i < 200; ++i)
      long_text += "the model serves a request. ";
    dir.write("texts/long.txt", long_text + "\n");
    const std::string trace = dir.write("t.jsonl", R"({"id": 1, "input": {"text": "the model serves a request"}}
{"id": 2, "input": {"text_file": "texts/long.txt"}}
{"id": 3, "input": {"text": ""}}
{"id": 4, "input": {"text": "the model serves a request"}}
)");
    auto r = run_text(trace, dir.file("r"));
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const std::string folded = slurp(fs::path(dir.file("r")) / "stacks.folded");
    CHECK_MESSAGE(folded.find("preprocess;tokenize ") != std::string::npos, folded);
    // The long text was truncated: a span under tokenize, a warning naming its line, and the count.
    CHECK_MESSAGE(folded.find("preprocess;tokenize;truncate ") != std::string::npos, folded);
    CHECK_MESSAGE(r.err.find(trace + ":2: text of ") != std::string::npos, r.err);
    CHECK_MESSAGE(r.err.find("1 of 4 texts were longer than max_length") != std::string::npos, r.err);
    // The empty text reached the model as padding only: said once with its line, then counted.
    CHECK_MESSAGE(r.err.find(trace + ":3: text gave no tokens: the model is given padding only") != std::string::npos,
                  r.err);
    CHECK_MESSAGE(r.err.find("1 of 4 texts gave no tokens") != std::string::npos, r.err);
    simdjson::dom::parser parser;
    CHECK(json_number(summary_of(parser, dir.file("r"))["requests"]) == 4);
  }

  TEST_CASE("inspect under the text profile tries a sentence through the tokenizer, as run feeds it") {
    auto& f = text_fixture();
    if (f.profile.empty()) {
      MESSAGE("spm_train is not installed: skipped");
      return;
    }
    // It sent a seeded [1, 128] tensor, which tokenize refused: the trial failed where run works.
    auto r = run_cli({"inspect", f.model, "--profile", f.profile});
    CHECK_MESSAGE(r.code == 0, r.out << r.err);
    CHECK(r.out.find("input       a sentence as a text request (the profile tokenizes)") != std::string::npos);
    CHECK(r.out.find("trial       ok") != std::string::npos);
    auto g = run_cli({"gen-trace", "--like", f.model, "--profile", f.profile, "-o", f.dir.file("x.jsonl")});
    CHECK(g.code == 2);
    CHECK(g.err.find("tokenizes text: use --texts FILE for its requests") != std::string::npos);
  }

  TEST_CASE("--caches l1 serves the tuple output again, --caches l3 serves ids and mask from one blob") {
    auto& f = text_fixture();
    if (f.profile.empty()) return;
    TempDir dir;
    std::string lines;
    for (int i = 0; i < 12; ++i)
      lines += fmt::format(R"({{"id": {}, "key": "k{}", "input": {{"text": "cache hit number {}"}}}})"
                           "\n",
                           i + 1, i % 3, i % 3);
    const std::string trace = dir.write("t.jsonl", lines);
    simdjson::dom::parser parser;
    auto l1 = run_text(trace, dir.file("l1"), {"--caches", "l1", "--verify"});
    REQUIRE_MESSAGE(l1.code == 0, l1.err);
    CHECK(tier_hits(summary_of(parser, dir.file("l1")), "l1") == 9);
    auto l3 = run_text(trace, dir.file("l3"), {"--caches", "l3"});
    REQUIRE_MESSAGE(l3.code == 0, l3.err);
    simdjson::dom::parser p3;
    CHECK(tier_hits(summary_of(p3, dir.file("l3")), "l3") == 9);
  }

  TEST_CASE("several inputs: a list, and a map by the forward's argument names, with integer ranges") {
    auto& f = text_fixture();
    TempDir dir;
    const std::string trace = dir.write(
        "t.jsonl",
        R"({"id": 1, "inputs": [{"seed": 1, "shape": [1, 16], "dtype": "int64", "range": [0, 32000]}, {"data": [1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0], "shape": [1, 16], "dtype": "int64"}]}
{"id": 2, "inputs": {"mask": {"seed": 2, "shape": [1, 16], "dtype": "int64", "range": [0, 2]}, "ids": {"seed": 3, "shape": [1, 16], "dtype": "int64", "range": [0, 32000]}}}
)");
    // The default profile's to_float would cast the ids: a profile without ops.
    const std::string profile = dir.write("none.toml", "name = \"none\"\n");
    auto r = run_cli({"run", f.model, "--trace", trace, "--profile", profile, "--warmup", "0", "--no-progress", "--out",
                      dir.file("r"), "--caches", "l1,l3"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    CHECK(json_number(summary_of(parser, dir.file("r"))["requests"]) == 2);
  }

  TEST_CASE("bad inputs: one line naming the trace or profile line, the exit code, no reports") {
    auto& f = text_fixture();
    TempDir dir;
    const std::string none = dir.write("none.toml", "name = \"none\"\n");
    const std::string junk_profile =
        dir.write("junk.toml", "name = \"junk\"\n[[preprocess]]\nop = \"tokenize\"\nmodel = \"junk.model\"\n");
    dir.write("junk.model", "this is not a tokenizer\n");
    const std::string ok_line = R"({"input": {"text": "hello"}})";
    const std::string text_trace = dir.write("text.jsonl", ok_line + "\n");
    const std::string unknown = dir.write(
        "unknown.jsonl",
        R"({"inputs": {"ids": {"seed": 1, "shape": [1, 4], "dtype": "int64", "range": [0, 9]}, "segments": {"seed": 2, "shape": [1, 4], "dtype": "int64"}}})"
        "\n");
    const std::string missing =
        dir.write("missing.jsonl",
                  "\n"
                  R"({"inputs": {"ids": {"seed": 1, "shape": [1, 4], "dtype": "int64", "range": [0, 9]}}})"
                  "\n");
    const std::string too_many = dir.write(
        "many.jsonl",
        R"({"inputs": [{"seed": 1, "shape": [1, 4], "dtype": "int64", "range": [0, 9]}, {"seed": 2, "shape": [1, 4], "dtype": "int64"}, {"seed": 3, "shape": [1, 4]}]})"
        "\n");
    const std::string bad_dtype = dir.write(
        "dtype.jsonl",
        R"({"inputs": [{"seed": 1, "shape": [1, 4], "dtype": "float32"}, {"seed": 2, "shape": [1, 4], "dtype": "int64"}]})"
        "\n");
    struct Case {
      std::string trace, profile;
      int code;
      std::string message;
    };
    const std::vector<Case> cases = {
        {text_trace, junk_profile, 2,
         fmt::format("{}:2: tokenize: model '{}': not a SentencePiece model", junk_profile, dir.file("junk.model"))},
        {unknown, none, 2,
         fmt::format("{}:1: input 'segments': the model has no such argument (the model's forward takes ids, mask)",
                     unknown)},
        {missing, none, 2, fmt::format("{}:2: input 'mask' is missing (the model's forward takes ids, mask)", missing)},
        {too_many, none, 2,
         fmt::format("{}:1: 3 inputs given, the model takes 2 (the model's forward takes ids, mask)", too_many)},
        {bad_dtype, none, 3,
         fmt::format("{}:1: the model rejected its inputs [1, 4] float32, [1, 4] int64", bad_dtype)},
        {text_trace, none, 3, "a text input needs 'tokenize' as the profile's first op"},
    };
    for (const Case& c : cases) {
      const std::string out = dir.file("out-" + fs::path(c.trace).stem().string());
      auto r = run_cli(
          {"run", f.model, "--trace", c.trace, "--profile", c.profile, "--warmup", "0", "--no-progress", "--out", out});
      CHECK_MESSAGE(r.code == c.code, c.message << "\n" << r.err);
      CHECK_MESSAGE(r.err.find(c.message) != std::string::npos, r.err);
      CHECK_MESSAGE(count_lines(r.err) == 1, r.err);
      CHECK(dir_is_empty_or_missing(out));
    }
  }
}
