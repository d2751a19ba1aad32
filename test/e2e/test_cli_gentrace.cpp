// End-to-end: traces that fit -- gen-trace --like MODEL [--profile P] takes
// the input a trial forward accepted, --images DIR and --texts FILE make a
// Zipf/Poisson trace with one key per file or line; run replays them.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "cli_harness.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

TEST_SUITE("e2e gen-trace") {
  TEST_CASE("--like takes the shape and dtype the profile and model give, and run replays it") {
    TempDir dir;
    const std::string model = dir.file("cnn.pt"), trace = dir.file("t.jsonl");
    REQUIRE(run_cli({"gen-model", "--arch", "cnn", "-o", model}).code == 0);
    auto g = run_cli({"gen-trace", "--like", model, "--profile", "image-classification", "--requests", "6", "--keys",
                      "3", "-o", trace},
                     kProfilesEnv);
    REQUIRE_MESSAGE(g.code == 0, g.err);
    CHECK(g.out.find("inputs [1, 3, 224, 224] uint8 (from profile, tried: ok)") != std::string::npos);
    const std::string text = slurp(trace);
    CHECK(text.find(R"("input":{"shape":[1,3,224,224],"dtype":"uint8","seed":)") != std::string::npos);
    auto r =
        run_cli({"run", model, "--trace", trace, "--profile", "image-classification", "--warmup", "0", "--no-progress"},
                kProfilesEnv);
    CHECK_MESSAGE(r.code == 0, r.err);

    // Without a profile: the model's metadata.
    auto m = run_cli({"gen-trace", "--like", model, "--requests", "2", "-o", trace});
    REQUIRE(m.code == 0);
    CHECK(slurp(trace).find(R"("shape":[1,3,64,64],"dtype":"float32")") != std::string::npos);

    // A profile that does not fit: the trial's line, exit 2, no trace.
    const std::string mlp = dir.file("mlp.pt"), none = dir.file("none.jsonl");
    REQUIRE(run_cli({"gen-model", "--arch", "mlp", "-o", mlp}).code == 0);
    auto bad = run_cli({"gen-trace", "--like", mlp, "--profile", "image-classification", "-o", none}, kProfilesEnv);
    CHECK(bad.code == 2);
    CHECK(bad.err.find("inferprof: error: --like " + mlp +
                       ": request 1: the model rejected the input [1, 3, 224, 224] float32: the model expects [N, 16] "
                       "float32") == 0);
    CHECK(!fs::exists(none));
    // --like and --shape contradict each other.
    CHECK(run_cli({"gen-trace", "--like", mlp, "--shape", "1,16", "-o", none}).code == 2);
  }

  TEST_CASE("--images DIR: one key per picture, paths relative to the trace, and run replays it") {
    TempDir dir;
    REQUIRE(
        run_cli({"gen-images", "--out", dir.file("imgs"), "--sizes", "96x64,64x48", "--formats", "jpeg,png"}).code ==
        0);
    dir.write("imgs/notes.txt", "not an image\n");
    fs::create_directories(dir.file("traces"));
    const std::string trace = dir.file("traces/t.jsonl");
    auto g = run_cli({"gen-trace", "--images", dir.file("imgs"), "--requests", "20", "--zipf", "1.2", "-o", trace});
    REQUIRE_MESSAGE(g.code == 0, g.err);
    CHECK(g.out.find("20 requests over 4 keys") != std::string::npos);
    const std::string text = slurp(trace);
    CHECK(count_lines(text) == 20);
    CHECK(text.find(R"("key":"../imgs/64x48-0.jpg","input":{"image":"../imgs/64x48-0.jpg"}})") != std::string::npos);
    CHECK(text.find("notes.txt") == std::string::npos);
    CHECK(text.find("\"ts_ms\":") != std::string::npos);
    const std::string model = dir.file("resnet18.pt");
    REQUIRE(run_cli({"gen-model", "--arch", "resnet18", "-o", model}).code == 0);
    auto r = run_cli({"run", model, "--trace", trace, "--profile", "image-classification-jpeg", "--limit", "3",
                      "--warmup", "0", "--no-progress"},
                     kProfilesEnv);
    CHECK_MESSAGE(r.code == 0, r.err);

    // --keys takes a seeded sample of N pictures, and says how many it left out; more than there are is an error.
    auto two = run_cli({"gen-trace", "--images", dir.file("imgs"), "--keys", "2", "-o", trace});
    CHECK(two.code == 0);
    CHECK_MESSAGE(two.err.find("inferprof: gen-trace: --keys 2 uses 2 of the 4 images (a sample by --seed); 2 left "
                               "out\n") != std::string::npos,
                  two.err);
    std::set<std::string> keys;
    std::istringstream in(slurp(trace));
    for (std::string line; std::getline(in, line);)
      keys.insert(line.substr(line.find("\"key\":")));
    CHECK(keys.size() <= 2);
    auto many = run_cli({"gen-trace", "--images", dir.file("imgs"), "--keys", "9", "-o", trace});
    CHECK(many.code == 2);
    CHECK(many.err == "inferprof: error: --keys 9: " + dir.file("imgs") + " has only 4 images\n");
    auto empty = run_cli({"gen-trace", "--images", dir.file("traces"), "-o", dir.file("x.jsonl")});
    CHECK(empty.code == 2);
    CHECK(empty.err ==
          "inferprof: error: --images '" + dir.file("traces") +
              "': no JPEG, PNG or WebP files in it; skipped 1 file not JPEG, PNG or WebP by their bytes (1 .jsonl)\n");
  }

  TEST_CASE("--images tells what it skipped, takes images by their bytes, and never writes an empty path") {
    TempDir dir;
    REQUIRE(run_cli({"gen-images", "--out", dir.file("imgs"), "--sizes", "8x6", "--formats", "jpeg,png"}).code == 0);
    dir.write("imgs/notes.txt", "hello");
    dir.write("imgs/fake.jpg", "GIF89a not really");
    fs::copy_file(dir.file("imgs/8x6-0.png"), dir.file("imgs/PHOTO.PNG_"));  // recognised by its bytes
    // From inside the folder, writing the trace above it: the paths were empty ("image":"").
    auto g = run_cli({"gen-trace", "--images", ".", "--requests", "30", "-o", "../t.jsonl"},
                     "cd " + shell_quote(dir.file("imgs")) + " &&");
    REQUIRE_MESSAGE(g.code == 0, g.err);
    CHECK(
        g.err ==
        "inferprof: gen-trace: --images '.': skipped 2 files not JPEG, PNG or WebP by their bytes (1 .jpg, 1 .txt)\n");
    const std::string text = slurp(dir.file("t.jsonl"));
    CHECK(text.find("\"image\":\"\"") == std::string::npos);
    CHECK(text.find("\"image\":\"imgs/8x6-0.jpg\"") != std::string::npos);
    CHECK(text.find("\"image\":\"imgs/PHOTO.PNG_\"") != std::string::npos);
    CHECK(text.find("fake.jpg") == std::string::npos);
  }

  TEST_CASE("--texts FILE: one key per non-blank line, as input.text, JSON-escaped") {
    TempDir dir;
    const std::string texts = dir.write("texts.txt", "the cat sat\n\n  \nsaid \"hi\"\\tthere\r\nthird line\n");
    const std::string trace = dir.file("t.jsonl");
    auto g = run_cli({"gen-trace", "--texts", texts, "--requests", "30", "--rate", "0", "-o", trace});
    REQUIRE_MESSAGE(g.code == 0, g.err);
    CHECK(g.out.find("30 requests over 3 keys") != std::string::npos);
    const std::string text = slurp(trace);
    CHECK(count_lines(text) == 30);
    CHECK(text.find("\"ts_ms\"") == std::string::npos);
    CHECK(text.find(R"("key":"t-0","input":{"text":"the cat sat"}})") != std::string::npos);
    CHECK(text.find(R"({"text":"said \"hi\"\\tthere"})") != std::string::npos);
    auto none = run_cli({"gen-trace", "--texts", dir.write("blank.txt", "\n \n"), "-o", trace});
    CHECK(none.code == 2);
    CHECK(none.err.find("no non-blank lines") != std::string::npos);
    CHECK(g.err.empty());
    // Bytes that are not UTF-8 become U+FFFD in the trace: said, with how many lines.
    const std::string latin1 = dir.write("latin1.txt", "caf\xe9 au lait\nplain\n\xff\xfe\n");
    auto bad = run_cli({"gen-trace", "--texts", latin1, "--requests", "5", "-o", trace});
    REQUIRE_MESSAGE(bad.code == 0, bad.err);
    CHECK(bad.err == "inferprof: gen-trace: --texts '" + latin1 +
                         "': 2 of 3 lines are not valid UTF-8: the trace has U+FFFD in place of their bad bytes\n");
  }

  TEST_CASE("--images: which picture is the most requested follows --seed, not the files' names") {
    TempDir dir;
    REQUIRE(run_cli({"gen-images", "--out", dir.file("imgs"), "--sizes", "96x64,64x48,32x32", "--formats", "jpeg,png"})
                .code == 0);
    std::set<std::string> hottest;
    for (int seed = 1; seed <= 6; ++seed) {
      const std::string trace = dir.file(fmt::format("t{}.jsonl", seed));
      auto g = run_cli({"gen-trace", "--images", dir.file("imgs"), "--requests", "300", "--zipf", "1.5", "--seed",
                        std::to_string(seed), "-o", trace});
      REQUIRE_MESSAGE(g.code == 0, g.err);
      CHECK(g.out.find("300 requests over 6 keys") != std::string::npos);  // every picture is a key
      std::map<std::string, int> count;
      std::istringstream in(slurp(trace));
      for (std::string line; std::getline(in, line);) {
        const std::size_t at = line.find("\"key\":\"") + 7;
        ++count[line.substr(at, line.find('"', at) - at)];
      }
      CHECK(count.size() == 6);
      hottest.insert(std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) {
                       return a.second < b.second;
                     })->first);
    }
    // Ranked by name, the first file (32x32-0.jpg) was the hottest for every seed.
    CHECK(hottest.size() >= 3);
  }
}
