// End-to-end: one meaning per output flag. --out DIR is a folder of files,
// -o/--output FILE the one file a generator or converter makes; the old
// spellings (convert --to, gen-images -o, gen-trace --update-every) are errors
// naming the new one, and write nothing.
#include <doctest/doctest.h>

#include "cli_harness.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

// Exit 2, nothing on stdout, exactly this one line on stderr, no file left.
void check_renamed(const std::vector<std::string>& args, const std::string& message, const std::string& not_made) {
  CAPTURE(args);
  auto r = run_cli(args);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "inferprof: error: " + message + "\n");
  CHECK_FALSE(fs::exists(not_made));
}

}  // namespace

TEST_SUITE("e2e output flags") {
  TEST_CASE("convert writes its one file with -o/--output, and --to names the new spelling") {
    TempDir dir;
    const std::string trace = dir.file("t.jsonl");
    REQUIRE(run_cli({"gen-trace", "--requests", "20", "--keys", "5", "-o", trace}).code == 0);

    check_renamed({"convert", trace, "--to", dir.file("a.iptrace")},
                  "--to was renamed: use --output " + dir.file("a.iptrace"), dir.file("a.iptrace"));
    check_renamed({"convert", trace, "--to=" + dir.file("b.iptrace")},
                  "--to was renamed: use --output " + dir.file("b.iptrace"), dir.file("b.iptrace"));

    for (const std::string flag : {"-o", "--output"}) {
      const std::string out = dir.file("c" + flag + ".iptrace");
      auto r = run_cli({"convert", trace, flag, out});
      CAPTURE(r.err);
      CHECK(r.code == 0);
      CHECK(fs::file_size(out) > 0);
    }
  }

  TEST_CASE("gen-images writes a folder with --out only, and -o names --out") {
    TempDir dir;
    const std::string imgs = dir.file("imgs");
    check_renamed({"gen-images", "-o", imgs, "--sizes", "4x4", "--formats", "png"}, "-o was renamed: use --out " + imgs,
                  imgs);
    auto r = run_cli({"gen-images", "--out", imgs, "--sizes", "4x4", "--formats", "png"});
    CAPTURE(r.err);
    CHECK(r.code == 0);
    CHECK(fs::exists(fs::path(imgs) / "4x4-0.png"));
  }

  TEST_CASE("gen-trace's update interval carries its unit: --update-every-ms") {
    TempDir dir;
    const std::string trace = dir.file("u.jsonl");
    check_renamed({"gen-trace", "--requests", "50", "--rate", "100", "--update-every", "100", "-o", trace},
                  "--update-every was renamed: use --update-every-ms 100", trace);
    auto r = run_cli({"gen-trace", "--requests", "50", "--rate", "100", "--update-every-ms", "100", "-o", trace});
    CAPTURE(r.err);
    REQUIRE(r.code == 0);
    // 50 requests at 100/s span about half a second: a few updates, not none.
    CHECK(count_of(slurp(trace), "\"model_update\"") >= 2);
  }

  TEST_CASE("-o stays a file flag: gen-model and gen-trace accept it, run and simulate do not") {
    TempDir dir;
    CHECK(run_cli({"gen-trace", "--requests", "5", "-o", dir.file("t.jsonl")}).code == 0);
    CHECK(run_cli({"gen-model", "--arch", "mlp", "-o", dir.file("m.pt")}).code == 0);
    auto r = run_cli({"simulate", "--trace", dir.file("t.jsonl"), "--tier", "l1=lru:10", "-o", dir.file("s")});
    CHECK(r.code == 2);
    CHECK_FALSE(fs::exists(dir.file("s")));
  }
}
