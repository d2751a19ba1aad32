// End-to-end: the run's lifecycle. A SIGINT/SIGTERM keeps what was measured
// (table, reports marked interrupted, exit 130/143) and leaves nothing behind
// (Redis keys, the private LMDB folder, temp files, replica processes); a
// thread that cannot start is one line; progress goes to a terminal only.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <set>
#include <thread>

#include "cli_harness.hpp"
#include "redis_server.hpp"
#include "sanitized.hpp"
#include "test_util.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr long kAddressSpaceKb = 3'000'000;  // enough for libtorch, not for 5000 thread stacks

// A model and two open-loop traces whose length is set by the clock, not the
// CPU: requests arrive at 20/s (20 s of trace) and at 10/s (60 s).
struct LifecycleFixture {
  TempDir dir;
  std::string model = dir.file("mlp.pt");
  std::string trace = dir.file("slow.jsonl");
  std::string long_trace = dir.file("long.jsonl");
  std::string profile = dir.file("l3-lmdb.toml");
  static constexpr int kRequests = 400;
  LifecycleFixture() {
    make_model_and_trace(model, trace, {"--requests", std::to_string(kRequests), "--keys", "40", "--rate", "20"});
    auto t = run_cli({"gen-trace", "--requests", "600", "--keys", "40", "--rate", "10", "-o", long_trace});
    if (t.code != 0) throw std::runtime_error("gen-trace failed: " + t.err);
    // The default profile with l3 kept on LMDB (a private folder) when --redis moves l2 to Redis.
    std::ofstream(profile) << slurp(fs::path(INFERPROF_PROFILES_DIR) / "default.toml")
                           << "\n[cache.l3]\nbackend = \"lmdb\"\n";
  }
};
LifecycleFixture& lifecycle_fixture() {
  static LifecycleFixture f;
  return f;
}

bool wait_for(const std::function<bool()>& ready, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (ready()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return ready();
}

// Names in `dir` that contain `part`.
std::vector<std::string> names_with(const fs::path& dir, const std::string& part) {
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.find(part) != std::string::npos) found.push_back(name);
  }
  return found;
}

std::vector<std::string> l3_folders_of(pid_t pid) {
  return names_with(fs::temp_directory_path(), fmt::format("inferprof-l3-{}-", pid));
}

// A process that is gone, or a zombie nobody reaped yet.
bool process_gone(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  if (!stat) return true;
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() || text[close + 2] == 'Z';
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> kids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(text.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent)
      kids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return kids;
}

simdjson::dom::element load_json(simdjson::dom::parser& parser, const fs::path& path) {
  simdjson::dom::element doc;
  auto error = parser.load(path.string()).get(doc);
  REQUIRE_MESSAGE(!error, path << ": " << simdjson::error_message(error));
  return doc;
}

// A `run` replaying open-loop with l1, l2 on Redis and l3 in a private LMDB folder, in the background.
auto start_cached_run(const RedisServer& redis, TempDir& io, const fs::path& out, const std::string& trace,
                      std::vector<std::string> extra = {}) {
  auto& f = lifecycle_fixture();
  std::vector<std::string> args{"run",      f.model,   "--trace",    trace,          "--open-loop", "--caches",
                                "l1,l2,l3", "--redis", redis.url(),  "--profile",    f.profile,     "--warmup",
                                "1",        "--out",   out.string(), "--no-progress"};
  args.insert(args.end(), extra.begin(), extra.end());
  return start(args, io);
}

// Nothing of a replay outlives it: no Redis key, no private LMDB folder, no temp file in --out.
void check_nothing_left(const RedisServer& redis, pid_t pid, const fs::path& out) {
  CHECK(redis.integer("DBSIZE") == 0);
  CHECK(l3_folders_of(pid).empty());
  CHECK(names_with(out, ".tmp.").empty());
}

// SIGINT or SIGTERM to a `run` replaying with l1, l2 on Redis and l3 in a private LMDB folder.
void interrupt_a_run(int sig, int expected_code, const std::string& name) {
  REQUIRE_REDIS_SERVER();
  auto& f = lifecycle_fixture();
  RedisServer redis;
  TempDir io;
  const fs::path out = io.path() / "r";
  auto bg = start_cached_run(redis, io, out, f.trace);
  // Under way: the reports' temp files exist, Redis holds keys, the private folder is there.
  REQUIRE_MESSAGE(
      wait_for([&] { return !names_with(out, ".requests.csv.tmp.").empty() && redis.integer("DBSIZE") > 0; }, 60s),
      slurp(bg->err));
  REQUIRE(l3_folders_of(bg->pid).size() == 1);
  std::this_thread::sleep_for(500ms);
  ::kill(bg->pid, sig);
  REQUIRE(bg->wait(30s) == expected_code);

  const std::string stdout_text = slurp(bg->out), stderr_text = slurp(bg->err);
  CHECK_MESSAGE(stdout_text.find("compute") != std::string::npos, stdout_text);  // the table
  CHECK(stdout_text.find("interrupted by " + name) != std::string::npos);
  CHECK(stderr_text.find("interrupted by " + name) != std::string::npos);
  simdjson::dom::parser parser;
  auto summary = load_json(parser, out / "summary.json");
  bool interrupted = false;
  CHECK(summary["interrupted"].get(interrupted) == simdjson::SUCCESS);
  CHECK(interrupted);
  const double requests = json_number(summary["requests"]);
  CHECK(requests > 0);
  CHECK(requests < LifecycleFixture::kRequests);  // it stopped releasing them
  for (const char* file : {"requests.csv", "stages.csv", "trace.json"})
    CHECK(fs::is_regular_file(out / file));
  check_nothing_left(redis, bg->pid, out);
}

// A lockstep compare of none against l1 over a trace of `requests` over 50 keys, in the background.
auto start_lockstep_compare(TempDir& traces, const std::string& requests, TempDir& io, const fs::path& out,
                            std::vector<std::string> extra = {}) {
  const std::string trace = traces.file("lockstep.jsonl");
  REQUIRE(run_cli({"gen-trace", "--requests", requests, "--keys", "50", "-o", trace}).code == 0);
  std::vector<std::string> args{"compare",       lifecycle_fixture().model,
                                "--trace",       trace,
                                "--caches",      "none",
                                "--caches",      "l1",
                                "--warmup",      "1",
                                "--out",         out.string(),
                                "--no-progress", "--format",
                                "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return start(args, io);
}

}  // namespace

TEST_SUITE("e2e lifecycle") {
  TEST_CASE("SIGINT mid-run: the table and reports of what completed, interrupted, exit 130, nothing left") {
    interrupt_a_run(SIGINT, 130, "SIGINT");
  }

  TEST_CASE("SIGTERM mid-run: the same, exit 143") {
    interrupt_a_run(SIGTERM, 143, "SIGTERM");
  }

  TEST_CASE("a second signal exits at once, after removing the keys, the LMDB folder and the temp files") {
    REQUIRE_REDIS_SERVER();
    auto& f = lifecycle_fixture();
    RedisServer redis;
    TempDir io;
    const fs::path out = io.path() / "r";
    // Workers asleep until their next request's due time take up to 50 ms to
    // see the first signal; the second, right after it, comes first.
    auto bg = start_cached_run(redis, io, out, f.long_trace, {"--concurrency", "2"});
    REQUIRE(
        wait_for([&] { return !names_with(out, ".requests.csv.tmp.").empty() && redis.integer("DBSIZE") > 0; }, 60s));
    // Two signals sent at once may merge into one (signals do not queue): a
    // moment apart, the second usually lands before the first's reports are
    // written. Either way the run must leave nothing behind.
    ::kill(bg->pid, SIGINT);
    std::this_thread::sleep_for(10ms);
    ::kill(bg->pid, SIGINT);
    REQUIRE(bg->wait(30s) == 130);
    check_nothing_left(redis, bg->pid, out);
  }

  TEST_CASE("SIGKILL leaves keys that expire, and a private folder no later run removes by its name") {
    REQUIRE_REDIS_SERVER();
    auto& f = lifecycle_fixture();
    RedisServer redis;
    TempDir io;
    const fs::path out = io.path() / "r";
    auto bg = start_cached_run(redis, io, out, f.trace);
    REQUIRE(wait_for([&] { return redis.integer("DBSIZE") > 0; }, 60s));
    ::kill(bg->pid, SIGKILL);
    REQUIRE(bg->wait(10s) == 128 + SIGKILL);
    REQUIRE(l3_folders_of(bg->pid).size() == 1);  // nothing runs on SIGKILL
    // Every key it wrote expires within the hour (redis_backend.cpp).
    CHECK(redis.integer("DBSIZE") > 0);
    CHECK(redis.integer("EVAL \"local n = 0 for _, k in ipairs(redis.call('KEYS', '*')) do local t = "
                        "redis.call('TTL', k) if t < 0 or t > 3600 then n = n + 1 end end return n\" 0") == 0);
    // The next run that makes a private LMDB folder leaves the dead one's: inferprof removes only what the
    // running process created (docs/development.md, "Who may delete what").
    auto next = run_cli({"run", f.model, "--trace", f.trace, "--caches", "l3", "--limit", "5", "--warmup", "0",
                         "--profile", f.profile, "--no-progress"});
    REQUIRE_MESSAGE(next.code == 0, next.err);
    const std::vector<std::string> left = l3_folders_of(bg->pid);
    CHECK(left.size() == 1);
    for (const std::string& name : left)
      fs::remove_all(fs::temp_directory_path() / name);
  }

  TEST_CASE("killing the --replicas parent leaves no replica running and no keys") {
    REQUIRE_REDIS_SERVER();
    auto& f = lifecycle_fixture();
    for (int sig : {SIGTERM, SIGKILL}) {
      CAPTURE(sig);
      RedisServer redis;
      TempDir io;
      const fs::path out = io.path() / "r";
      auto bg = start({"run", f.model, "--trace", f.long_trace, "--open-loop", "--replicas", "2", "--caches", "l1,l2",
                       "--redis", redis.url(), "--warmup", "1", "--out", out.string(), "--no-progress"},
                      io);
      REQUIRE(wait_for(
          [&] {
            return !names_with(out / "replica-0", ".requests.csv.tmp.").empty() &&
                   !names_with(out / "replica-1", ".requests.csv.tmp.").empty() && redis.integer("DBSIZE") > 0;
          },
          60s));
      const std::vector<pid_t> replicas = children_of(bg->pid);
      REQUIRE(replicas.size() == 2);
      ::kill(bg->pid, sig);
      // The trace runs for a minute: replicas still there after 15 s outlived their parent.
      CHECK(wait_for([&] { return process_gone(replicas[0]) && process_gone(replicas[1]); }, 15s));
      const int code = bg->wait(30s);
      if (sig == SIGTERM) {
        CHECK(code == 143);
        CHECK(redis.integer("DBSIZE") == 0);
        simdjson::dom::parser parser;
        auto summary = load_json(parser, out / "replicas.json");
        bool interrupted = false;
        CHECK(summary["interrupted"].get(interrupted) == simdjson::SUCCESS);
        CHECK(interrupted);
        CHECK(json_number(summary["failed"]) == 0);
        CHECK(json_number(summary["requests"]) > 0);
      } else {
        CHECK(code == 128 + SIGKILL);
      }
    }
  }

  TEST_CASE("a crash runs the cleanups too: a replica that aborts leaves no LMDB folder") {
    REQUIRE_REDIS_SERVER();
    auto& f = lifecycle_fixture();
    RedisServer redis;
    TempDir out;
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--limit", "40", "--caches", "l2,l3", "--redis", redis.url(),
                      "--profile", f.profile, "--replicas", "2", "--out", out.file("r")},
                     "INFERPROF_TEST_CRASH_REPLICA=1");
    CHECK(r.code == 3);
    simdjson::dom::parser parser;
    auto s = load_json(parser, out.path() / "r" / "replicas.json");
    CHECK(std::string_view(s["replicas"].at(1)["status"]) == "killed by signal 6");
    const auto pid = static_cast<pid_t>(json_number(s["replicas"].at(1)["pid"]));
    CHECK(pid > 0);
    CHECK(l3_folders_of(pid).empty());  // made before it aborted, removed by the SIGABRT handler
    CHECK(redis.integer("DBSIZE") == 0);
  }

  TEST_CASE("compare interrupted keeps the configurations completed and names the others") {
    auto& f = lifecycle_fixture();
    TempDir io;
    const fs::path out = io.path() / "c";
    // 40 requests at 20/s: two seconds per configuration.
    TempDir traces;
    const std::string trace = traces.file("short.jsonl");
    REQUIRE(run_cli({"gen-trace", "--requests", "40", "--keys", "10", "--rate", "20", "-o", trace}).code == 0);
    auto bg = start({"compare", f.model, "--trace", trace, "--open-loop", "--caches", "none", "--caches", "l1",
                     "--caches", "l1,l2", "--warmup", "1", "--out", out.string(), "--no-progress", "--format", "json"},
                    io);
    REQUIRE(wait_for([&] { return !names_with(out / "l1", ".requests.csv.tmp.").empty(); }, 60s));
    ::kill(bg->pid, SIGINT);
    REQUIRE(bg->wait(30s) == 130);
    simdjson::dom::parser parser;
    auto result = load_json(parser, out / "compare.json");
    bool interrupted = false;
    CHECK(result["interrupted"].get(interrupted) == simdjson::SUCCESS);
    CHECK(interrupted);
    simdjson::dom::array configs, not_run;
    REQUIRE(result["configurations"].get(configs) == simdjson::SUCCESS);
    REQUIRE(configs.size() == 1);
    std::string_view name;
    CHECK(configs.at(0)["name"].get(name) == simdjson::SUCCESS);
    CHECK(name == "none");
    REQUIRE(result["not_run"].get(not_run) == simdjson::SUCCESS);
    REQUIRE(not_run.size() == 2);
    CHECK(not_run.at(0).get_string().value() == "l1");
    CHECK(not_run.at(1).get_string().value() == "l1,l2");
    CHECK(fs::is_regular_file(out / "none" / "summary.json"));
    CHECK_FALSE(fs::exists(out / "l1"));  // the replay it cut short left nothing
    CHECK(slurp(bg->out).find("\"interrupted\": true") != std::string::npos);
  }

  TEST_CASE("sweep interrupted keeps the steps that completed, drops the one cut short, removes its keys") {
    REQUIRE_REDIS_SERVER();
    auto& f = lifecycle_fixture();
    RedisServer redis;
    TempDir io, traces;
    const fs::path out = io.path() / "s";
    // 40 requests at 20/s: two seconds at 1x, one at 2x.
    const std::string trace = traces.file("short.jsonl");
    REQUIRE(run_cli({"gen-trace", "--requests", "40", "--keys", "10", "--rate", "20", "-o", trace}).code == 0);
    auto bg = start({"sweep", f.model, "--trace", trace, "--speeds", "1,2,4", "--caches", "l2", "--redis", redis.url(),
                     "--warmup", "1", "--out", out.string(), "--no-progress", "--format", "json"},
                    io);
    // The second step's keys (namespace sweep-PID-0-1) mean the first step completed.
    const auto second_step = [&] {
      const std::string reply = redis.command("KEYS inferprof:sweep-*-0-1*");
      return !reply.empty() && reply != "*0";
    };
    REQUIRE_MESSAGE(wait_for(second_step, 60s), slurp(bg->err));
    ::kill(bg->pid, SIGINT);
    REQUIRE(bg->wait(30s) == 130);
    simdjson::dom::parser parser;
    auto result = load_json(parser, out / "sweep.json");
    bool interrupted = false;
    CHECK(result["interrupted"].get(interrupted) == simdjson::SUCCESS);
    CHECK(interrupted);
    simdjson::dom::array steps;
    REQUIRE(result["configurations"].at(0)["steps"].get(steps) == simdjson::SUCCESS);
    REQUIRE(steps.size() == 1);
    CHECK(json_number(steps.at(0)["load"]) == 1);
    CHECK(json_number(steps.at(0)["requests"]) == 40);
    CHECK(slurp(bg->err).find("interrupted by SIGINT") != std::string::npos);
    CHECK(redis.integer("DBSIZE") == 0);
  }

  // An interrupt before the first request is served under every configuration
  // (model load, warm-up): nothing was measured, so no report at all, one line,
  // exit 130, and no folder left in --out. Where the signal lands is fixed by
  // what the test waits for, not by a delay: the configurations' folders are made
  // after the model load and before a warm-up that is far too long to finish.
  TEST_CASE("lockstep compare interrupted before its first request: one line, exit 130, no reports") {
    auto& f = lifecycle_fixture();
    for (const char* when : {"loading", "warming up"}) {
      CAPTURE(when);
      TempDir io;
      const fs::path out = io.path() / "c";
      auto bg = start({"compare", f.model, "--trace", f.long_trace, "--caches", "none", "--caches", "l1", "--warmup",
                       "100000000", "--out", out.string(), "--no-progress", "--format", "json"},
                      io);
      if (std::string_view(when) == "loading")
        REQUIRE(wait_for([&] { return fs::exists(out); }, 60s));
      else
        REQUIRE(wait_for([&] { return !names_with(out / "l1", ".requests.csv.tmp.").empty(); }, 60s));
      ::kill(bg->pid, SIGINT);
      REQUIRE(bg->wait(30s) == 130);
      const std::string err = slurp(bg->err);
      CHECK_MESSAGE(count_lines(err) == 1, err);
      CHECK(err.find("interrupted by SIGINT before any configuration completed: nothing to report") !=
            std::string::npos);
      CHECK(slurp(bg->out).empty());
      // --out was made by this compare: it goes too.
      CHECK_MESSAGE(dir_is_empty_or_missing(out), "left in --out: " << names_with(out, "").size() << " entries");
    }
  }

  // Mid-run: requests.csv's temporary file grows only once its 1 MiB buffer has
  // filled, so it holds thousands of requests served under both configurations.
  TEST_CASE("lockstep compare interrupted keeps every configuration, each with the requests served under all") {
    TempDir io;
    const fs::path out = io.path() / "c";
    TempDir traces;
    auto bg = start_lockstep_compare(traces, "400000", io, out);
    auto served = [&] {
      for (const std::string& name : names_with(out / "l1", ".requests.csv.tmp.")) {
        std::error_code ec;
        if (fs::file_size(out / "l1" / name, ec) > 0 && !ec) return true;
      }
      return false;
    };
    REQUIRE_MESSAGE(wait_for(served, 120s), slurp(bg->err));
    ::kill(bg->pid, SIGINT);
    REQUIRE(bg->wait(30s) == 130);
    simdjson::dom::parser parser;
    auto result = load_json(parser, out / "compare.json");
    bool interrupted = false;
    CHECK(result["interrupted"].get(interrupted) == simdjson::SUCCESS);
    CHECK(interrupted);
    std::string_view mode;
    CHECK(result["mode"].get(mode) == simdjson::SUCCESS);
    CHECK(mode == "lockstep");
    simdjson::dom::array configs;
    REQUIRE(result["configurations"].get(configs) == simdjson::SUCCESS);
    REQUIRE(configs.size() == 2);
    std::uint64_t none = 0, l1 = 0, paired = 0;
    CHECK(configs.at(0)["requests"].get(none) == simdjson::SUCCESS);
    CHECK(configs.at(1)["requests"].get(l1) == simdjson::SUCCESS);
    CHECK(result["paired_requests"].get(paired) == simdjson::SUCCESS);
    CHECK(none > 1000);  // past the first flush of the 1 MiB buffer
    CHECK(none < 400000);
    CHECK(none == l1);  // an interrupt ends the pass between requests, never inside one
    CHECK(paired == none);
    for (const char* folder : {"none", "l1"}) {
      CHECK_MESSAGE(fs::is_regular_file(out / folder / "summary.json"), folder);
      CHECK_MESSAGE(names_with(out / folder, ".tmp.").empty(), folder);
    }
  }

  // With --repeat, a pass cut short keeps the passes before it, and every
  // configuration's folder holds the reports of the pass the interrupt ended.
  TEST_CASE("lockstep compare interrupted in its second pass keeps the first and the reports of the second") {
    TempDir io;
    const fs::path out = io.path() / "c";
    TempDir traces;
    auto bg = start_lockstep_compare(traces, "20000", io, out, {"--repeat", "3"});
    // The first pass's reports are in place once it has committed them.
    REQUIRE_MESSAGE(wait_for([&] { return fs::exists(out / "l1" / "summary.json"); }, 180s), slurp(bg->err));
    ::kill(bg->pid, SIGINT);
    REQUIRE(bg->wait(30s) == 130);
    simdjson::dom::parser parser;
    auto result = load_json(parser, out / "compare.json");
    simdjson::dom::array configs, means;
    REQUIRE(result["configurations"].get(configs) == simdjson::SUCCESS);
    REQUIRE(configs.size() == 2);
    REQUIRE(configs.at(1)["means_us"].get(means) == simdjson::SUCCESS);
    CHECK(means.size() >= 1);  // the first pass, and the second if it served a request
    CHECK(means.size() <= 2);
    std::uint64_t paired = 0;
    CHECK(result["paired_requests"].get(paired) == simdjson::SUCCESS);
    CHECK(paired >= 20000);
    CHECK(paired < 60000);
    CHECK(slurp(bg->err).find("interrupted by SIGINT") != std::string::npos);
  }

  // --pass-process fresh: the interrupt reaches the pass running in its own
  // process; the passes completed stand (the second too, if it served a
  // request), and neither the process nor its temporary folder is left.
  TEST_CASE("lockstep compare interrupted while a pass runs in its own process keeps the passes completed") {
    TempDir io, tmp, traces;
    const fs::path out = io.path() / "c";
    (void)lifecycle_fixture();     // its folders are the test's own, made before TMPDIR changes
    (void)run_cli({"--version"});  // the same for run_cli's
    const char* was = std::getenv("TMPDIR");
    const std::string before = was ? was : "";
    ::setenv("TMPDIR", tmp.str().c_str(), 1);  // the pass processes' folder goes there
    auto bg = start_lockstep_compare(traces, "20000", io, out, {"--repeat", "3", "--pass-process", "fresh"});
    was ? ::setenv("TMPDIR", before.c_str(), 1) : ::unsetenv("TMPDIR");
    // The second pass's process is running once compare has one child.
    std::vector<pid_t> passes;
    REQUIRE_MESSAGE(wait_for([&] { return (passes = children_of(bg->pid)).size() == 1; }, 180s), slurp(bg->err));
    CHECK(fs::exists(out / "l1" / "summary.json"));  // the first pass's reports
    ::kill(bg->pid, SIGINT);
    REQUIRE(bg->wait(60s) == 130);
    CHECK(process_gone(passes[0]));
    simdjson::dom::parser parser;
    auto result = load_json(parser, out / "compare.json");
    simdjson::dom::array configs, means, pids;
    REQUIRE(result["configurations"].get(configs) == simdjson::SUCCESS);
    REQUIRE(configs.at(1)["means_us"].get(means) == simdjson::SUCCESS);
    CHECK(means.size() >= 1);
    CHECK(means.size() <= 3);  // the interrupt ends the pass it finds, never the loop early
    REQUIRE(result["pass_pids"].get(pids) == simdjson::SUCCESS);
    CHECK(pids.size() == means.size());
    std::set<double> distinct;
    for (simdjson::dom::element pid : pids)
      distinct.insert(json_number(pid));
    CHECK(distinct.size() == pids.size());  // a process per pass
    CHECK(slurp(bg->err).find("interrupted by SIGINT") != std::string::npos);
    CHECK(tmp.list().empty());
  }

  // ASan reserves terabytes of address space for its shadow memory: under
  // `ulimit -v` a sanitizer build cannot start at all.
  TEST_CASE("a thread that cannot start is one line, exit 3" * doctest::skip(kSanitized)) {
    auto& f = lifecycle_fixture();
    TempDir io;
    // Root ignores the process limit (ulimit -u); an address-space limit
    // stops thread stacks just the same.
    const std::string out = io.file("out"), err = io.file("err");
    const std::string cmd = fmt::format(
        "ulimit -v {}; exec {} run {} --trace {} --concurrency 5000 --warmup 0 --no-progress >{} 2>{} </dev/null",
        kAddressSpaceKb, shell_quote(INFERPROF_BINARY), shell_quote(f.model), shell_quote(f.trace), shell_quote(out),
        shell_quote(err));
    const int status = std::system(cmd.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const std::string text = slurp(err);
    CHECK_MESSAGE(code == 3, text);
    CHECK(count_lines(text) == 1);
    CHECK(text.find("inferprof: error: cannot start replay worker") == 0);
    CHECK(text.find("--concurrency") != std::string::npos);
    CHECK(slurp(out).empty());
  }

  TEST_CASE("progress on a terminal: phase, requests of the total, req/s, ETA") {
    auto& f = lifecycle_fixture();
    TempDir io;
    const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
    REQUIRE(master >= 0);
    REQUIRE(::grantpt(master) == 0);
    REQUIRE(::unlockpt(master) == 0);
    const std::string slave = ::ptsname(master);
    std::vector<std::string> all = {INFERPROF_BINARY, "run",     f.model, "--trace",  f.trace,
                                    "--open-loop",    "--limit", "30",    "--warmup", "3"};
    std::vector<char*> argv;
    for (auto& a : all)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string out = io.file("out");
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      default_signals();
      int tty = ::open(slave.c_str(), O_RDWR | O_NOCTTY);
      int to = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int in = ::open("/dev/null", O_RDONLY);
      ::dup2(in, 0);
      ::dup2(to, 1);
      ::dup2(tty, 2);
      ::close(master);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    std::string seen;
    int status = 0;
    bool exited = false;
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < until) {
      pollfd p{master, POLLIN, 0};
      if (::poll(&p, 1, 50) == 1) {
        char buf[4096];
        ssize_t n = ::read(master, buf, sizeof buf);
        if (n > 0) seen.append(buf, static_cast<std::size_t>(n));
      }
      if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) exited = true;
      if (exited && ::poll(&p, 1, 0) != 1) break;
    }
    ::close(master);
    if (!exited) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
    REQUIRE(exited);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CAPTURE(seen);
    CHECK(seen.find("replaying: ") != std::string::npos);
    CHECK(seen.find("/30 requests") != std::string::npos);  // of the --limit, not of the bytes read
    CHECK(seen.find(" req/s") != std::string::npos);
    CHECK(seen.find("ETA ") != std::string::npos);
    CHECK(slurp(out).find("compute") != std::string::npos);  // the table on stdout, none of the line
    CHECK(slurp(out).find("replaying") == std::string::npos);
  }

  TEST_CASE("no progress line when stderr is not a terminal") {
    auto& f = lifecycle_fixture();
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--limit", "50", "--warmup", "2"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.err.find('\r') == std::string::npos);
    CHECK(r.err.find("replaying") == std::string::npos);
    CHECK(r.err.find("warming up") == std::string::npos);
  }
}
