// End-to-end: run and compare read CSV request logs with a column mapping, as
// simulate does: a key per row (a synthetic input seeded by it), or an image
// or seed column; a bad mapping or row is one line, exit 2.
#include <doctest/doctest.h>

#include "cli_harness.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

struct CsvFixture {
  TempDir dir;
  std::string model = dir.file("mlp.pt");
  CsvFixture() {
    auto r = run_cli({"gen-model", "--arch", "mlp", "-o", model});
    if (r.code != 0) throw std::runtime_error("gen-model failed: " + r.err);
  }
};
CsvFixture& csv_fixture() {
  static CsvFixture f;
  return f;
}

void check_error(const std::vector<std::string>& args, const std::string& message) {
  CAPTURE(args);
  auto r = run_cli(args);
  CHECK(r.code == 2);
  CHECK(r.err == "inferprof: error: " + message + "\n");
}

}  // namespace

TEST_SUITE("e2e csv traces") {
  TEST_CASE("run replays an access log mapped with --csv-columns, equal keys being equal inputs") {
    auto& f = csv_fixture();
    TempDir dir;
    const std::string csv = dir.write("log.csv",
                                      "time_ms,path,status\n"
                                      "0,/a,200\n"
                                      "5.5,/b,200\n"
                                      "\n"
                                      "7,/a,200\n"
                                      "9,\"/c,with comma\",404\n");
    auto r = run_cli({"run", f.model, "--trace", csv, "--csv-columns", "ts=time_ms,key=path", "--caches", "l1",
                      "--warmup", "0", "--no-progress", "--format", "json", "--out", dir.file("out")});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.load(dir.file("out/summary.json")).get(doc) == simdjson::SUCCESS);
    CHECK(json_number(doc["requests"]) == 4);
    // /a twice: its second request is an L1 hit (the key is the path).
    const std::string requests = slurp(dir.file("out/requests.csv"));
    CHECK(requests.find("l1_hit") != std::string::npos);

    // --open-loop follows the ts column.
    auto open = run_cli({"run", f.model, "--trace", csv, "--csv-columns", "ts=time_ms,key=path", "--open-loop",
                         "--warmup", "0", "--no-progress"});
    CHECK_MESSAGE(open.code == 0, open.err);
  }

  TEST_CASE("compare reads a CSV trace with a seed column") {
    auto& f = csv_fixture();
    TempDir dir;
    std::string rows = "timestamp,key,seed\n";
    for (int i = 0; i < 12; ++i)
      rows += fmt::format("{},k{},{}\n", i, i % 3, i % 3);
    const std::string csv = dir.write("t.csv", rows);
    auto r = run_cli({"compare", f.model, "--trace", csv, "--csv-columns", "seed=seed", "--caches", "none", "--caches",
                      "l1", "--warmup", "0", "--no-progress", "--format", "json"});
    CHECK_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("\"l1\"") != std::string::npos);
  }

  TEST_CASE("image column: paths relative to the CSV") {
    TempDir dir;
    REQUIRE(run_cli({"gen-images", "--out", dir.file("imgs"), "--sizes", "64x48", "--formats", "jpeg,png"}).code == 0);
    const std::string csv = dir.write("img.csv", "key,file\na,imgs/64x48-0.jpg\nb,imgs/64x48-0.png\n");
    const std::string model = dir.file("cnn.pt");
    REQUIRE(run_cli({"gen-model", "--arch", "cnn", "-o", model}).code == 0);
    auto r = run_cli({"run", model, "--trace", csv, "--csv-columns", "image=file", "--profile",
                      "image-classification-jpeg", "--warmup", "0", "--no-progress"},
                     std::string("INFERPROF_PROFILES_DIR=") + INFERPROF_PROFILES_DIR);
    CHECK_MESSAGE(r.code == 0, r.err);
  }

  TEST_CASE("a bad mapping, a missing column, a bad row: one line naming the file and line, exit 2") {
    auto& f = csv_fixture();
    TempDir dir;
    const std::string csv = dir.write("t.csv", "time,path\n0,/a\nabc,/b\n");
    check_error({"run", f.model, "--trace", csv, "--csv-columns", "key=path,colour=x"},
                "--csv-columns 'key=path,colour=x': expected ts=NAME,key=NAME,size=NAME,image=NAME,seed=NAME (any of "
                "them; an empty NAME for ts or size means no such column)");
    check_error({"run", f.model, "--trace", csv, "--no-progress"},
                csv + ":1: no key column 'key' in the header 'time,path' (choose it with --csv-columns key=NAME)");
    check_error({"run", f.model, "--trace", csv, "--csv-columns", "key=path,image=file", "--no-progress"},
                csv + ":1: no image column 'file' in the header 'time,path' (named by --csv-columns image=file)");
    check_error({"run", f.model, "--trace", csv, "--csv-columns", "ts=time,key=path", "--no-progress", "--out",
                 dir.file("out")},
                csv + ":3: timestamp 'abc': expected a number (ms)");
    CHECK(dir_is_empty_or_missing(dir.file("out")));
    // --skip-invalid counts the bad row instead.
    auto skip = run_cli({"run", f.model, "--trace", csv, "--csv-columns", "ts=time,key=path", "--skip-invalid",
                         "--warmup", "0", "--no-progress"});
    CHECK_MESSAGE(skip.code == 0, skip.err);
    CHECK(skip.out.find("skipped 1 invalid trace line") != std::string::npos);
    // A mapping for a trace that is not CSV.
    const std::string jsonl = dir.write("t.jsonl", "{\"input\": {\"seed\": 1}}\n");
    check_error({"run", f.model, "--trace", jsonl, "--csv-columns", "key=path"},
                "--csv-columns applies to a .csv trace; '" + jsonl + "' is read as JSON lines");
  }
}
