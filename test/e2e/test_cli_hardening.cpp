// End-to-end regression tests for what an adversarial pass found (issue 13),
// through the binary: every case is one line on stderr, the right exit code,
// and nothing left behind.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <cstdint>
#include <set>

#include "cli_harness.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

struct Model {
  TempDir dir;
  std::string model = dir.file("mlp.pt");
  std::string trace = dir.file("requests.jsonl");
  Model() { make_model_and_trace(model, trace, {"--requests", "20", "--keys", "5"}); }
};
Model& model() {
  static Model m;
  return m;
}

void check_error(const CliResult& r, int code, const std::string& message) {
  CHECK(r.code == code);
  CHECK(r.err == "inferprof: error: " + message + "\n");
  CHECK(count_lines(r.err) == 1);
}

// "\x93NUMPY" v2.0 with a header of `header_len` bytes, padded to `total` bytes.
std::string npy_bytes(const std::string& header, std::uint32_t header_len, std::size_t total) {
  std::string out = "\x93NUMPY";
  out += '\x02';
  out += '\0';
  for (int i = 0; i < 4; ++i)
    out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  out += header;
  out.resize(std::max(total, out.size()), ' ');
  return out;
}

std::string sha256_of_run(const CliResult& r) {
  const std::string label = "model sha256";
  const auto at = r.out.find(label);
  if (at == std::string::npos) return "";
  const auto start = r.out.find_first_not_of(' ', at + label.size());
  return r.out.substr(start, r.out.find('\n', start) - start);
}

int count_index_models(const std::string& root) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.load(root + "/index.json").get(doc)) return -1;
  simdjson::dom::array models;
  if (doc["models"].get(models)) return -1;
  return static_cast<int>(models.size());
}

}  // namespace

TEST_SUITE("e2e hardening") {
  TEST_CASE("deeply nested JSON: run, simulate and convert fail on one line and leave nothing") {
    TempDir dir;
    std::string text;
    for (int i = 0; i < 30; ++i)
      text += fmt::format("{{\"id\":{},\"input\":{{\"seed\":{}}}}}\n", i, i);
    text += "{\"extra\":" + std::string(200000, '[') + std::string(200000, ']') + ",\"input\":{\"seed\":1}}\n";
    const std::string trace = dir.write("deep.jsonl", text);
    const std::string message = trace + ":31: nesting deeper than 64 arrays and objects";

    check_error(run_cli({"run", model().model, "--trace", trace, "--out", dir.file("run")}), 2, message);
    CHECK(dir_is_empty_or_missing(dir.file("run")));
    check_error(run_cli({"simulate", "--trace", trace, "--tier", "l1=lru:10", "--out", dir.file("sim")}), 2, message);
    CHECK(dir_is_empty_or_missing(dir.file("sim")));
    fs::create_directories(dir.file("conv"));
    check_error(run_cli({"convert", trace, "-o", dir.file("conv/t.iptrace")}), 2, message);
    CHECK(dir_is_empty_or_missing(dir.file("conv")));
  }

  TEST_CASE("trace values out of range and control characters") {
    TempDir dir;
    const std::string far = dir.write("far.jsonl", R"({"ts_ms":1e308,"input":{"seed":1}})"
                                                   "\n");
    check_error(run_cli({"run", model().model, "--trace", far, "--open-loop"}), 2,
                far + ":1: 'ts_ms' 1e+308 is out of range (at most 9200000000000, about 290 years)");
    // In range, but --speed stretches it past what a clock holds.
    const std::string slow = dir.write("slow.jsonl", R"({"ts_ms":0,"input":{"seed":1}})"
                                                     "\n"
                                                     R"({"ts_ms":9000000000000,"input":{"seed":1}})"
                                                     "\n");
    check_error(run_cli({"run", model().model, "--trace", slow, "--open-loop", "--speed", "0.001"}), 2,
                slow + ":2: 'ts_ms' 9000000000000 at --speed 0.001 is more than 290 years from the first request");
    const std::string esc = dir.write("esc.jsonl", R"({"event":"\u001b[2J\nhello","model":"m","version":"v"})"
                                                   "\n"
                                                   R"({"input":{"seed":1}})"
                                                   "\n");
    check_error(run_cli({"run", model().model, "--trace", esc}), 2,
                esc + ":1: unknown event '\\x1b[2J\\nhello' (expected model_update)");
    const std::string csv = dir.write("neg.csv", "timestamp,key\n5,a\n-3,b\n");
    check_error(run_cli({"simulate", "--trace", csv, "--tier", "l1=lru:10"}), 2,
                csv + ":3: timestamp '-3': must be >= 0");
  }

  TEST_CASE("npy inputs: a huge header length, overflowing shapes") {
    TempDir dir;
    const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 16), }\n";
    const std::string huge = dir.write("huge.npy", npy_bytes(header, 0xFFFFFFF0u, 192));
    const std::string trace = dir.write("t.jsonl", R"({"id":7,"input":{"file":"huge.npy"}})"
                                                   "\n");
    check_error(run_cli({"run", model().model, "--trace", trace, "--out", dir.file("out")}), 2,
                trace + ":1: input file '" + huge + "': header of 4294967280 bytes (at most 65536 supported)");
    CHECK(dir_is_empty_or_missing(dir.file("out")));

    const std::string wide_header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n";
    const std::string wide =
        dir.write("wide.npy", npy_bytes(wide_header, static_cast<std::uint32_t>(wide_header.size()), 0));
    const std::string t2 = dir.write("t2.jsonl", R"({"id":7,"input":{"file":"wide.npy"}})"
                                                 "\n");
    check_error(run_cli({"run", model().model, "--trace", t2}), 2,
                t2 + ":1: input file '" + wide + "': shape [4611686018427387904, 4]: more bytes than fit in 64 bits");

    const std::string t3 =
        dir.write("t3.jsonl", R"({"id":7,"input":{"file":"huge.npy","shape":[4294967296,4294967296,4]}})"
                              "\n");
    check_error(run_cli({"run", model().model, "--trace", t3}), 2,
                t3 + ":1: 'input.shape' [4294967296, 4294967296, 4] has more elements than fit in 64 bits");
  }

  TEST_CASE("models that are not regular files, empty, or not the expected sha256") {
    TempDir dir;
    check_error(run_cli({"run", "/dev/zero", "--trace", model().trace}), 2, "model '/dev/zero' is not a regular file");
    const std::string empty = dir.write("empty.pt", "");
    check_error(run_cli({"run", empty, "--trace", model().trace}), 2,
                "model '" + empty + "' is empty, not a TorchScript file");

    auto good = run_cli({"run", model().model, "--trace", model().trace, "--out", dir.file("out")});
    REQUIRE_MESSAGE(good.code == 0, good.err);
    const std::string sha = sha256_of_run(good);
    REQUIRE(sha.size() == 64);
    CHECK(slurp(dir.file("out/summary.json")).find("\"model_sha256\": \"" + sha + "\"") != std::string::npos);
    auto checked = run_cli({"run", model().model, "--trace", model().trace, "--model-sha256", sha});
    CHECK_MESSAGE(checked.code == 0, checked.err);

    // 200 bytes flipped mid-archive: libtorch may well load it; the hash does not match.
    std::string bytes = slurp(model().model);
    for (std::size_t i = bytes.size() / 2; i < bytes.size() / 2 + 200; ++i)
      bytes[i] = static_cast<char>(~bytes[i]);
    const std::string flipped = dir.write("flipped.pt", bytes);
    auto r = run_cli({"run", flipped, "--trace", model().trace, "--model-sha256", sha, "--out", dir.file("bad")});
    CHECK(r.code == 2);
    CHECK(r.err.rfind("inferprof: error: model '" + flipped + "': sha256 is ", 0) == 0);
    CHECK(r.err.find(", but --model-sha256 expects " + sha + "\n") != std::string::npos);
    CHECK(count_lines(r.err) == 1);
    CHECK(dir_is_empty_or_missing(dir.file("bad")));
    auto cmp = run_cli({"compare", flipped, "--trace", model().trace, "--caches", "none", "--caches", "l1",
                        "--model-sha256", sha, "--out", dir.file("cmp")});
    CHECK(cmp.code == 2);
    CHECK(cmp.err.rfind("inferprof: error: model '" + flipped + "': sha256 is ", 0) == 0);
    CHECK(dir_is_empty_or_missing(dir.file("cmp")));
    check_error(run_cli({"run", model().model, "--trace", model().trace, "--model-sha256", "abc"}), 2,
                "--model-sha256 'abc': expected 64 hex digits (as sha256sum prints)");
  }

  TEST_CASE("--threads and --verify bounds") {
    check_error(run_cli({"run", model().model, "--trace", model().trace, "--threads", "100000"}), 2,
                "--threads 100000: at most 1024 (0 means one per core)");
    auto r = run_cli({"run", model().model, "--trace", model().trace, "--verify=-1"});
    CHECK(r.code == 2);
    CHECK(r.err.find("--verify") != std::string::npos);
    CHECK(count_lines(r.err) == 1);
  }

  TEST_CASE("simulate --costs: a summary whose stages are not an object, and inf in requests.csv") {
    TempDir dir;
    const std::string summary =
        dir.write("run/summary.json", R"({"schema":"inferprof.summary/1","stages":5,"total":{"mean_us":10}})");
    check_error(run_cli({"simulate", "--trace", model().trace, "--tier", "l1=lru:10", "--costs", summary}), 2,
                "--costs: " + summary + ": 'stages' is missing or not an object (is this an inferprof summary.json?)");
    const std::string good =
        dir.write("run2/summary.json", R"({"schema":"inferprof.summary/1","stages":{},"total":{"mean_us":10}})");
    dir.write("run2/requests.csv", "total_us,input_us,preprocess_us,cache,ok\n10,1,1,none,true\ninf,1,1,none,true\n");
    check_error(run_cli({"simulate", "--trace", model().trace, "--tier", "l1=lru:10", "--costs", good}), 2,
                dir.file("run2/requests.csv") + ":3: 'inf' is not a number of µs in column 'total_us'");
  }

  TEST_CASE("store: symlinks are never followed by put or rm") {
    TempDir dir;
    const std::string root = dir.file("store");
    const std::string file = dir.write("model.bin", "model bytes");
    // A store elsewhere, whose model folder is linked into this one.
    REQUIRE(run_cli({"store", "put", dir.file("elsewhere"), "m@v1", file}).code == 0);
    fs::create_directories(root);
    fs::create_directory_symlink(dir.file("elsewhere/m"), root + "/m");
    check_error(run_cli({"store", "rm", root, "m@v1"}), 2,
                root + ": " + root + "/m is a symbolic link; a store's model and version folders must be real folders");
    CHECK(fs::exists(dir.file("elsewhere/m/v1/model.pt")));
    check_error(run_cli({"store", "put", root, "m@v2", file}), 2,
                root + ": " + root + "/m is a symbolic link; a store's model and version folders must be real folders");
    CHECK_FALSE(fs::exists(dir.file("elsewhere/m/v2")));
    // A version folder linked the same way.
    fs::create_directories(root + "/n");
    fs::create_directory_symlink(dir.file("elsewhere/m/v1"), root + "/n/v1");
    check_error(
        run_cli({"store", "rm", root, "n@v1"}), 2,
        root + ": " + root + "/n/v1 is a symbolic link; a store's model and version folders must be real folders");
    CHECK(fs::exists(dir.file("elsewhere/m/v1/model.pt")));
  }

  TEST_CASE("store put: folders, devices, empty files and overlong names are bad input") {
    TempDir dir;
    const std::string root = dir.file("store");
    fs::create_directories(dir.file("folder"));
    check_error(run_cli({"store", "put", root, "m@v1", dir.file("folder")}), 2,
                dir.file("folder") + ": the model file is not a regular file");
    check_error(run_cli({"store", "put", root, "m@v1", "/dev/zero"}), 2,
                "/dev/zero: the model file is not a regular file");
    const std::string empty = dir.write("empty.pt", "");
    check_error(run_cli({"store", "put", root, "m@v1", empty}), 2, empty + ": the model file is empty");
    CHECK(dir_is_empty_or_missing(root));
    const std::string file = dir.write("model.bin", "model bytes");
    const std::string name(300, 'a');
    check_error(run_cli({"store", "put", root, name + "@v1", file}), 2,
                "store put: the model: expected NAME@VERSION or NAME, each of letters, digits, '.', '_' and '-', at "
                "most 128 characters (e.g. resnet@v2), got '" +
                    name + "@v1'");
    fs::create_directories(root);
    check_error(run_cli({"store", "ls", root, name}), 2,
                "store ls: the model name: expected NAME@VERSION or NAME, each of letters, digits, '.', '_' and '-', "
                "at most 128 characters (e.g. resnet@v2), got '" +
                    name + "'");
  }

  TEST_CASE("store: 10 concurrent puts all reach index.json") {
    TempDir dir;
    const std::string file = dir.write("model.bin", "model bytes");
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      const std::string root = dir.file(fmt::format("store{}", round));
      std::string cmd;
      for (int i = 0; i < 10; ++i)
        cmd += fmt::format("{} store put {} m@v{} {} >/dev/null 2>&1 & ", shell_quote(INFERPROF_BINARY),
                           shell_quote(root), i, shell_quote(file));
      cmd += "wait";
      REQUIRE(std::system(cmd.c_str()) == 0);
      CHECK(count_index_models(root) == 10);
      auto ls = run_cli({"store", "ls", root, "--format", "csv"});
      CHECK(count_lines(ls.out) == 11);
    }
  }
}
