// End-to-end: `inferprof store put|ls|rm` through the built binary.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <fstream>

#include "cli_harness.hpp"
#include "http_server.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

TEST_SUITE("e2e store") {
  TEST_CASE("store put, ls and rm round-trip a file store") {
    TempDir dir;
    std::string root = dir.file("models"), url = "file://" + root;
    std::string v1 = dir.write("v1.pt", std::string(3000, 'a')), v2 = dir.write("v2.pt", std::string(5000, 'b'));

    auto put = run_cli({"store", "put", url, "m@v1", v1});
    REQUIRE(put.code == 0);
    CHECK(put.err.empty());
    simdjson::dom::parser parser;
    simdjson::dom::element meta = parser.parse(put.out);
    CHECK(std::string_view(meta["name"]) == "m");
    CHECK(std::string_view(meta["version"]) == "v1");
    CHECK(json_number(meta["size"]) == 3000);
    std::string sha = std::string(std::string_view(meta["sha256"]));
    CHECK(sha.size() == 64);
    CHECK(run_cli({"store", "put", url, "m@v2", v2}).code == 0);
    CHECK(run_cli({"store", "put", root, "other@1", v1}).code == 0);  // a plain folder works too
    CHECK(slurp(root + "/m/v1/model.pt") == std::string(3000, 'a'));

    auto ls = run_cli({"store", "ls", url});
    REQUIRE(ls.code == 0);
    CHECK(count_lines(ls.out) == 4);
    CHECK(ls.out.rfind("NAME   VERSION    SIZE  SHA256        CREATED", 0) == 0);
    CHECK(ls.out.find("m      v1       2.9 KB  " + sha.substr(0, 12)) != std::string::npos);

    auto only = run_cli({"store", "ls", url, "m", "--format", "json"});
    REQUIRE(only.code == 0);
    simdjson::dom::element list = parser.parse(only.out);
    simdjson::dom::array models = list["models"];
    CHECK(models.size() == 2);
    CHECK(std::string_view(models.at(1)["version"]) == "v2");

    auto csv = run_cli({"store", "ls", url, "--format", "csv"});
    CHECK(csv.out.rfind("name,version,size,sha256,created\nm,v1,3000," + sha + ",", 0) == 0);

    auto rm = run_cli({"store", "rm", url, "m@v1"});
    CHECK(rm.code == 0);
    CHECK(rm.out == "removed m@v1 from " + url + "\n");
    CHECK_FALSE(fs::exists(root + "/m/v1"));
    CHECK(count_lines(run_cli({"store", "ls", url}).out) == 3);
  }

  TEST_CASE("store ls: a version whose meta.json is damaged is left out with a warning, the others listed, exit 0") {
    TempDir dir;
    const std::string root = dir.file("models");
    const std::string file = dir.write("m.pt", "model bytes");
    REQUIRE(run_cli({"store", "put", root, "m@v1", file}).code == 0);
    REQUIRE(run_cli({"store", "put", root, "m@v2", file}).code == 0);
    {
      std::ofstream damaged(root + "/m/v2/meta.json", std::ios::trunc);
      damaged << "{not json";
    }
    auto ls = run_cli({"store", "ls", root, "--format", "csv"});
    CHECK_MESSAGE(ls.code == 0, ls.err);
    CHECK(count_lines(ls.out) == 2);
    CHECK(ls.out.find("\nm,v1,11,") != std::string::npos);
    CHECK(count_lines(ls.err) == 1);
    CHECK_MESSAGE(ls.err.rfind("inferprof: warning: " + root + "/m/v2/meta.json", 0) == 0, ls.err);
    CHECK(ls.err.find("(left out of the list)") != std::string::npos);
    // A put says the same of index.json, and the newest readable version still resolves.
    auto put = run_cli({"store", "put", root, "n@v1", file});
    CHECK(put.code == 0);
    CHECK(put.err.find("(left out of index.json)") != std::string::npos);
  }

  TEST_CASE("store: errors are one line with exit 2") {
    TempDir dir;
    std::string root = dir.file("models");
    std::string file = dir.write("m.pt", "model");
    REQUIRE(run_cli({"store", "put", root, "m@v1", file}).code == 0);

    auto check = [](const CliResult& r, const std::string& err) {
      CHECK(r.code == 2);
      CHECK(r.out.empty());
      CHECK(r.err == "inferprof: error: " + err + "\n");
    };
    check(run_cli({"store", "put", root, "m@v1", file}),
          root + ": m@v1 exists already (a version is immutable: put a new version, or rm this one first)");
    check(run_cli({"store", "put", root, "m", file}),
          "store put: the model: expected NAME@VERSION, got 'm' (no version)");
    check(run_cli({"store", "put", root, "m@", file}),
          "store put: the model: expected NAME@VERSION or NAME, each of letters, digits, '.', '_' and '-', at most 128 "
          "characters (e.g. resnet@v2), got 'm@' (nothing after '@')");
    check(run_cli({"store", "put", root, "m@v2", dir.file("absent.pt")}),
          dir.file("absent.pt") + ": cannot read the model file");
    CHECK_FALSE(fs::exists(root + "/m/v2"));
    check(run_cli({"store", "rm", root, "m@v9"}), root + ": no model m@v9 ('m' has v1)");
    check(run_cli({"store", "ls", root, "x"}), root + ": no model x (no versions of 'x')");
    check(run_cli({"store", "ls", dir.file("nowhere")}),
          dir.file("nowhere") + ": no such folder " + dir.file("nowhere"));
    check(run_cli({"store", "ls", "s3://bucket/models"}),
          "store URL 's3://bucket/models': unsupported scheme; expected a folder, file:///path or http(s)://host/path");
    check(run_cli({"store", "put", "http://127.0.0.1:1/models", "m@v1", file}),
          "http://127.0.0.1:1/models: an http(s) store is read-only: put and rm work on a file:// store (whose folder "
          "the server serves)");
    check(run_cli({"store", "rm", "http://127.0.0.1:1/models", "m@v1"}),
          "http://127.0.0.1:1/models: an http(s) store is read-only: put and rm work on a file:// store (whose folder "
          "the server serves)");
    auto usage = run_cli({"store"});
    CHECK(usage.code == 2);
    auto fmt_bad = run_cli({"store", "ls", root, "--format", "xml"});
    CHECK(fmt_bad.code == 2);
    CHECK(fmt_bad.err.find("--format") != std::string::npos);
  }

  TEST_CASE("store ls over HTTP reads the index that put wrote") {
    if (!HttpServer::available()) return;
    TempDir dir;
    std::string root = dir.file("models");
    std::string file = dir.write("m.pt", "model bytes");
    REQUIRE(run_cli({"store", "put", root, "m@v1", file}).code == 0);
    HttpServer http(root);
    auto ls = run_cli({"store", "ls", http.url(), "--format", "csv"});
    CHECK(ls.code == 0);
    CHECK(count_lines(ls.out) == 2);
    CHECK(ls.out.find("\nm,v1,11,") != std::string::npos);
    auto down = run_cli({"store", "ls", http.url() + "/status-503"});
    CHECK(down.code == 3);
    CHECK(down.err ==
          "inferprof: error: " + http.url() + "/status-503: GET " + http.url() + "/status-503/index.json: HTTP 503\n");
    // An index.json that never ends stops at the file store's cap on metadata (1 MiB), not at the memory's end.
    auto endless = run_cli({"store", "ls", http.url() + "/endless"});
    CHECK(endless.code == 3);
    CHECK(endless.err == "inferprof: error: " + http.url() + "/endless: GET " + http.url() +
                             "/endless/index.json: the body is over 1048576 bytes, more than the file can be\n");
  }
  TEST_CASE("run --store over HTTP: a model.pt larger than its meta.json states fails at that size, one line, exit 3") {
    if (!HttpServer::available()) return;
    TempDir dir;
    const std::string root = dir.file("models"), model = dir.file("m.pt"), trace = dir.file("t.jsonl");
    make_model_and_trace(model, trace, {"--requests", "20", "--keys", "5"});
    REQUIRE(run_cli({"store", "put", root, "m@v1", model}).code == 0);
    const auto stated = fs::file_size(root + "/m/v1/model.pt");
    {
      std::ofstream grown(root + "/m/v1/model.pt", std::ios::binary | std::ios::app);
      grown << std::string(4 << 20, 'x');  // 4 MiB more than meta.json says
    }
    HttpServer http(root);
    for (const std::string& base : {http.url(), http.url() + "/no-length"}) {
      auto r = run_cli({"run", "m@v1", "--store", base, "--trace", trace});
      CHECK(r.code == 3);
      CHECK(count_lines(r.err) == 1);
      CHECK_MESSAGE(r.err.find("GET " + base + "/m/v1/model.pt: the body is over " + std::to_string(stated) +
                               " bytes, the size its meta.json states: ") != std::string::npos,
                    r.err);
    }
  }
}
