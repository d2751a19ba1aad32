// End-to-end: `--device cuda`. Every build checks the device option's errors;
// a build without CUDA checks the "no CUDA support" exit; a CUDA build checks
// a real GPU run when a device is there, and exit 3 when none is.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <iostream>

#include "cli_harness.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

// From CMake: whether this build has GPU support (0 or 1), as a value, not an #if.
constexpr bool kCudaBuild = INFERPROF_E2E_HAS_CUDA != 0;

struct GpuFixture {
  TempDir dir;
  std::string model = dir.file("mlp.pt");
  std::string trace = dir.file("requests.jsonl");
  GpuFixture() { make_model_and_trace(model, trace, {"--requests", "50", "--keys", "10"}); }
};
GpuFixture& gpu_fixture() {
  static GpuFixture f;
  return f;
}

bool device_visible() {
  // nvidia-smi lists GPUs the driver sees; absent or failing means no device.
  return std::system("nvidia-smi -L >/dev/null 2>&1") == 0;
}

}  // namespace

TEST_SUITE("cli gpu") {
  TEST_CASE("--device and the GPU options are validated on every build") {
    auto& f = gpu_fixture();
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--device", "tpu"});
    CHECK(r.code == 2);
    CHECK(r.err == "inferprof: error: --device tpu: expected cpu, cuda or cuda:N\n");
    r = run_cli({"run", f.model, "--trace", f.trace, "--device", "cuda:x"});
    CHECK(r.code == 2);
    r = run_cli({"run", f.model, "--trace", f.trace, "--pinned"});
    CHECK(r.code == 2);
    CHECK(r.err == "inferprof: error: --pinned and --gpu-trace apply to --device cuda only (this run is on cpu)\n");
    r = run_cli({"run", f.model, "--trace", f.trace, "--gpu-trace", "maybe", "--device", "cuda"});
    CHECK(r.code == 2);
    // --device cpu overrides a profile that says cuda.
    std::ofstream(f.dir.file("cuda.toml")) << "name = \"c\"\n[model]\ndevice = \"cuda\"\n";
    r = run_cli({"run", f.model, "--trace", f.trace, "--profile", f.dir.file("cuda.toml"), "--device", "cpu",
                 "--format", "json", "--no-progress"});
    CHECK(r.code == 0);
    CHECK(r.out.find("\"device\": \"cpu\"") != std::string::npos);
  }

  TEST_CASE("a build without CUDA says so and how to get it - exit 2, no reports") {
    if (kCudaBuild) {
      std::cout << "skipped: this build has CUDA support (the no-CUDA message cannot appear)\n";
      return;
    }
    auto& f = gpu_fixture();
    const fs::path out = f.dir.path() / "out-nocuda";
    for (const std::vector<std::string>& how : {std::vector<std::string>{"--device", "cuda"},
                                                {"--device", "cuda:1"},
                                                {"--profile", f.dir.file("cuda.toml")}}) {
      std::ofstream(f.dir.file("cuda.toml")) << "name = \"c\"\n[model]\ndevice = \"cuda\"\n";
      std::vector<std::string> args = {"run", f.model, "--trace", f.trace, "--out", out.string()};
      args.insert(args.end(), how.begin(), how.end());
      auto r = run_cli(args);
      CHECK(r.code == 2);
      CHECK(r.err.find("this build has no CUDA support; rebuild with a CUDA libtorch on CMAKE_PREFIX_PATH and "
                       "-DINFERPROF_WITH_CUDA=ON") != std::string::npos);
      CHECK(r.err.rfind("inferprof: error: device 'cuda", 0) == 0);
      CHECK(count_lines(r.err) == 1);
      CHECK(dir_is_empty_or_missing(out));
    }
    auto r = run_cli({"compare", f.model, "--trace", f.trace, "--device", "cuda"});
    CHECK(r.code == 2);
    CHECK(r.err.find("this build has no CUDA support") != std::string::npos);
  }

  TEST_CASE("a CUDA build without a device exits 3 with one clear line") {
    if (!kCudaBuild || device_visible()) {
      std::cout << "skipped: " << (kCudaBuild ? "a GPU is visible" : "this build has no CUDA support") << "\n";
      return;
    }
    auto& f = gpu_fixture();
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--device", "cuda"});
    CHECK(r.code == 3);
    CHECK(r.err.find("no CUDA device is usable") != std::string::npos);
    CHECK(count_lines(r.err) == 1);
  }

  TEST_CASE("a GPU run reports GPU stages, kernels and CUPTI counts") {
    if (!kCudaBuild || !device_visible()) {
      std::cout << "skipped: " << (kCudaBuild ? "no GPU visible (nvidia-smi -L)" : "this build has no CUDA support")
                << "\n";
      return;
    }
    auto& f = gpu_fixture();
    const fs::path out = f.dir.path() / "out-gpu";
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--device", "cuda", "--out", out.string(), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(!parser.parse(slurp(out / "summary.json")).get(doc));
    CHECK(json_number(doc["gpu"]["dropped_records"]) == 0);
    CHECK(json_number(doc["gpu"]["kernels_per_request"]) > 0);
    CHECK(json_number(doc["stages"]["h2d"]["mean_us"]) > 0);
    CHECK(json_number(doc["stages"]["compute"]["mean_us"]) > 0);
    const std::string folded = slurp(out / "stacks.folded");
    CHECK(folded.find("request;compute;") != std::string::npos);
    const std::string csv = slurp(out / "requests.csv");
    CHECK(csv.find(",kernels,h2d_bytes,d2h_bytes,gpu_idle_us,cpu_us,") != std::string::npos);
  }
}
