// End-to-end: `inferprof inspect` on gen-model models, with and without a
// profile that fits (the hint names the flag that would), its JSON, and `run`
// on a shape the model rejects saying the same line instead of libtorch's.
#include <doctest/doctest.h>

#include "cli_harness.hpp"

using namespace inferprof::testing;

namespace {

struct InspectFixture {
  TempDir dir;
  std::string mlp = dir.file("mlp.pt");
  std::string cnn = dir.file("cnn.pt");
  InspectFixture() {
    for (const auto& [arch, path] : {std::pair{"mlp", mlp}, std::pair{"cnn", cnn}}) {
      auto r = run_cli({"gen-model", "--arch", arch, "-o", path});
      if (r.code != 0) throw std::runtime_error("gen-model failed: " + r.err);
    }
  }
};
InspectFixture& inspect_fixture() {
  static InspectFixture f;
  return f;
}

const char* const kCnnHint =
    "the model expects [N, 3, H, W] float32 (its first layer 'conv1_weight' is [32, 3, 3, 3]): use --profile "
    "image-classification or --shape 1,3,64,64";

}  // namespace

TEST_SUITE("e2e inspect") {
  TEST_CASE("inspect a gen-model MLP: schema, metadata, parameters, and a trial that works") {
    auto r = run_cli({"inspect", inspect_fixture().mlp});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(r.out.find("forward     forward(x: Tensor) -> Tensor\n") != std::string::npos);
    CHECK(r.out.find("metadata    arch mlp, input [1, 16] float32, seed 0 (inferprof.json)") != std::string::npos);
    // 16*64+64 + 64*64+64 + 64*10+10 parameters, float32.
    CHECK(r.out.find("parameters  5,898 (") != std::string::npos);
    CHECK(r.out.find("expects     [N, 16] float32 (its first layer 'fc1_weight' is [64, 16])") != std::string::npos);
    CHECK(r.out.find("input       [1, 16] float32 (from metadata)") != std::string::npos);
    CHECK(r.out.find("trial       ok in ") != std::string::npos);
    CHECK(r.out.find("output [1, 10] float32") != std::string::npos);
  }

  TEST_CASE("inspect a CNN with a profile that fits, and with a shape that does not: the hint names the fix") {
    auto& f = inspect_fixture();
    auto ok = run_cli({"inspect", f.cnn, "--profile", "image-classification"}, kProfilesEnv);
    CHECK(ok.code == 0);
    CHECK(ok.out.find("input       [1, 3, 224, 224] uint8 (from profile)") != std::string::npos);
    CHECK(ok.out.find("trial       ok in ") != std::string::npos);

    auto bad = run_cli({"inspect", f.cnn, "--shape", "1,16"}, kProfilesEnv);
    CHECK(bad.code == 1);  // a failed check, as a diff gate
    CHECK(bad.out.find("input       [1, 16] float32 (from --shape)") != std::string::npos);
    CHECK(bad.out.find(std::string("trial       FAILED: request 1: the model rejected the input [1, 16] float32: ") +
                       kCnnHint + "\n") != std::string::npos);
    // The raw libtorch text is not what the user reads.
    CHECK(bad.out.find("Expected") == std::string::npos);

    // The MLP through an image profile: no profile fits [N, 16], so the shape is the fix.
    auto mlp = run_cli({"inspect", f.mlp, "--profile", "image-classification"}, kProfilesEnv);
    CHECK(mlp.code == 1);
    CHECK(mlp.out.find("the model rejected the input [1, 3, 224, 224] float32: the model expects [N, 16] float32 "
                       "(its first layer 'fc1_weight' is [64, 16]): use --shape 1,16\n") != std::string::npos);
  }

  TEST_CASE("inspect --format json") {
    auto r = run_cli({"inspect", inspect_fixture().cnn, "--format", "json"});
    REQUIRE(r.code == 0);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(r.out).get(doc) == simdjson::SUCCESS);
    CHECK(std::string_view(doc["metadata"]["arch"]) == "cnn");
    CHECK(std::string_view(doc["forward"]["arguments"].at(0)["name"]) == "x");
    CHECK(std::string_view(doc["forward"]["arguments"].at(0)["type"]) == "Tensor");
    CHECK(json_number(doc["model"]["parameters"]) > 90000);
    CHECK(json_number(doc["model"]["parameter_bytes"]) == 4 * json_number(doc["model"]["parameters"]));
    CHECK(std::string_view(doc["input"]["source"]) == "metadata");
    CHECK(bool(doc["trial"]["ok"]));
    CHECK(json_number(doc["trial"]["output_shape"].at(1)) == 10);
  }

  TEST_CASE("a model taking token ids and a mask, with no profile: inspect, gen-trace --like and run all work") {
    TempDir dir;
    const std::string model = dir.file("text.pt"), trace = dir.file("t.jsonl");
    REQUIRE(run_cli({"gen-model", "--arch", "text", "-o", model}).code == 0);
    // Its metadata says [1, 128] int64: that alone was one input, and the trial failed ("'mask' is missing").
    auto r = run_cli({"inspect", model}, kProfilesEnv);
    REQUIRE_MESSAGE(r.code == 0, r.out << r.err);
    CHECK(r.out.find("expects     [N, L] int64 (its first layer 'embedding_weight' is [32000, 64])") !=
          std::string::npos);
    CHECK(r.out.find("input       ids [1, 128] int64 in [0, 32000), mask [1, 128] int64 = 1 (an embedding takes the "
                     "ids)") != std::string::npos);
    CHECK(r.out.find("trial       ok") != std::string::npos);
    auto g = run_cli({"gen-trace", "--like", model, "--seq-len", "24", "--requests", "12", "--keys", "4", "-o", trace},
                     kProfilesEnv);
    REQUIRE_MESSAGE(g.code == 0, g.err);
    CHECK(slurp(trace).find(R"("inputs":{"ids":{"shape":[1,24],"dtype":"int64","seed":)") != std::string::npos);
    CHECK(slurp(trace).find(R"("mask":{"shape":[1,24],"dtype":"int64","seed":)") != std::string::npos);
    // The default profile's to_float leaves int64 ids as they are.
    auto run = run_cli({"run", model, "--trace", trace, "--warmup", "1", "--no-progress"}, kProfilesEnv);
    CHECK_MESSAGE(run.code == 0, run.err);
    auto json = run_cli({"inspect", model, "--seq-len", "8", "--format", "json"}, kProfilesEnv);
    REQUIRE(json.code == 0);
    CHECK(json.out.find("\"name\": \"ids\",\n        \"shape\": [1, 8],\n        \"range\": [0, 32000]") !=
          std::string::npos);
  }

  TEST_CASE(
      "an embedding found by the graph, not its name, in a scripted and a traced model (skipped without "
      "python3-torch)") {
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
      MESSAGE("skipped: /usr/bin/python3 lacks torch (apt-get install python3-torch)");
      return;
    }
    TempDir dir;
    const std::string script = dir.write("mk.py", R"(import sys, torch
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(8000, 64)
        self.fc = torch.nn.Linear(64, 3)
    def forward(self, input_ids, attention_mask, token_type_ids):
        e = self.tok(input_ids) * attention_mask.unsqueeze(-1) + token_type_ids.unsqueeze(-1)
        return self.fc(e.mean(1))
m = M().eval()
torch.jit.script(m).save(sys.argv[1] + "/scripted.pt")
x = (torch.randint(0, 8000, (1, 16)), torch.ones(1, 16, dtype=torch.long), torch.zeros(1, 16, dtype=torch.long))
torch.jit.trace(m, x).save(sys.argv[1] + "/traced.pt")
)");
    REQUIRE(std::system(("/usr/bin/python3 " + script + " " + dir.str()).c_str()) == 0);
    for (const char* name : {"scripted.pt", "traced.pt"}) {
      CAPTURE(name);
      auto r = run_cli({"inspect", dir.file(name)}, kProfilesEnv);
      CHECK_MESSAGE(r.code == 0, r.out << r.err);
      CHECK(r.out.find("expects     [N, L] int64 (its first layer 'tok.weight' is [8000, 64])") != std::string::npos);
      CHECK(r.out.find("input_ids [1, 128] int64 in [0, 8000), attention_mask [1, 128] int64 = 1, token_type_ids [1, "
                       "128] int64 = 0") != std::string::npos);
    }
  }

  TEST_CASE("inspect: a missing model, a bad --shape: one line, exit 2") {
    auto r = run_cli({"inspect", "/nonexistent/m.pt"});
    CHECK(r.code == 2);
    CHECK(r.err == "inferprof: error: model '/nonexistent/m.pt' not found\n");
    auto s = run_cli({"inspect", inspect_fixture().mlp, "--shape", "1,x"});
    CHECK(s.code == 2);
    CHECK(s.err ==
          "inferprof: error: --shape '1,x': expected positive integers separated by commas, like 1,3,224,224\n");
  }

  TEST_CASE("run with a shape the model rejects: the same actionable line naming the trace line, exit 3") {
    auto& f = inspect_fixture();
    TempDir dir;
    const std::string trace = dir.write("t.jsonl", "{\"key\": \"a\", \"input\": {\"seed\": 1, \"shape\": [1, 16]}}\n");
    auto r = run_cli({"run", f.cnn, "--trace", trace, "--no-progress", "--warmup", "0", "--out", dir.file("out")},
                     kProfilesEnv);
    CHECK(r.code == 3);
    CHECK(r.err ==
          "inferprof: error: " + trace + ":1: the model rejected the input [1, 16] float32: " + kCnnHint + "\n");
    CHECK(dir_is_empty_or_missing(dir.file("out")));
  }
}
