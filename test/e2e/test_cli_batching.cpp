// End-to-end: dynamic batching (--max-batch, --batch-delay-us) as a user runs
// it: batches form, every batched output equals the request's output alone
// (--verify), the batch_wait stage and the batch sizes are in every report,
// the batches' timeline is consistent, and the settings that cannot batch are
// refused with nothing written.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <fstream>

#include "cli_harness.hpp"
#include "test_util.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

struct BatchFixture {
  TempDir dir;
  std::string model = dir.file("mlp.pt");
  std::string trace = dir.file("t.jsonl");  // 240 requests over 60 keys
  BatchFixture() { make_model_and_trace(model, trace, {"--requests", "240", "--keys", "60", "--rate", "2000"}); }
};
BatchFixture& batching_fixture() {
  static BatchFixture f;
  return f;
}

// The batches' timeline from trace.json and requests.csv, read by Python:
// every request of a batch carries the batch's one forward (the same compute
// span), so the distinct compute spans are the batches; one model runs one
// batch at a time, so they never overlap; each holds as many requests as the
// batch column of its requests says; and a request's wait for its batch ends
// before that batch's forward starts.
constexpr const char* kTimelineCheck = R"(
import csv, json, sys
folder, max_batch = sys.argv[1], int(sys.argv[2])
rows = list(csv.DictReader(open(folder + '/requests.csv')))
events = json.load(open(folder + '/trace.json'))['traceEvents']
by_seq, current = {}, None
for e in events:
    if e.get('ph') != 'X': continue
    if e['name'] == 'request': current = by_seq.setdefault(e['args']['seq'], {})
    elif e.get('cat') == 'stage': current[e['name']] = (round(e['ts'], 3), round(e['dur'], 3))
assert len(by_seq) == len(rows), (len(by_seq), len(rows))
batches = {}
for r in rows:
    b = int(r['batch'])
    assert 1 <= b <= max_batch, r
    spans = by_seq[int(r['seq'])]
    c = spans['compute']
    batches.setdefault(c, []).append(b)
    w = spans['batch_wait']
    assert abs(w[1] - float(r['batch_wait_us'])) < 0.01, (w, r['batch_wait_us'])
    assert w[0] + w[1] <= c[0] + 0.01, ('waited past its batch start', w, c)
for c, sizes in batches.items():
    assert all(s == len(sizes) for s in sizes), ('a batch of', len(sizes), 'requests says', sizes)
spans = sorted(batches)
for a, b in zip(spans, spans[1:]):
    assert a[0] + a[1] <= b[0] + 0.01, ('two batches ran at once', a, b)
assert any(len(s) > 1 for s in batches.values()), 'no batch of more than one request'
print(len(batches), 'batches')
)";

}  // namespace

TEST_SUITE("e2e batching") {
  TEST_CASE("run --max-batch: batches form, each batched output equals its output alone, batch_wait is a stage") {
    auto& f = batching_fixture();
    TempDir out;
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--concurrency", "8", "--max-batch", "4", "--batch-delay-us",
                      "2000", "--verify", "--out", out.file("o"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("batches of up to 4, delay 2.000 ms") != std::string::npos);
    CHECK(r.out.find("\nbatching ") != std::string::npos);
    CHECK(r.out.find("\nbatch_wait ") != std::string::npos);
    CHECK(r.out.find("of the batched results recomputed one at a time (100% sampled): 0 mismatches") !=
          std::string::npos);

    simdjson::dom::parser parser;
    simdjson::dom::element s = parser.parse(slurp(out.path() / "o" / "summary.json"));
    CHECK(std::int64_t(s["run"]["max_batch"]) == 4);
    auto b = s["batching"];
    CHECK(std::uint64_t(b["computed"]) == 240);
    simdjson::dom::array sizes = b["batches_by_size"];
    REQUIRE(sizes.size() == 4);
    std::uint64_t requests = 0, batches = 0, k = 1;
    for (auto n : sizes) {
      requests += k++ * std::uint64_t(n);
      batches += std::uint64_t(n);
    }
    CHECK(requests == 240);  // every request in exactly one batch
    CHECK(std::uint64_t(b["batches"]) == batches);
    CHECK(batches < 240);  // eight workers, a 2 ms delay: requests share batches
    CHECK(double(b["mean_size"]) > 1.0);
    CHECK(std::uint64_t(s["stages"]["batch_wait"]["count"]) > 0);
    CHECK(s["stages"]["batch_wait"]["cpu_mean_us"].error() == simdjson::NO_SUCH_FIELD);  // waiting, like the queue
    // --verify recomputed the batched results one at a time: none differs.
    CHECK(std::uint64_t(s["verify"]["checked"]) > 0);
    CHECK(std::uint64_t(s["verify"]["mismatches"]) == 0);

    const std::string script = out.file("timeline.py");
    std::ofstream(script) << kTimelineCheck;
    CHECK(std::system(("python3 " + shell_quote(script) + " " + shell_quote(out.file("o")) + " 4").c_str()) == 0);
  }

  TEST_CASE("open loop with a result cache: hits leave the batch (batch 0), the misses batch") {
    auto& f = batching_fixture();
    TempDir out;
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--open-loop", "--concurrency", "8", "--max-batch", "8",
                      "--caches", "l1", "--tier", "l1=lru:1000", "--verify", "--out", out.file("o"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("of the cache hits and batched results recomputed one at a time") != std::string::npos);
    const std::string check = R"(
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
hits = [r for r in rows if r['cache'] == 'l1_hit']
misses = [r for r in rows if r['cache'] == 'miss']
assert len(hits) + len(misses) == 240 and len(hits) > 0, (len(hits), len(misses))
# Two requests for one key in flight at once may both miss: at least one miss per key.
assert len(misses) >= len({r['key'] for r in rows}), len(misses)
assert all(r['batch'] == '0' and float(r['batch_wait_us']) == 0 for r in hits), 'a hit ran the model'
assert all(1 <= int(r['batch']) <= 8 for r in misses), 'a miss without a batch'
print(len(misses))
)";
    const std::string script = out.file("hits.py");
    std::ofstream(script) << check;
    CHECK(std::system(("python3 " + shell_quote(script) + " " + shell_quote(out.file("o/requests.csv"))).c_str()) == 0);
    simdjson::dom::parser parser;
    simdjson::dom::element s = parser.parse(slurp(out.path() / "o" / "summary.json"));
    std::uint64_t misses = 0;
    for (auto o : s["served_by"].get_array())
      if (std::string_view(o["outcome"]) == "miss") misses = std::uint64_t(o["requests"]);
    CHECK(misses > 0);
    CHECK(std::uint64_t(s["batching"]["computed"]) == misses);
    CHECK(std::uint64_t(s["verify"]["mismatches"]) == 0);
  }

  TEST_CASE("without --max-batch: batch_wait is n/a and hidden from the table, batching is null") {
    auto& f = batching_fixture();
    TempDir out;
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--limit", "20", "--out", out.file("o"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("batch_wait") == std::string::npos);
    CHECK(r.out.find("batching") == std::string::npos);
    simdjson::dom::parser parser;
    simdjson::dom::element s = parser.parse(slurp(out.path() / "o" / "summary.json"));
    CHECK(s["batching"].is_null());
    CHECK(bool(s["stages"]["batch_wait"]["applicable"]) == false);
  }

  TEST_CASE("settings that cannot batch: one line each, exit 2, nothing in --out") {
    auto& f = batching_fixture();
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"run", f.model, "--trace", f.trace, "--max-batch", "8", "--concurrency", "4"},
         "--max-batch 8 needs --concurrency 8 or more: a request waiting for its batch holds its worker"},
        {{"run", f.model, "--trace", f.trace, "--batch-delay-us", "500"},
         "--batch-delay-us 500 applies to a batcher: add --max-batch N (N > 1)"},
        {{"run", f.model, "--trace", f.trace, "--max-batch", "2", "--concurrency", "2", "--ops"},
         "--ops attributes one request's forward to aten operators, but with --max-batch"},
        {{"run", f.model, "--trace", f.trace, "--max-batch", "5000", "--concurrency", "5000"},
         "--max-batch 5000: expected 1 to 4096"},
        {{"run", f.model, "--trace", f.trace, "--max-batch", "2", "--concurrency", "2", "--batch-delay-us", "2e6"},
         "--batch-delay-us 2000000: expected 0 to 1000000 (a second)"},
        {{"compare", f.model, "--trace", f.trace, "--caches", "l1", "--max-batch", "2"},
         "--max-batch 2: lockstep serves one request at a time under every configuration, so nothing can batch"},
        {{"sweep", f.model, "--trace", f.trace, "--concurrency", "1,2", "--max-batch", "1,4"},
         "sweep --max-batch 4: batching needs --speeds"},
        {{"sweep", f.model, "--trace", f.trace, "--speeds", "1,2", "--max-batch", "1,2.5"},
         "--max-batch 1,2.5: expected batch sizes from 1 to 4096"},
    };
    for (const auto& [args, message] : cases) {
      TempDir out;
      std::vector<std::string> a = args;
      a.insert(a.end(), {"--out", out.file("o"), "--no-progress"});
      auto r = run_cli(a);
      CAPTURE(r.err);
      CHECK(r.code == 2);
      CHECK(r.err.find(message) != std::string::npos);
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
      CHECK(!fs::exists(out.file("o")));
    }
  }

  TEST_CASE("a model that does not batch along dim 0 fails with the batch named, exit 3, no reports") {
    auto& f = batching_fixture();
    TempDir out;
    // 1-D inputs: stacked along dim 0 they make one long vector the MLP's first layer cannot take.
    const std::string flat = out.file("flat.jsonl");
    auto t = run_cli({"gen-trace", "--requests", "16", "--keys", "16", "--rate", "0", "--shape", "16", "-o", flat});
    REQUIRE_MESSAGE(t.code == 0, t.err);
    auto r = run_cli({"run", f.model, "--trace", flat, "--concurrency", "4", "--max-batch", "4", "--batch-delay-us",
                      "100000", "--warmup", "0", "--out", out.file("o"), "--no-progress"});
    CHECK(r.code == 3);
    CHECK(r.err.find("--max-batch: a batch of") != std::string::npos);
    CHECK(r.err.find("run without --max-batch") != std::string::npos);
    CHECK(!fs::exists(out.file("o")));
  }

  TEST_CASE("sweep --max-batch 1,4: one curve per batch size, each batched one with its workers") {
    auto& f = batching_fixture();
    auto r = run_cli({"sweep", f.model, "--trace", f.trace, "--speeds", "1,2", "--max-batch", "1,4", "--format", "json",
                      "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.out);
    simdjson::dom::array configs = doc["configurations"];
    REQUIRE(configs.size() == 2);
    CHECK(std::string_view(configs.at(0)["name"]) == "none");
    CHECK(std::int64_t(configs.at(0)["max_batch"]) == 1);
    CHECK(std::string_view(configs.at(1)["name"]) == "none · batch 4");
    CHECK(std::string_view(configs.at(1)["caches"]) == "none");
    CHECK(std::int64_t(configs.at(1)["max_batch"]) == 4);
    CHECK(std::int64_t(configs.at(1)["workers"]) == 8);
    for (auto c : configs)
      CHECK(simdjson::dom::array(c["steps"]).size() >= 1);
  }
}
