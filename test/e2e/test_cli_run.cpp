// End-to-end: `inferprof run` as a user runs it, checked through its report files.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <cmath>
#include <set>

#include "cli_harness.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

// One MLP and one trace for the whole binary: generating them is the slow part.
struct RunFixture {
  TempDir dir;
  std::string model = dir.file("mlp.pt");
  std::string trace = dir.file("requests.jsonl");
  static constexpr int kRequests = 300;
  RunFixture() {
    make_model_and_trace(model, trace, {"--requests", std::to_string(kRequests), "--keys", "40", "--rate", "2000"});
  }
};
RunFixture& run_fixture() {
  static RunFixture f;
  return f;
}

simdjson::dom::element parse_json(simdjson::dom::parser& parser, const std::string& text) {
  simdjson::dom::element doc;
  auto error = parser.parse(text).get(doc);
  REQUIRE_MESSAGE(!error, "invalid JSON: " << simdjson::error_message(error));
  return doc;
}

const std::vector<std::string> kReportFiles = {"summary.json",   "requests.csv", "stages.csv", "stacks.folded",
                                               "flamegraph.svg", "trace.json",   "report.html"};

void check_no_reports(const fs::path& out) {
  CHECK_MESSAGE(dir_is_empty_or_missing(out), "report files were left in " << out);
}

std::string write(const TempDir& dir, const std::string& name, const std::string& content) {
  std::ofstream(dir.file(name)) << content;
  return dir.file(name);
}

}  // namespace

TEST_SUITE("e2e run") {
  TEST_CASE("run writes six consistent reports") {
    auto& f = run_fixture();
    TempDir out;
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--out", out.file("r"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    for (const auto& name : kReportFiles)
      CHECK_MESSAGE(fs::is_regular_file(out.path() / "r" / name), name);
    // No temporary files remain next to them.
    CHECK(std::distance(fs::directory_iterator(out.path() / "r"), fs::directory_iterator{}) == 7);
    CHECK(r.out.find("compute") != std::string::npos);
    CHECK(r.out.find("n/a") != std::string::npos);  // h2d/d2h on CPU

    simdjson::dom::parser parser;
    std::string summary_text = slurp(out.path() / "r" / "summary.json");
    auto summary = parse_json(parser, summary_text);
    CHECK(json_number(summary["requests"]) == RunFixture::kRequests);
    // The machine's speed before the first request and after the last (docs/diff-and-ci.md).
    for (const char* when : {"before", "after"})
      for (const char* part : {"compute_us", "memory_us"})
        CHECK_MESSAGE(json_number(summary["run"]["speed_probe"][when][part]) > 0, when << " " << part);
    // Stage means plus overhead add up to the mean total (within 1%).
    double sum = 0;
    for (const char* stage : {"queue", "cache", "load", "input", "preprocess", "compute", "overhead"}) {
      auto s = summary["stages"][stage];
      REQUIRE_MESSAGE(s.error() == simdjson::SUCCESS, stage);
      sum += json_number(s["mean_us"]);
    }
    double total_mean = json_number(summary["total"]["mean_us"]);
    CHECK(total_mean > 0);
    CHECK(std::abs(sum - total_mean) <= 0.01 * total_mean);
    bool h2d_applicable = true;
    CHECK(summary["stages"]["h2d"]["applicable"].get(h2d_applicable) == simdjson::SUCCESS);
    CHECK_FALSE(h2d_applicable);

    // requests.csv: a header and one row per request.
    CHECK(count_lines(slurp(out.path() / "r" / "requests.csv")) == RunFixture::kRequests + 1);
    // stages.csv: a header, 10 stages (batch_wait n/a), the default profile's one op (to_float) and the total.
    const std::string stages = slurp(out.path() / "r" / "stages.csv");
    CHECK(count_lines(stages) == 13);
    CHECK(stages.find("\npreprocess.to_float,") != std::string::npos);

    // stacks.folded sums to the total span time (µs, rounded once).
    std::ifstream folded(out.path() / "r" / "stacks.folded");
    std::string line;
    double folded_sum = 0;
    std::size_t lines = 0;
    while (std::getline(folded, line)) {
      auto space = line.rfind(' ');
      REQUIRE(space != std::string::npos);
      CHECK(line.rfind("request;", 0) == 0);
      folded_sum += std::stod(line.substr(space + 1));
      ++lines;
    }
    CHECK(lines >= 4);
    double total_us = json_number(summary["total"]["total_us"]);
    CHECK(std::abs(folded_sum - std::round(total_us)) <= 1.0);

    // flamegraph.svg is well-formed XML (checked by a real XML parser).
    std::string svg = (out.path() / "r" / "flamegraph.svg").string();
    CHECK(
        std::system(("python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' " + shell_quote(svg))
                        .c_str()) == 0);
    CHECK(slurp(svg).find("<title>") != std::string::npos);

    // trace.json is valid JSON with one complete event per span.
    std::string trace_text = slurp(out.path() / "r" / "trace.json");
    simdjson::dom::parser trace_parser;
    auto trace = parse_json(trace_parser, trace_text);
    std::uint64_t complete = 0;
    std::set<std::int64_t> tids;
    for (auto e : trace["traceEvents"].get_array()) {
      std::string_view ph = e["ph"].get_string();
      if (ph == "X") {
        ++complete;
        tids.insert(e["tid"].get_int64());
      }
    }
    CHECK(complete == static_cast<std::uint64_t>(json_number(summary["reports"]["spans"])));
    // request root + input + preprocess + to_float + compute, per request
    CHECK(complete == 5u * RunFixture::kRequests);
    CHECK(tids == std::set<std::int64_t>{1});
  }

  TEST_CASE("reports that cannot be written (a full disk): the table is still printed, exit 3, no report file") {
    auto& f = run_fixture();
    TempDir out;
    // File size limited to 16 blocks and SIGXFSZ ignored: writes past the limit fail with EFBIG, as on a
    // full disk. The table fits under the limit; requests.csv and trace.json of 300 requests do not.
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--out", out.file("r"), "--no-progress"},
                     "trap '' XFSZ; ulimit -f 16;");
    CHECK_MESSAGE(r.code == 3, r.err);
    CHECK(r.out.find("total") != std::string::npos);  // the stage table with its figures
    CHECK(r.out.find("reports written") == std::string::npos);
    CHECK_MESSAGE(r.err.find("inferprof: error: cannot write '") == 0, r.err);
    CHECK(r.err.find("no report was written to " + out.file("r") + " (the output above holds the figures)") !=
          std::string::npos);
    check_no_reports(out.path() / "r");
  }

  TEST_CASE("--warmup-from without a warm-up (--warmup 0) is one line, exit 2") {
    auto& f = run_fixture();
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--warmup", "0", "--warmup-from", "k1", "--no-progress"});
    CHECK(r.code == 2);
    CHECK(r.err ==
          "inferprof: error: --warmup-from k1 picks the warm-up request, but there is no warm-up (--warmup "
          "0): give --warmup N, or drop --warmup-from\n");
    CHECK(r.out.empty());
  }

  TEST_CASE("--format prints the summary as json, csv or markdown") {
    auto& f = run_fixture();
    auto json = run_cli({"run", f.model, "--trace", f.trace, "--format", "json", "--limit", "20"});
    REQUIRE_MESSAGE(json.code == 0, json.err);
    simdjson::dom::parser parser;
    auto doc = parse_json(parser, json.out);
    CHECK(json_number(doc["requests"]) == 20);
    CHECK(json_number(doc["run"]["threads"]) == 1);

    auto csv = run_cli({"run", f.model, "--trace", f.trace, "--format", "csv", "--limit", "20"});
    REQUIRE(csv.code == 0);
    // The wall columns keep their names and places; CPU time follows.
    CHECK(csv.out.rfind("stage,count,mean_us,p50_us,p90_us,p99_us,max_us,share,cpu_mean_us,", 0) == 0);

    auto md = run_cli({"run", f.model, "--trace", f.trace, "--format", "markdown", "--limit", "20"});
    REQUIRE(md.code == 0);
    CHECK(md.out.find("| compute") != std::string::npos);
  }

  TEST_CASE("CPU sampling: 1 in N requests read the CPU clock, the others leave its cells empty, and it says so") {
    auto& f = run_fixture();
    TempDir out;
    // Both drivers sample the same requests (a hash of their position).
    std::vector<std::string> sampled_seqs[2];
    int k = 0;
    for (const char* driver : {"inline", "threaded"}) {
      CAPTURE(driver);
      const std::string dir = out.file(driver);
      auto r = run_cli(
          {"run", f.model, "--trace", f.trace, "--out", dir, "--no-progress", "--cpu-sample", "4", "--driver", driver});
      REQUIRE_MESSAGE(r.code == 0, r.err);
      CHECK(r.out.find("read on 1 in 4 requests (") != std::string::npos);
      simdjson::dom::parser parser;
      auto summary = parse_json(parser, slurp(fs::path(dir) / "summary.json"));
      CHECK(json_number(summary["cpu_sample"]["every"]) == 4);
      CHECK(json_number(summary["cpu_sample"]["clock_read_ns"]) > 0);
      const std::string_view clock = summary["cpu_sample"]["clock"].get_string().value();
      CHECK((clock == "perf task clock" || clock == "CLOCK_THREAD_CPUTIME_ID"));
      CHECK(std::string_view(summary["run"]["driver"].get_string().value()) == driver);
      const double sampled = json_number(summary["cpu_sample"]["requests"]);
      CHECK(sampled > 0.1 * RunFixture::kRequests);
      CHECK(sampled < 0.5 * RunFixture::kRequests);
      CHECK(json_number(summary["total"]["cpu_mean_us"]) > 0);
      // requests.csv: a row has all its CPU cells or none; the rows that have them are the ones counted.
      const std::string check = R"(
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cpu_cols = [c for c in rows[0].keys() if c.endswith('cpu_us') and c not in ('h2d_cpu_us', 'd2h_cpu_us')]
with_cpu = [r for r in rows if r['cpu_us'] != '']
for r in rows:
    cells = [r[c] != '' for c in cpu_cols]
    assert all(cells) or not any(cells), r
assert len(with_cpu) == int(sys.argv[2]), (len(with_cpu), sys.argv[2])
open(sys.argv[3], 'w').write(' '.join(r['seq'] for r in with_cpu))
)";
      const std::string script = out.file("check.py");
      std::ofstream(script) << check;
      const std::string seqs = out.file(std::string("seqs-") + driver);
      CHECK(
          std::system(("python3 " + shell_quote(script) + " " + shell_quote((fs::path(dir) / "requests.csv").string()) +
                       " " + std::to_string(static_cast<long>(sampled)) + " " + shell_quote(seqs))
                          .c_str()) == 0);
      sampled_seqs[k++].push_back(slurp(seqs));
    }
    CHECK(sampled_seqs[0] == sampled_seqs[1]);
  }

  TEST_CASE("CPU sampling by default: calibrated from the warm-up, and the reports agree with it") {
    auto& f = run_fixture();
    TempDir out;
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--out", out.file("r"), "--no-progress", "--format", "json"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    auto summary = parse_json(parser, r.out);
    const double every = json_number(summary["cpu_sample"]["every"]);
    const double sampled = json_number(summary["cpu_sample"]["requests"]);
    CHECK(every >= 1);
    CHECK(every <= 1000);
    CHECK(sampled >= 1);
    CHECK(sampled <= RunFixture::kRequests);
    if (every == 1) CHECK(sampled == RunFixture::kRequests);
  }

  TEST_CASE("--driver inline applies to a closed loop with one worker only, and a bad name is one line, exit 2") {
    auto& f = run_fixture();
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--driver", "inline", "--concurrency", "2", "--no-progress"});
    CHECK(r.code == 2);
    CHECK(r.err.find("--driver inline serves a closed loop with one worker") != std::string::npos);
    r = run_cli({"run", f.model, "--trace", f.trace, "--driver", "fast", "--no-progress"});
    CHECK(r.code == 2);
    CHECK(r.err.find("--driver") != std::string::npos);
  }

  TEST_CASE("INFERPROF_CPU_CLOCK: a value other than thread is one line naming it, exit 2, no report") {
    auto& f = run_fixture();
    TempDir out;
    for (const std::string cmd : {"run", "compare"}) {
      CAPTURE(cmd);
      auto r = run_cli({cmd, f.model, "--trace", f.trace, "--limit", "5", "--out", out.file(cmd), "--no-progress"},
                       "INFERPROF_CPU_CLOCK=thraed");
      CHECK(r.code == 2);
      CHECK(r.err ==
            "inferprof: error: INFERPROF_CPU_CLOCK=thraed: expected 'thread' (CLOCK_THREAD_CPUTIME_ID), or unset "
            "for the perf task clock\n");
      CHECK_FALSE(fs::exists(out.path() / cmd));
    }
  }

  TEST_CASE("thread CPU time beside wall time in every output, never above it") {
    auto& f = run_fixture();
    TempDir out;
    // Every request reads the CPU clock (--cpu-sample 1), so every row can be checked.
    // Both clocks: the task clock by default, and the one the environment forces.
    for (const std::string clock : {"", "thread"}) {
      CAPTURE(clock);
      auto r = run_cli({"run", f.model, "--trace", f.trace, "--limit", "100", "--out", out.file("r" + clock),
                        "--no-progress", "--cpu-sample", "1"},
                       clock.empty() ? "" : "INFERPROF_CPU_CLOCK=" + clock);
      REQUIRE_MESSAGE(r.code == 0, r.err);
      CHECK(r.out.find("cpu mean") != std::string::npos);
      CHECK(r.out.find("read on 1 in") == std::string::npos);  // no sampling to mention
      CHECK(r.out.find("off-cpu") != std::string::npos);

      // requests.csv, read by Python's csv module: the CPU columns come after the
      // old ones, and CPU time stays within wall time.
      const std::string check = R"(
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cols = list(rows[0].keys())
assert len(rows) == 100, len(rows)
assert cols.index('cpu_us') > cols.index('model_version'), cols
assert sum(float(r['cpu_us']) for r in rows) > 0, 'no CPU time recorded'
# Each CPU read sits between wall clock reads taken again when over 5 us
# apart (docs/reports.md), so no row may exceed its wall time by the 20 us of
# slack, however loaded the machine: a stall charged to the thread between
# the two clocks used to move CPU time into the next stage (3 rows in 100 on
# a loaded CI machine).
over = []
for r in rows:
    cpu, total, queue = float(r['cpu_us']), float(r['total_us']), float(r['queue_us'])
    if cpu > total - queue + 20: over.append((r['seq'], 'total', cpu, total))
    for s in ('input', 'preprocess', 'compute', 'overhead'):
        if float(r[s + '_cpu_us']) > float(r[s + '_us']) + 20: over.append((r['seq'], s))
    assert r['h2d_cpu_us'] == '' and r['d2h_cpu_us'] == '', 'copies are n/a on CPU'
assert not over, over
assert sum(float(r['cpu_us']) for r in rows) <= sum(float(r['total_us']) - float(r['queue_us']) for r in rows) + 100, 'CPU above wall in total'
)";
      const std::string script = out.file("check" + clock + ".py");
      std::ofstream(script) << check;
      CHECK(std::system(("python3 " + shell_quote(script) + " " +
                         shell_quote((out.path() / ("r" + clock) / "requests.csv").string()))
                            .c_str()) == 0);

      simdjson::dom::parser parser;
      auto summary = parse_json(parser, slurp(out.path() / ("r" + clock) / "summary.json"));
      if (clock == "thread")
        CHECK(std::string_view(summary["cpu_sample"]["clock"].get_string().value()) == "CLOCK_THREAD_CPUTIME_ID");
      for (const char* stage : {"input", "preprocess", "compute"}) {
        auto s = summary["stages"][stage];
        const double off = json_number(s["off_cpu"]);
        CHECK_MESSAGE(off >= 0, stage);
        CHECK_MESSAGE(off <= 1, stage);
        CHECK_MESSAGE(json_number(s["cpu_mean_us"]) <= json_number(s["mean_us"]) + 20, stage);
      }
      // The overhead's CPU time is a residual near 0 (docs/reports.md): no CPU figures for it.
      CHECK(summary["stages"]["overhead"]["cpu_mean_us"].error() == simdjson::NO_SUCH_FIELD);
      CHECK(summary["stages"]["overhead"]["off_cpu"].error() == simdjson::NO_SUCH_FIELD);
      CHECK(summary["stages"]["queue"]["cpu_mean_us"].error() == simdjson::NO_SUCH_FIELD);
      CHECK(json_number(summary["total"]["cpu_mean_us"]) > 0);
      CHECK(json_number(summary["total"]["cpu_mean_us"]) <= json_number(summary["total"]["mean_us"]) + 20);

      const std::string stages = slurp(out.path() / ("r" + clock) / "stages.csv");
      CHECK(stages.rfind(
                "stage,count,mean_us,p50_us,p90_us,p99_us,max_us,share,cpu_mean_us,cpu_p50_us,cpu_p99_us,off_cpu\n",
                0) == 0);
    }
  }

  TEST_CASE("--ops attributes compute to aten operators") {
    auto& f = run_fixture();
    TempDir out;
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--ops", "--limit", "50", "--out", out.file("r")});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    std::string folded = slurp(out.path() / "r" / "stacks.folded");
    CHECK(folded.find("request;compute;aten::linear") != std::string::npos);
    simdjson::dom::parser parser;
    auto summary = parse_json(parser, slurp(out.path() / "r" / "summary.json"));
    std::set<std::string> ops;
    for (auto op : summary["top_ops"].get_array())
      ops.insert(std::string(op["name"].get_string().value()));
    CHECK(ops.count("aten::linear") == 1);
    CHECK(ops.count("aten::relu") == 1);
  }

  TEST_CASE("closed loop with workers, open loop with queueing, --limit") {
    auto& f = run_fixture();
    TempDir out;
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--concurrency", "2", "--out", out.file("c")});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    std::string csv = slurp(out.path() / "c" / "requests.csv");
    CHECK(count_lines(csv) == RunFixture::kRequests + 1);
    simdjson::dom::parser parser;
    auto summary = parse_json(parser, slurp(out.path() / "c" / "summary.json"));
    CHECK(json_number(summary["run"]["concurrency"]) == 2);

    // 2000 req/s trace replayed 4x faster: requests arrive faster than one worker serves some of them.
    auto o = run_cli(
        {"run", f.model, "--trace", f.trace, "--open-loop", "--speed", "4", "--limit", "100", "--out", out.file("o")});
    REQUIRE_MESSAGE(o.code == 0, o.err);
    simdjson::dom::parser p2;
    auto open = parse_json(p2, slurp(out.path() / "o" / "summary.json"));
    CHECK(std::string(open["run"]["mode"].get_string().value()) == "open-loop");
    CHECK(json_number(open["requests"]) == 100);
    CHECK(json_number(open["wall_s"]) > 0);
  }

  TEST_CASE("gen-trace is reproducible") {
    TempDir dir;
    auto a = run_cli({"gen-trace", "--requests", "50", "--seed", "3", "-o", dir.file("a.jsonl")});
    auto b = run_cli({"gen-trace", "--requests", "50", "--seed", "3", "-o", dir.file("b.jsonl")});
    auto c = run_cli({"gen-trace", "--requests", "50", "--seed", "4", "-o", dir.file("c.jsonl")});
    REQUIRE(a.code == 0);
    CHECK(slurp(dir.file("a.jsonl")) == slurp(dir.file("b.jsonl")));
    CHECK(slurp(dir.file("a.jsonl")) != slurp(dir.file("c.jsonl")));
    CHECK(count_lines(slurp(dir.file("a.jsonl"))) == 50);
  }

  TEST_CASE("usage") {
    CHECK(run_cli({"--help"}).code == 0);
    auto r = run_cli({"run", "--bogus"});
    CHECK(r.code == 2);
    CHECK(r.err.rfind("inferprof: error: ", 0) == 0);
    CHECK(run_cli({}).code == 2);
  }
}

TEST_SUITE("e2e bad input") {
  // Each case: the exit code, the one stderr line, and no report files.
  struct Case {
    std::string name;
    int code;
    std::string message;  // expected stderr, after "inferprof: error: "
  };

  TEST_CASE("bad trace lines name the file and line - nothing is written") {
    auto& f = run_fixture();
    TempDir dir;
    const std::string good = R"({"id": 1, "input": {"seed": 1}})";
    std::vector<std::pair<std::string, std::string>> cases = {
        {good + "\n\n{\"id\": 2, \"input\": {\"seed\": 2}\n", "malformed JSON"},
        {R"({"id": "seven", "input": {"seed": 1}})", "field 'id' must be a non-negative integer"},
        {R"({"id": 1, "input": {"shape": [1, 16]}})",
         "'input' needs exactly one of seed, file, data, image, image_base64, text or text_file (found none)"},
        {R"({"id": 1, "input": {"seed": 1, "data": [1]}})",
         "'input' needs exactly one of seed, file, data, image, image_base64, text or text_file (found seed and data)"},
    };
    for (std::size_t i = 0; i < cases.size(); ++i) {
      CAPTURE(cases[i].second);
      std::string trace = write(dir, fmt::format("t{}.jsonl", i), cases[i].first + "\n");
      std::string out = dir.file(fmt::format("out{}", i));
      auto r = run_cli({"run", f.model, "--trace", trace, "--out", out});
      CHECK(r.code == 2);
      std::size_t expected_line = i == 0 ? 3 : 1;
      CHECK(r.err.rfind(fmt::format("inferprof: error: {}:{}: {}", trace, expected_line, cases[i].second), 0) == 0);
      CHECK(count_lines(r.err) == 1);
      check_no_reports(out);
    }
  }

  TEST_CASE("a bad line late in the trace still leaves no reports") {
    auto& f = run_fixture();
    TempDir dir;
    std::string text = slurp(f.trace) + "{\"id\": 9999, \"ts_ms\": \"late\", \"input\": {\"seed\": 1}}\n";
    std::string trace = write(dir, "late.jsonl", text);
    auto r = run_cli({"run", f.model, "--trace", trace, "--out", dir.file("out")});
    CHECK(r.code == 2);
    CHECK(r.err ==
          fmt::format("inferprof: error: {}:{}: field 'ts_ms' must be a number\n", trace, RunFixture::kRequests + 1));
    check_no_reports(dir.path() / "out");

    auto skip = run_cli({"run", f.model, "--trace", trace, "--skip-invalid", "--format", "json"});
    REQUIRE_MESSAGE(skip.code == 0, skip.err);
    simdjson::dom::parser parser;
    auto summary = parse_json(parser, skip.out);
    CHECK(json_number(summary["requests"]) == RunFixture::kRequests);
    CHECK(json_number(summary["run"]["skipped"]["invalid"]) == 1);
  }

  TEST_CASE("bad models, shapes, profiles, folders and traces") {
    auto& f = run_fixture();
    TempDir dir;
    std::string not_model = write(dir, "text.pt", "this is not a model\n");
    std::string truncated = dir.file("trunc.pt");
    fs::copy_file(f.model, truncated);
    fs::resize_file(truncated, fs::file_size(truncated) / 3);
    std::string wrong_shape = write(dir, "shape.jsonl",
                                    R"({"id": 41, "input": {"shape": [1, 8], "seed": 1}})"
                                    "\n");
    std::string empty = write(dir, "empty.jsonl", "\n\n");
    std::string no_ts = write(dir, "nots.jsonl",
                              R"({"id": 1, "input": {"seed": 1}})"
                              "\n");
    std::string bad_profile = write(dir, "bad.toml", "[[preprocess]]\nop = \"blur\"\n");
    std::string a_file = write(dir, "plain-file", "x");
    // What torch.save writes: a zip archive holding data.pkl (no TorchScript constants.pkl; made with
    // Python's zipfile, laid out as torch.save lays it out), and the legacy pickle with torch's magic number.
    const std::string saved = dir.file("state_dict.pt");
    REQUIRE(std::system(("python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1], \"w\"); "
                         "z.writestr(\"m/data.pkl\", b\"\\x80\\x02}q\\x00.\"); z.writestr(\"m/version\", b\"3\\n\")' " +
                         shell_quote(saved))
                            .c_str()) == 0);
    const std::string legacy =
        write(dir, "legacy.pt", std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.\x80\x02", 18));
    const auto torch_save = [](const std::string& path) {
      return fmt::format(
          "cannot load model '{}': written by torch.save (a state_dict or a pickled module), not TorchScript: save it "
          "with torch.jit.script(model).save(PATH) or torch.jit.trace(model, example).save(PATH)",
          path);
    };

    std::vector<std::pair<std::vector<std::string>, std::pair<int, std::string>>> cases = {
        {{"run", dir.file("missing.pt"), "--trace", f.trace},
         {2, fmt::format("model '{}' not found", dir.file("missing.pt"))}},
        {{"run", not_model, "--trace", f.trace},
         {3, fmt::format("cannot load model '{}': not a TorchScript archive, or a truncated one (", not_model)}},
        {{"run", truncated, "--trace", f.trace}, {3, fmt::format("cannot load model '{}': ", truncated)}},
        {{"run", saved, "--trace", f.trace}, {3, torch_save(saved)}},
        {{"run", legacy, "--trace", f.trace}, {3, torch_save(legacy)}},
        {{"run", f.model, "--trace", wrong_shape},
         {3, fmt::format("{}:1: the model rejected the input [1, 8] float32: the model expects [N, 16] float32 (its "
                         "first layer 'fc1_weight' is [64, 16]): use --shape 1,16",
                         wrong_shape)}},
        {{"run", f.model, "--trace", f.trace, "--profile", bad_profile},
         {2, fmt::format("{}:2: unknown preprocessing op 'blur' (expected one of: decode, to_tensor, to_float, "
                         "to_half, scale, normalize, resize, center_crop, layout, tokenize)",
                         bad_profile)}},
        {{"run", f.model, "--trace", empty}, {2, fmt::format("{}: the trace has no requests", empty)}},
        {{"run", f.model, "--trace", dir.file("nope.jsonl")},
         {2, fmt::format("cannot read trace '{}': No such file or directory", dir.file("nope.jsonl"))}},
        {{"run", f.model, "--trace", no_ts, "--open-loop"},
         {2, fmt::format("{}:1: open-loop replay needs 'ts_ms' on every request (this one has none); drop "
                         "--open-loop to replay closed-loop",
                         no_ts)}},
        {{"run", f.model, "--trace", f.trace, "--out", a_file + "/reports"},
         {2, fmt::format("cannot write reports to '{}/reports': ", a_file)}},
    };
    for (const auto& [args, expected] : cases) {
      CAPTURE(args[1]);
      CAPTURE(args[3]);
      auto full = args;
      std::string out = dir.file("out");
      if (std::find(full.begin(), full.end(), "--out") == full.end()) {
        full.push_back("--out");
        full.push_back(out);
      }
      auto r = run_cli(full);
      CHECK(r.code == expected.first);
      CHECK_MESSAGE(r.err.rfind("inferprof: error: " + expected.second, 0) == 0, r.err);
      CHECK(count_lines(r.err) == 1);
      check_no_reports(out);
    }
  }
}
