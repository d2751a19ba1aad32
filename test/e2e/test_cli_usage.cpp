// End-to-end: the command line itself -- usage, unknown names with the closest
// match, renamed flags naming the new spelling, repeats, readable ranges, a CSV
// trace not named .csv, and trace.json's size cap.
#include <doctest/doctest.h>
#include <simdjson.h>

#include "cli_harness.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

struct UsageFixture {
  TempDir dir;
  std::string model = dir.file("mlp.pt");
  std::string trace = dir.file("requests.jsonl");
  static constexpr int kRequests = 200;
  UsageFixture() {
    make_model_and_trace(model, trace, {"--requests", std::to_string(kRequests), "--keys", "20", "--rate", "2000"});
  }
};
UsageFixture& usage_fixture() {
  static UsageFixture f;
  return f;
}

// Exit 2, nothing on stdout, and exactly this one line on stderr.
void check_usage_error(const std::vector<std::string>& args, const std::string& message) {
  CAPTURE(args);
  auto r = run_cli(args);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "inferprof: error: " + message + "\n");
}

}  // namespace

TEST_SUITE("e2e command line") {
  TEST_CASE("no arguments: a short usage on stderr, exit 2") {
    auto r = run_cli({});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("usage: inferprof COMMAND [OPTIONS]\n", 0) == 0);
    for (const char* cmd : {"run", "compare", "simulate", "diff", "store", "gen-model", "gen-trace", "convert"})
      CHECK_MESSAGE(r.err.find(std::string("\n  ") + cmd + " ") != std::string::npos, cmd);
    CHECK(count_lines(r.err) < 20);
  }

  TEST_CASE("an unknown command or option is named with the closest match") {
    check_usage_error({"rn"}, "unknown command 'rn': did you mean run?");
    check_usage_error({"simulte", "--trace", "t.jsonl"}, "unknown command 'simulte': did you mean simulate?");
    check_usage_error({"frobnicate"},
                      "unknown command 'frobnicate' (commands: run, compare, sweep, inspect, gen-model, gen-trace, "
                      "gen-images, store, diff, merge, "
                      "simulate, convert)");
    check_usage_error({"run", "m.pt", "--trce", "t.jsonl"}, "unknown option --trce: did you mean --trace?");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--concurency=2"},
                      "unknown option --concurency: did you mean --concurrency?");
    check_usage_error({"simulate", "--trace", "t.jsonl", "--tirer", "l1=lru:5"},
                      "unknown option --tirer: did you mean --tier?");
    // An option of another command says which.
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--repeat", "3"},
                      "unknown option --repeat for run: it is an option of compare");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--xyzzy"},
                      "unknown option --xyzzy for run (see inferprof run --help)");
    check_usage_error({"--verison"}, "unknown option --verison: did you mean --version?");
    check_usage_error({"store"}, "store needs a command: put, ls, rm (see inferprof store --help)");
    check_usage_error({"store", "lss", "/tmp"}, "unknown command 'store lss': did you mean store ls?");
    // Values that look like options are not options: a negative number.
    auto neg = run_cli({"gen-trace", "--zipf", "-1", "-o", "/dev/null"});
    CHECK(neg.err.find("unknown option") == std::string::npos);
  }

  TEST_CASE("renamed flags give an error naming the new spelling") {
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--cache", "l1,l2"},
                      "--cache was renamed: use --caches l1,l2");
    // Before any other complaint (here: --trace missing).
    check_usage_error({"run", "m.pt", "--cache=l1"}, "--cache was renamed: use --caches l1");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--preload-lead", "500"},
                      "--preload-lead was renamed: use --preload-lead-ms 500");
    check_usage_error({"compare", "m.pt", "--trace", "t.jsonl", "--preload-lead=20"},
                      "--preload-lead was renamed: use --preload-lead-ms 20");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--replica-timeout", "30"},
                      "--replica-timeout was renamed: use --replica-timeout-s 30");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--trace-json-requests", "100"},
                      "--trace-json-requests was replaced (trace.json is now capped by size): use --trace-json-max-mb");
    check_usage_error({"simulate", "--trace", "t.jsonl", "--warmup", "100"},
                      "--warmup was renamed: use --warmup-requests 100");
    check_usage_error({"simulate", "--trace", "t.jsonl", "--threads", "2"},
                      "--threads was renamed: use --curve-threads 2");
  }

  TEST_CASE("single-valued options given twice, --speed without --open-loop, readable ranges") {
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--caches", "l1", "--caches", "l2"},
                      "--caches given twice (l1 and l2): run takes one configuration, e.g. --caches l1,l2; use "
                      "compare to measure several");
    check_usage_error({"simulate", "--trace", "t.jsonl", "--format", "json", "--format=csv"},
                      "--format given twice (json and csv): give it once");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--verify", "--verify"},
                      "--verify given twice: give it once");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--limit", "0"},
                      "--limit: expected a whole number of at least 1, got 0");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--concurrency", "0"},
                      "--concurrency: expected a whole number of at least 1, got 0");
    // Past what the option holds: out of range, naming the largest (it read as "at least 1" before).
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--concurrency", "2147483648"},
                      "--concurrency: expected a whole number from 1 to 2147483647, got 2147483648 (out of range)");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--limit", "99999999999999999999"},
                      "--limit: expected a whole number from 1 to 9223372036854775807, got 99999999999999999999 (out "
                      "of range)");
    check_usage_error({"simulate", "--trace", "t.jsonl", "--curve-threads", "4294967296"},
                      "--curve-threads: expected a whole number from 0 to 4294967295, got 4294967296 (out of range)");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--concurrency", "-99999999999999999999"},
                      "--concurrency: expected a whole number of at least 1, got -99999999999999999999");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--speed", "-2", "--open-loop"},
                      "--speed: expected a number above 0, got -2");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--verify=1.5"},
                      "--verify: expected a fraction between 0 and 1, got 1.5");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--format", "xml"},
                      "--format: expected table, json, csv or markdown, got 'xml'");
    check_usage_error({"diff", "a", "b", "--format", "csv"}, "--format: expected table, json or markdown, got 'csv'");
    // Modes: each parsed once, here, and the error lists every value.
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--update", "later"},
                      "--update: expected sync, async or preload, got 'later'");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--replicas", "2", "--split", "key"},
                      "--split: expected rr or hash, got 'key'");
    check_usage_error({"compare", "m.pt", "--trace", "t.jsonl", "--mode", "paired"},
                      "--mode: expected lockstep or sequential, got 'paired'");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--speed", "2"},
                      "--speed 2 applies to --open-loop replays only: add --open-loop to release requests at their "
                      "ts_ms");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--rate", "50"},
                      "--rate 50 sets an open loop's arrivals: add --open-loop");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--open-loop", "--rate", "50", "--speed", "2"},
                      "--rate replaces the trace's arrivals, which --speed scales: give one of them");
    check_usage_error({"run", "m.pt", "--trace", "t.jsonl", "--open-loop", "--rate", "0"},
                      "--rate: expected a number above 0, got 0");
  }

  TEST_CASE("--verify is off unless given, and a bare --verify does not take the model path") {
    auto help = run_cli({"run", "--help"});
    CHECK(help.code == 0);
    CHECK(help.out.find("--verify [=FRACTION]") != std::string::npos);
    CHECK(help.out.find("Off unless given") != std::string::npos);
    CHECK(help.out.find("1.79769") == std::string::npos);
    auto& f = usage_fixture();
    auto r = run_cli({"run", "--caches", "l1", "--verify", f.model, "--trace", f.trace, "--limit", "40", "--format",
                      "json", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(r.out).get(doc) == simdjson::SUCCESS);
    CHECK(json_number(doc["requests"]) == 40);
  }

  TEST_CASE("run --replicas with --format csv prints the replicas as CSV, not the table") {
    auto& f = usage_fixture();
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--replicas", "2", "--format", "csv", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.rfind(
              "replica,status,requests,throughput_rps,mean_us,p50_us,p99_us,stale_served,stalled,stall_ms,host,share\n",
              0) == 0);
    CHECK(r.out.find("\n0,ok,100,") != std::string::npos);
    CHECK(r.out.find("\n1,ok,100,") != std::string::npos);
    CHECK(count_lines(r.out) == 3);
    // Options the replicas would reject are rejected once, before any starts.
    check_usage_error({"run", f.model, "--trace", f.trace, "--replicas", "2", "--speed", "2"},
                      "--speed 2 applies to --open-loop replays only: add --open-loop to release requests at their "
                      "ts_ms");
  }

  TEST_CASE("a CSV trace without the .csv name says how to have it read") {
    TempDir dir;
    // run and compare read a .csv (test_cli_csv_run.cpp); another name with a CSV first line is named.
    const std::string txt = dir.write("t.txt", "timestamp,key\n1,a\n");
    check_usage_error({"compare", "m.pt", "--trace", txt},
                      txt + ": a CSV trace: name it .csv to have it read as one (docs/trace-format.md#csv-traces)");
  }

  TEST_CASE("trace.json is capped by size and run and compare say how many requests it kept") {
    auto& f = usage_fixture();
    TempDir out;
    // 5,000 bytes: a few requests' events, far fewer than the trace's 200.
    auto r = run_cli(
        {"run", f.model, "--trace", f.trace, "--trace-json-max-mb", "0.005", "--out", out.file("r"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element summary;
    REQUIRE(parser.parse(slurp(out.path() / "r" / "summary.json")).get(summary) == simdjson::SUCCESS);
    const double kept = json_number(summary["reports"]["trace_json_requests"]);
    CHECK(kept > 0);
    CHECK(kept < UsageFixture::kRequests);
    CHECK(json_number(summary["reports"]["trace_json_max_bytes"]) == 5000);
    bool truncated = false;
    CHECK(summary["reports"]["trace_json_truncated"].get(truncated) == simdjson::SUCCESS);
    CHECK(truncated);
    CHECK(r.out.find(fmt::format("trace.json holds the first {} of {} requests (--trace-json-max-mb 0.005)",
                                 static_cast<int>(kept), UsageFixture::kRequests)) != std::string::npos);

    // The file itself: valid JSON, its events within the cap (the footer adds a little).
    const std::string trace = slurp(out.path() / "r" / "trace.json");
    simdjson::dom::parser p2;
    simdjson::dom::element doc;
    REQUIRE(p2.parse(trace).get(doc) == simdjson::SUCCESS);
    CHECK(trace.find("\"ph\":\"M\"") < 5000 + 100);
    CHECK(json_number(doc["otherData"]["trace_json_requests"]) == kept);
    std::size_t roots = 0;
    for (auto e : doc["traceEvents"].get_array())
      if (std::string_view(e["name"].get_string().value()) == "request") ++roots;
    CHECK(roots == static_cast<std::size_t>(kept));

    // The default (100 MB) keeps them all, and says nothing.
    auto all = run_cli({"run", f.model, "--trace", f.trace, "--out", out.file("all"), "--no-progress"});
    REQUIRE_MESSAGE(all.code == 0, all.err);
    CHECK(all.out.find("trace.json holds") == std::string::npos);
    simdjson::dom::parser p3;
    simdjson::dom::element s2;
    REQUIRE(p3.parse(slurp(out.path() / "all" / "summary.json")).get(s2) == simdjson::SUCCESS);
    CHECK(json_number(s2["reports"]["trace_json_requests"]) == UsageFixture::kRequests);

    // compare: each configuration's trace.json under its own folder.
    auto c = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "none", "--caches", "l1,l2", "--limit", "60",
                      "--trace-json-max-mb", "0.003", "--out", out.file("c"), "--no-progress"});
    REQUIRE_MESSAGE(c.code == 0, c.err);
    CHECK(c.out.find("\nnone/trace.json holds the first ") != std::string::npos);
    CHECK(c.out.find("\nl1+l2/trace.json holds the first ") != std::string::npos);

    check_usage_error({"run", f.model, "--trace", f.trace, "--trace-json-max-mb", "0"},
                      "--trace-json-max-mb: expected a number above 0, got 0");
  }
}
