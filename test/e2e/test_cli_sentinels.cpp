// Sentinels: a user's files planted in the working folder, its parent, --out
// and the dump folders; every command run with hostile names and interrupted
// at several points. Every sentinel must survive byte for byte, every exit be
// one of 0/1/2/3/4/130/143 with at most one line on stderr, and nothing of
// ours (temporary files, staging folders, probes) be left behind.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cli_harness.hpp"
#include "redis_server.hpp"
#include "temp_dir.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace inferprof::testing;

namespace {

// A world of user files around a working folder:
//   world/SENTINEL, world/keep/SENTINEL           the working folder's parent
//   world/work/SENTINEL, world/work/sub/SENTINEL  the working folder (also m.pt, t.jsonl)
//   world/work/results/SENTINEL                   an --out a user already had
struct World {
  TempDir dir;
  fs::path root = dir.path(), work = root / "work";
  std::map<std::string, std::string> sentinels;  // path -> content
  std::string model = (work / "m.pt").string(), trace = (work / "t.jsonl").string();

  World() {
    fs::create_directories(work / "sub");
    fs::create_directories(work / "results");
    fs::create_directories(root / "keep");
    for (const char* p : {"SENTINEL", "keep/SENTINEL", "work/SENTINEL", "work/sub/SENTINEL", "work/results/SENTINEL"})
      plant(p);
    make_model_and_trace(model, trace, {"--requests", "60", "--keys", "12"});
  }
  void plant(const std::string& relative) {
    const std::string content = "user data: " + relative;
    fs::create_directories((root / relative).parent_path());
    std::ofstream(root / relative) << content;
    sentinels[(root / relative).string()] = content;
  }
  // Runs the binary with the working folder as its current folder.
  CliResult run(const std::vector<std::string>& args) const {
    return run_cli(args, "cd " + shell_quote(work.string()) + " && " + kProfilesEnv);
  }
  // Every sentinel as it was, and nothing of ours left anywhere in the world.
  void check_intact(const std::string& what) const {
    for (const auto& [path, content] : sentinels) {
      std::ifstream in(path);
      const std::string now((std::istreambuf_iterator<char>(in)), {});
      CHECK_MESSAGE(now == content, what << ": " << path << " is gone or changed");
    }
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      const std::string name = e.path().filename().string();
      const bool ours = name.find(".tmp.") != std::string::npos || name.rfind(".inferprof-probe", 0) == 0 ||
                        name.rfind(".dump.tmp", 0) == 0;
      CHECK_MESSAGE(!ours, what << ": left behind " << e.path());
    }
  }
};

void check_exit(const CliResult& r, const std::string& what) {
  static const std::vector<int> allowed = {0, 1, 2, 3, 4, 130, 143};
  CHECK_MESSAGE(std::find(allowed.begin(), allowed.end(), r.code) != allowed.end(), what << ": exit " << r.code);
  if (r.code != 0) CHECK_MESSAGE(count_lines(r.err) <= 1, what << ": stderr is not one line: " << r.err);
}

// The command in the background from the working folder, `signal` sent after `delay`.
CliResult interrupted(const World& w, const std::vector<std::string>& args, std::chrono::milliseconds delay,
                      int signal) {
  ::setenv("INFERPROF_PROFILES_DIR", INFERPROF_PROFILES_DIR, 1);
  auto bg = start(args, w.dir, "bg", w.work.string());
  std::this_thread::sleep_for(delay);
  ::kill(bg->pid, signal);
  CliResult r;
  r.code = bg->wait(std::chrono::seconds(120));
  r.out = slurp(bg->out);
  r.err = slurp(bg->err);
  return r;
}

void write_profile(const fs::path& path, const std::string& name) {
  std::ifstream in(std::string(INFERPROF_PROFILES_DIR) + "/default.toml");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const std::size_t at = text.find("name = \"default\"");
  REQUIRE(at != std::string::npos);
  text.replace(at, 16, "name = \"" + name + "\"");
  std::ofstream(path) << text;
}

}  // namespace

TEST_SUITE("e2e sentinels") {
  TEST_CASE("compare --model with hostile names: nothing outside --out is touched, nothing of the user's goes") {
    World w;
    for (const std::string model : {"..", ".", "./.", "", "sub/..", "sub", "results", "\x1b[31mred"}) {
      const std::string what = "compare --model '" + model + "'";
      auto r = w.run({"compare", "m.pt", "--model", model, "--trace", "t.jsonl", "--out", "results", "--no-progress"});
      check_exit(r, what);
      CHECK_MESSAGE(r.code != 0, what << ": " << r.out);
      w.check_intact(what);
      CHECK_MESSAGE(fs::exists(w.work / "m.pt"), what);
    }
    // The same names as --out of run and compare: a folder is claimed, never emptied.
    for (const std::string out : {"..", ".", "./.", "sub/.."}) {
      auto r = w.run({"run", "m.pt", "--trace", "t.jsonl", "--out", out, "--no-progress"});
      check_exit(r, "run --out " + out);
      w.check_intact("run --out " + out);
    }
  }

  TEST_CASE("profiles named '..', '.', '' and with a separator or an escape: their folders lie inside --out") {
    World w;
    const std::vector<std::string> names = {"..", ".", "", "a/../..", "\x1b[2J"};
    std::vector<std::string> args = {"compare", "m.pt", "--trace", "t.jsonl", "--out", "results", "--no-progress"};
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::string file = (w.work / ("p" + std::to_string(i) + ".toml")).string();
      write_profile(file, names[i]);
      args.insert(args.end(), {"--profile", file});
    }
    auto r = w.run(args);
    check_exit(r, "compare with hostile profile names");
    if (r.code == 0) {
      // Each configuration's reports are in a folder of its own inside results/.
      std::size_t folders = 0;
      for (const auto& e : fs::directory_iterator(w.work / "results"))
        folders += e.is_directory() && fs::exists(e.path() / "summary.json");
      CHECK(folders == names.size());
      CHECK_FALSE(fs::exists(w.work / "summary.json"));
      CHECK_FALSE(fs::exists(w.root / "summary.json"));
    } else {
      CHECK_MESSAGE(r.code == 2, r.err);
    }
    w.check_intact("compare with hostile profile names");
  }

  TEST_CASE("dump folders: a user's folders are never removed, overlapping outputs are refused before any work") {
    World w;
    w.plant("work/dd/202401/photo.jpg");
    auto r = w.run({"run", "m.pt", "--trace", "t.jsonl", "--dump-inputs", "dd", "--no-progress"});
    check_exit(r, "--dump-inputs over a user's folder");
    CHECK(r.code == 2);
    CHECK(r.err.find("which no earlier dump wrote") != std::string::npos);

    // One folder for inputs and outputs, however spelled: side by side, then replaced by a smaller dump.
    r = w.run({"run", "m.pt", "--trace", "t.jsonl", "--dump-inputs", "d2", "--dump-outputs", "d2/", "--no-progress"});
    CHECK_MESSAGE(r.code == 0, r.err);
    CHECK(fs::exists(w.work / "d2" / "000001" / "output.npy"));
    CHECK(fs::exists(w.work / "d2" / "000001" / "input.x.npy"));
    const auto folders = [&] {
      std::size_t n = 0;
      for (const auto& e : fs::directory_iterator(w.work / "d2"))
        n += e.is_directory();
      return n;
    };
    const std::size_t first = folders();
    CHECK(first > 3);
    r = w.run({"run", "m.pt", "--trace", "t.jsonl", "--limit", "1", "--dump-inputs", "./d2", "--dump-outputs", "d2",
               "--no-progress"});
    CHECK_MESSAGE(r.code == 0, r.err);
    CHECK(fs::exists(w.work / "d2" / "000001"));
    CHECK(folders() == 1);  // the earlier dump's other folders went: keys.csv named them
    // A file of the user's inside an earlier dump's folder: refused, kept.
    w.plant("work/d2/000001/notes.txt");
    r = w.run({"run", "m.pt", "--trace", "t.jsonl", "--dump-inputs", "d2", "--no-progress"});
    CHECK(r.code == 2);

    // Nested or shared outputs.
    for (const std::vector<std::string>& extra :
         {std::vector<std::string>{"--dump-inputs", "d3", "--dump-outputs", "d3/in"},
          std::vector<std::string>{"--out", "results", "--dump-inputs", "results"},
          std::vector<std::string>{"--out", "results", "--dump-outputs", "results/dump"},
          std::vector<std::string>{"--out", "o/x", "--dump-inputs", "o"}}) {
      std::vector<std::string> args = {"run", "m.pt", "--trace", "t.jsonl", "--no-progress"};
      args.insert(args.end(), extra.begin(), extra.end());
      r = w.run(args);
      CHECK_MESSAGE(r.code == 2, extra[1] << " " << extra[3] << ": " << r.err);
      CHECK(r.err.find("give each") != std::string::npos);
      CHECK_FALSE(fs::exists(w.work / "d3"));
      CHECK_FALSE(fs::exists(w.work / "o"));
    }
    w.check_intact("dump folders");
  }

  TEST_CASE("merge --out never writes over a run it reads") {
    World w;
    auto r = w.run({"run", "m.pt", "--trace", "t.jsonl", "--out", "a", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    r = w.run({"run", "m.pt", "--trace", "t.jsonl", "--out", "b", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    std::ifstream in(w.work / "a" / "summary.json");
    const std::string before((std::istreambuf_iterator<char>(in)), {});
    for (const std::string out : {"a", "./a/", "a/merged", "b"}) {
      r = w.run({"merge", "a", "b", "--out", out});
      check_exit(r, "merge a b --out " + out);
      CHECK_MESSAGE(r.code == 2, out << ": " << r.err);
      CHECK(r.err.find("never writes over what it reads") != std::string::npos);
    }
    std::ifstream again(w.work / "a" / "summary.json");
    CHECK(std::string((std::istreambuf_iterator<char>(again)), {}) == before);
    CHECK_FALSE(fs::exists(w.work / "a" / "merged"));
    w.check_intact("merge --out over an input");
  }

  TEST_CASE("run and compare interrupted during load, warm-up, the replay and the reports: nothing lost") {
    World w;
    // Open loop at the trace's pace (100 req/s): the replay takes about 1.5 s.
    make_model_and_trace(w.model, (w.work / "slow.jsonl").string(), {"--requests", "150", "--keys", "40"});
    int round = 0;
    for (int ms : {5, 40, 150, 400, 900, 1600}) {
      for (int sig : {SIGINT, SIGTERM}) {
        const std::string out = "r" + std::to_string(round++);
        w.plant("work/" + out + "/SENTINEL");
        auto r = interrupted(w, {"run", "m.pt", "--trace", "slow.jsonl", "--open-loop", "--out", out, "--no-progress"},
                             std::chrono::milliseconds(ms), sig);
        const std::string what = "run interrupted at " + std::to_string(ms) + " ms by " + std::to_string(sig);
        check_exit(r, what);
        w.check_intact(what);
      }
      const std::string out = "c" + std::to_string(round++);
      auto r = interrupted(w,
                           {"compare", "m.pt", "--trace", "slow.jsonl", "--open-loop", "--caches", "none,l1", "--out",
                            out, "--no-progress"},
                           std::chrono::milliseconds(ms), SIGINT);
      const std::string what = "compare interrupted at " + std::to_string(ms) + " ms";
      check_exit(r, what);
      w.check_intact(what);
      // Interrupted before any configuration completed: no folder of ours is left.
      if (r.code == 130 && r.err.find("before any configuration completed") != std::string::npos)
        CHECK_MESSAGE(!fs::exists(w.work / out), what);
    }
  }

  TEST_CASE("gen-trace, convert, simulate and merge interrupted: exit 130/143, no temporary file, no partial output") {
    World w;
    auto r = w.run({"gen-trace", "--requests", "3000000", "--keys", "1000", "-o", "big.jsonl"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    r = w.run({"run", "m.pt", "--trace", "big.jsonl", "--limit", "150000", "--out", "run", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
        {"gen-trace", {"gen-trace", "--requests", "3000000", "--keys", "1000", "-o", "out/g.jsonl"}},
        {"convert", {"convert", "big.jsonl", "-o", "out/big.iptrace"}},
        {"simulate", {"simulate", "--trace", "big.jsonl", "--tier", "l1=lru:100", "--out", "out/sim"}},
        {"merge", {"merge", "run", "--out", "out/merged"}},
    };
    fs::create_directories(w.work / "out");
    w.plant("work/out/SENTINEL");
    for (const auto& [name, args] : commands) {
      for (int sig : {SIGINT, SIGTERM}) {
        auto res = interrupted(w, args, std::chrono::milliseconds(120), sig);  // each runs 0.6 s or more
        const std::string what = name + " interrupted by " + std::to_string(sig);
        CHECK_MESSAGE(res.code == 128 + sig, what << ": exit " << res.code << " " << res.err);
        CHECK_MESSAGE(count_lines(res.err) == 1, what << ": " << res.err);
        // Only the sentinel: no partial trace, report or temporary file.
        std::vector<std::string> left;
        for (const auto& e : fs::directory_iterator(w.work / "out"))
          left.push_back(e.path().filename().string());
        CHECK_MESSAGE(left == std::vector<std::string>{"SENTINEL"}, what << ": left " << left.size() << " entries");
        w.check_intact(what);
      }
    }
  }

  TEST_CASE("run --group --merge-into merges the group's folders only: a stale sibling is named and left as it was") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    World w;
    make_model_and_trace(w.model, w.trace, {"--requests", "200", "--keys", "20", "--rate", "400"});
    // Yesterday's run beside the replicas' folders: a run folder, but not of this group.
    auto r = w.run({"run", "m.pt", "--trace", "t.jsonl", "--out", "shared/yesterday-replica-0", "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    std::ifstream in(w.work / "shared" / "yesterday-replica-0" / "summary.json");
    w.sentinels[(w.work / "shared" / "yesterday-replica-0" / "summary.json").string()] =
        std::string((std::istreambuf_iterator<char>(in)), {});
    std::vector<std::unique_ptr<Background>> group;
    for (int k = 0; k < 2; ++k)
      group.push_back(start({"run", w.model, "--trace", w.trace, "--group", "gm", "--replica", fmt::format("{}/2", k),
                             "--redis", redis.url(), "--open-loop", "--warmup", "1", "--no-progress", "--out",
                             (w.work / "shared" / fmt::format("replica-{}", k)).string(), "--merge-into",
                             (w.work / "shared" / "merged").string()},
                            w.dir, fmt::format("gm-{}", k)));
    std::string said;
    for (auto& bg : group) {
      CHECK_MESSAGE(bg->wait(std::chrono::seconds(120)) == 0, slurp(bg->err));
      said += slurp(bg->err);
    }
    CHECK_MESSAGE(
        said.find("left out of the merge, not replicas of this group of 2: 'yesterday-replica-0'") != std::string::npos,
        said);
    CHECK_MESSAGE(said.find("merged 2 replicas' reports") != std::string::npos, said);
    simdjson::dom::parser parser;
    CHECK(json_number(parser.load((w.work / "shared" / "merged" / "summary.json").string())["requests"]) == 200);
    w.check_intact("--merge-into beside a stale run folder");
  }

  TEST_CASE("--replica without --group (or with an empty one) is refused at once: no handshake on fd 3") {
    World w;
    for (const std::vector<std::string>& extra :
         {std::vector<std::string>{"--replica", "0/2"}, std::vector<std::string>{"--replica", "1/2", "--group", ""}}) {
      std::vector<std::string> args = {"run", "m.pt", "--trace", "t.jsonl", "--no-progress", "--out", "rep"};
      args.insert(args.end(), extra.begin(), extra.end());
      // fd 3 a socket, as a parent's would be: before, the replica waited there for a 'go' and ignored SIGTERM.
      const auto started = std::chrono::steady_clock::now();
      auto r = run_cli(args, "cd " + shell_quote(w.work.string()) + " && exec 3<>/dev/null && ");
      CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(20));
      CHECK_MESSAGE(r.code == 2, r.err);
      CHECK_MESSAGE(r.err.find("goes with --group NAME") != std::string::npos, r.err);
      CHECK(count_lines(r.err) == 1);
      CHECK_FALSE(fs::exists(w.work / "rep"));
    }
    w.check_intact("--replica without --group");
  }
}
