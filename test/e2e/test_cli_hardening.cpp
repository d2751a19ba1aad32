// End-to-end regression tests for what an adversarial pass found (issue 13),
// through the binary: every case is one line on stderr, the right exit code,
// and nothing left behind.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <simdjson.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <set>
#include <thread>

#include "cli_harness.hpp"
#include "model_manifest.hpp"
#include "redis_server.hpp"
#include "sanitized.hpp"
#include "test_util.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

struct HardeningModel {
  TempDir dir;
  std::string model = dir.file("mlp.pt");
  std::string trace = dir.file("requests.jsonl");
  HardeningModel() { make_model_and_trace(model, trace, {"--requests", "20", "--keys", "5"}); }
};
HardeningModel& hardening_model() {
  static HardeningModel m;
  return m;
}

void check_error(const CliResult& r, int code, const std::string& message) {
  CHECK(r.code == code);
  CHECK(r.err == "inferprof: error: " + message + "\n");
  CHECK(count_lines(r.err) == 1);
}

// "\x93NUMPY" v2.0 with a header of `header_len` bytes, padded to `total` bytes.
std::string npy_bytes(const std::string& header, std::uint32_t header_len, std::size_t total) {
  std::string out = "\x93NUMPY";
  out += '\x02';
  out += '\0';
  for (int i = 0; i < 4; ++i)
    out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  out += header;
  out.resize(std::max(total, out.size()), ' ');
  return out;
}

std::string sha256_of_run(const CliResult& r) {
  const std::string label = "model sha256";
  const auto at = r.out.find(label);
  if (at == std::string::npos) return "";
  const auto start = r.out.find_first_not_of(' ', at + label.size());
  return r.out.substr(start, r.out.find('\n', start) - start);
}

int count_index_models(const std::string& root) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.load(root + "/index.json").get(doc)) return -1;
  simdjson::dom::array models;
  if (doc["models"].get(models)) return -1;
  return static_cast<int>(models.size());
}

// Holds ROOT/.index.lock, as a second `store put` would, until release().
struct IndexLockHolder {
  int fd = -1;
  explicit IndexLockHolder(const std::string& root) {
    fd = ::open((root + "/.index.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX) == 0);
  }
  ~IndexLockHolder() { release(); }
  void release() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// Whether process `pid` runs the binary and has `path` open: a store command
// waiting for the lock has opened the lock file. (Between fork and exec the
// child still holds this process's descriptors, the lock's among them.)
bool has_open(pid_t pid, const fs::path& path) {
  std::error_code ec;
  if (fs::read_symlink(fmt::format("/proc/{}/exe", pid), ec) != fs::canonical(INFERPROF_BINARY)) return false;
  for (fs::directory_iterator it(fmt::format("/proc/{}/fd", pid), ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code link;
    if (fs::read_symlink(it->path(), link) == path) return true;
  }
  return false;
}

// Runs `args` (a store put or rm on ROOT) while this process holds ROOT's
// index lock; once the command waits for it, ROOT/m is moved away and replaced
// by a symbolic link to `outside`, then the lock is released: the swap lands
// between any check the command made and what it does under the lock.
CliResult swap_model_folder_under_lock(const TempDir& dir, const std::string& root, const std::string& outside,
                                       const std::vector<std::string>& args) {
  IndexLockHolder lock(root);
  std::unique_ptr<Background> bg = start(args, dir, "swap");
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!has_open(bg->pid, fs::path(root) / ".index.lock") && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(has_open(bg->pid, fs::path(root) / ".index.lock"));
  fs::rename(root + "/m", dir.file("m.moved"));
  fs::create_directory_symlink(outside, root + "/m");
  lock.release();
  CliResult r;
  r.code = bg->wait(std::chrono::seconds(30));  // -1, and killed, if it hangs
  r.out = slurp(bg->out);
  r.err = slurp(bg->err);
  return r;
}

// A shell prefix for run_cli: at every temporary name the old scheme gave the
// next process's files, "DIR/.NAME.tmp.PID.N" with N counting from 0, it runs
// `plant "PATH"`, then execs the binary as that PID. `files` are "DIR/NAME".
std::string at_old_temp_names(const std::vector<std::string>& files, const std::string& plant) {
  std::string paths;
  for (const std::string& f : files) {
    const fs::path p(f);
    paths += " " + shell_quote((p.parent_path() / ("." + p.filename().string() + ".tmp")).string());
  }
  return "for n in $(seq 0 31); do for p in" + paths + "; do " + plant + " \"$p.$$.$n\"; done; done; exec";
}

// The models index.json lists, as "name@version".
std::set<std::string> index_models(const std::string& root) {
  simdjson::dom::parser parser;
  std::set<std::string> out;
  simdjson::dom::element doc;
  REQUIRE(parser.load(root + "/index.json").get(doc) == simdjson::SUCCESS);
  for (simdjson::dom::element m : doc["models"].get_array())
    out.insert(std::string(std::string_view(m["name"])) + "@" + std::string(std::string_view(m["version"])));
  return out;
}

}  // namespace

TEST_SUITE("e2e hardening") {
  TEST_CASE("deeply nested JSON: run, simulate and convert fail on one line and leave nothing") {
    TempDir dir;
    std::string text;
    for (int i = 0; i < 30; ++i)
      text += fmt::format("{{\"id\":{},\"input\":{{\"seed\":{}}}}}\n", i, i);
    text += "{\"extra\":" + std::string(200000, '[') + std::string(200000, ']') + ",\"input\":{\"seed\":1}}\n";
    const std::string trace = dir.write("deep.jsonl", text);
    const std::string message = trace + ":31: nesting deeper than 64 arrays and objects";

    check_error(run_cli({"run", hardening_model().model, "--trace", trace, "--out", dir.file("run")}), 2, message);
    CHECK(dir_is_empty_or_missing(dir.file("run")));
    check_error(run_cli({"simulate", "--trace", trace, "--tier", "l1=lru:10", "--out", dir.file("sim")}), 2, message);
    CHECK(dir_is_empty_or_missing(dir.file("sim")));
    fs::create_directories(dir.file("conv"));
    check_error(run_cli({"convert", trace, "-o", dir.file("conv/t.iptrace")}), 2, message);
    CHECK(dir_is_empty_or_missing(dir.file("conv")));
  }

  TEST_CASE("trace values out of range and control characters") {
    TempDir dir;
    const std::string far = dir.write("far.jsonl", R"({"ts_ms":1e308,"input":{"seed":1}})"
                                                   "\n");
    check_error(run_cli({"run", hardening_model().model, "--trace", far, "--open-loop"}), 2,
                far + ":1: 'ts_ms' 1e+308 is out of range (at most 9200000000000, about 290 years)");
    // In range, but --speed stretches it past what a clock holds.
    const std::string slow = dir.write("slow.jsonl", R"({"ts_ms":0,"input":{"seed":1}})"
                                                     "\n"
                                                     R"({"ts_ms":9000000000000,"input":{"seed":1}})"
                                                     "\n");
    check_error(run_cli({"run", hardening_model().model, "--trace", slow, "--open-loop", "--speed", "0.001"}), 2,
                slow + ":2: 'ts_ms' 9000000000000 at --speed 0.001 is more than 290 years from the first request");
    const std::string esc = dir.write("esc.jsonl", R"({"event":"\u001b[2J\nhello","model":"m","version":"v"})"
                                                   "\n"
                                                   R"({"input":{"seed":1}})"
                                                   "\n");
    check_error(run_cli({"run", hardening_model().model, "--trace", esc}), 2,
                esc + ":1: unknown event '\\x1b[2J\\nhello' (expected model_update)");
    const std::string csv = dir.write("neg.csv", "timestamp,key\n5,a\n-3,b\n");
    check_error(run_cli({"simulate", "--trace", csv, "--tier", "l1=lru:10"}), 2,
                csv + ":3: timestamp '-3': must be >= 0");
  }

  TEST_CASE("npy inputs: a huge header length, overflowing shapes") {
    TempDir dir;
    const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 16), }\n";
    const std::string huge = dir.write("huge.npy", npy_bytes(header, 0xFFFFFFF0u, 192));
    const std::string trace = dir.write("t.jsonl", R"({"id":7,"input":{"file":"huge.npy"}})"
                                                   "\n");
    check_error(run_cli({"run", hardening_model().model, "--trace", trace, "--out", dir.file("out")}), 2,
                trace + ":1: input file '" + huge + "': header of 4294967280 bytes (at most 65536 supported)");
    CHECK(dir_is_empty_or_missing(dir.file("out")));

    const std::string wide_header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n";
    const std::string wide =
        dir.write("wide.npy", npy_bytes(wide_header, static_cast<std::uint32_t>(wide_header.size()), 0));
    const std::string t2 = dir.write("t2.jsonl", R"({"id":7,"input":{"file":"wide.npy"}})"
                                                 "\n");
    check_error(run_cli({"run", hardening_model().model, "--trace", t2}), 2,
                t2 + ":1: input file '" + wide + "': shape [4611686018427387904, 4]: more bytes than fit in 64 bits");

    const std::string t3 =
        dir.write("t3.jsonl", R"({"id":7,"input":{"file":"huge.npy","shape":[4294967296,4294967296,4]}})"
                              "\n");
    check_error(run_cli({"run", hardening_model().model, "--trace", t3}), 2,
                t3 + ":1: 'input.shape' [4294967296, 4294967296, 4] has more elements than fit in 64 bits");
  }

  TEST_CASE("models that are not regular files, empty, or not the expected sha256") {
    TempDir dir;
    check_error(run_cli({"run", "/dev/zero", "--trace", hardening_model().trace}), 2,
                "model '/dev/zero' is not a regular file");
    const std::string empty = dir.write("empty.pt", "");
    check_error(run_cli({"run", empty, "--trace", hardening_model().trace}), 2,
                "model '" + empty + "' is empty, not a TorchScript file");

    auto good = run_cli({"run", hardening_model().model, "--trace", hardening_model().trace, "--out", dir.file("out")});
    REQUIRE_MESSAGE(good.code == 0, good.err);
    const std::string sha = sha256_of_run(good);
    REQUIRE(sha.size() == 64);
    CHECK(slurp(dir.file("out/summary.json")).find("\"model_sha256\": \"" + sha + "\"") != std::string::npos);
    auto checked = run_cli({"run", hardening_model().model, "--trace", hardening_model().trace, "--model-sha256", sha});
    CHECK_MESSAGE(checked.code == 0, checked.err);

    // 200 bytes flipped mid-archive: libtorch may well load it; the hash does not match.
    std::string bytes = slurp(hardening_model().model);
    for (std::size_t i = bytes.size() / 2; i < bytes.size() / 2 + 200; ++i)
      bytes[i] = static_cast<char>(~bytes[i]);
    const std::string flipped = dir.write("flipped.pt", bytes);
    auto r =
        run_cli({"run", flipped, "--trace", hardening_model().trace, "--model-sha256", sha, "--out", dir.file("bad")});
    CHECK(r.code == 2);
    CHECK(r.err.rfind("inferprof: error: model '" + flipped + "': sha256 is ", 0) == 0);
    CHECK(r.err.find(", but --model-sha256 expects " + sha + "\n") != std::string::npos);
    CHECK(count_lines(r.err) == 1);
    CHECK(dir_is_empty_or_missing(dir.file("bad")));
    auto cmp = run_cli({"compare", flipped, "--trace", hardening_model().trace, "--caches", "none", "--caches", "l1",
                        "--model-sha256", sha, "--out", dir.file("cmp")});
    CHECK(cmp.code == 2);
    CHECK(cmp.err.rfind("inferprof: error: model '" + flipped + "': sha256 is ", 0) == 0);
    CHECK(dir_is_empty_or_missing(dir.file("cmp")));
    check_error(run_cli({"run", hardening_model().model, "--trace", hardening_model().trace, "--model-sha256", "abc"}),
                2, "--model-sha256 'abc': expected 64 hex digits (as sha256sum prints)");
  }

  TEST_CASE("--threads and --verify bounds") {
    check_error(run_cli({"run", hardening_model().model, "--trace", hardening_model().trace, "--threads", "100000"}), 2,
                "--threads 100000: at most 1024 (0 means one per core)");
    auto r = run_cli({"run", hardening_model().model, "--trace", hardening_model().trace, "--verify=-1"});
    CHECK(r.code == 2);
    CHECK(r.err.find("--verify") != std::string::npos);
    CHECK(count_lines(r.err) == 1);
  }

  TEST_CASE("simulate --costs: a summary whose stages are not an object, and inf in requests.csv") {
    TempDir dir;
    const std::string summary =
        dir.write("run/summary.json", R"({"schema":"inferprof.summary/1","stages":5,"total":{"mean_us":10}})");
    check_error(run_cli({"simulate", "--trace", hardening_model().trace, "--tier", "l1=lru:10", "--costs", summary}), 2,
                "--costs: " + summary + ": 'stages' is missing or not an object (is this an inferprof summary.json?)");
    const std::string good =
        dir.write("run2/summary.json", R"({"schema":"inferprof.summary/1","stages":{},"total":{"mean_us":10}})");
    dir.write("run2/requests.csv", "total_us,input_us,preprocess_us,cache,ok\n10,1,1,none,true\ninf,1,1,none,true\n");
    check_error(run_cli({"simulate", "--trace", hardening_model().trace, "--tier", "l1=lru:10", "--costs", good}), 2,
                dir.file("run2/requests.csv") +
                    ":3: 'inf' in column 'total_us' is not a number of µs from 0 to 1e12 (about 11.6 days)");
  }

  TEST_CASE("store: symlinks are never followed by put or rm") {
    TempDir dir;
    const std::string root = dir.file("store");
    const std::string file = dir.write("model.bin", "model bytes");
    // A store elsewhere, whose model folder is linked into this one.
    REQUIRE(run_cli({"store", "put", dir.file("elsewhere"), "m@v1", file}).code == 0);
    fs::create_directories(root);
    fs::create_directory_symlink(dir.file("elsewhere/m"), root + "/m");
    check_error(run_cli({"store", "rm", root, "m@v1"}), 2,
                root + ": " + root + "/m is a symbolic link; a store's model and version folders must be real folders");
    CHECK(fs::exists(dir.file("elsewhere/m/v1/model.pt")));
    check_error(run_cli({"store", "put", root, "m@v2", file}), 2,
                root + ": " + root + "/m is a symbolic link; a store's model and version folders must be real folders");
    CHECK_FALSE(fs::exists(dir.file("elsewhere/m/v2")));
    // A version folder linked the same way.
    fs::create_directories(root + "/n");
    fs::create_directory_symlink(dir.file("elsewhere/m/v1"), root + "/n/v1");
    check_error(
        run_cli({"store", "rm", root, "n@v1"}), 2,
        root + ": " + root + "/n/v1 is a symbolic link; a store's model and version folders must be real folders");
    CHECK(fs::exists(dir.file("elsewhere/m/v1/model.pt")));
  }

  TEST_CASE("store put: folders, devices, empty files and overlong names are bad input") {
    TempDir dir;
    const std::string root = dir.file("store");
    fs::create_directories(dir.file("folder"));
    check_error(run_cli({"store", "put", root, "m@v1", dir.file("folder")}), 2,
                dir.file("folder") + ": not a regular file");
    check_error(run_cli({"store", "put", root, "m@v1", "/dev/zero"}), 2, "/dev/zero: not a regular file");
    const std::string empty = dir.write("empty.pt", "");
    check_error(run_cli({"store", "put", root, "m@v1", empty}), 2, empty + ": the model file is empty");
    CHECK(dir_is_empty_or_missing(root));
    const std::string file = dir.write("model.bin", "model bytes");
    const std::string name(300, 'a');
    check_error(run_cli({"store", "put", root, name + "@v1", file}), 2,
                "store put: the model: expected NAME@VERSION or NAME, each of letters, digits, '.', '_' and '-', at "
                "most 128 characters (e.g. resnet@v2), got '" +
                    name + "@v1'");
    fs::create_directories(root);
    check_error(run_cli({"store", "ls", root, name}), 2,
                "store ls: the model name: expected NAME@VERSION or NAME, each of letters, digits, '.', '_' and '-', "
                "at most 128 characters (e.g. resnet@v2), got '" +
                    name + "'");
  }

  TEST_CASE("store: 10 concurrent puts all reach index.json") {
    TempDir dir;
    const std::string file = dir.write("model.bin", "model bytes");
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      const std::string root = dir.file(fmt::format("store{}", round));
      std::string cmd;
      for (int i = 0; i < 10; ++i)
        cmd += fmt::format("{} store put {} m@v{} {} >/dev/null 2>&1 & ", shell_quote(INFERPROF_BINARY),
                           shell_quote(root), i, shell_quote(file));
      cmd += "wait";
      REQUIRE(std::system(cmd.c_str()) == 0);
      CHECK(count_index_models(root) == 10);
      auto ls = run_cli({"store", "ls", root, "--format", "csv"});
      CHECK(count_lines(ls.out) == 11);
    }
  }

  TEST_CASE("store rm: a model folder swapped for a symlink while rm waits for the lock deletes nothing outside") {
    TempDir dir;
    const std::string root = dir.file("st"), outside = dir.file("victim");
    const std::string file = dir.write("m.pt", "model bytes");
    REQUIRE(run_cli({"store", "put", root, "m@v1", file}).code == 0);
    // The victim looks like a model folder: v1/model.pt and v1/meta.json.
    REQUIRE(run_cli({"store", "put", dir.file("other"), "m@v1", file}).code == 0);
    fs::rename(dir.file("other/m"), outside);
    const CliResult r = swap_model_folder_under_lock(dir, root, outside, {"store", "rm", root, "m@v1"});
    check_error(r, 2,
                root + ": " + root + "/m is a symbolic link; a store's model and version folders must be real folders");
    CHECK(slurp(outside + "/v1/model.pt") == "model bytes");
    CHECK(fs::exists(outside + "/v1/meta.json"));
  }

  TEST_CASE("store put: a model folder swapped for a symlink while put waits for the lock writes nothing outside") {
    TempDir dir;
    const std::string root = dir.file("st"), outside = dir.file("victim");
    const std::string file = dir.write("m.pt", "model bytes");
    REQUIRE(run_cli({"store", "put", root, "m@v1", file}).code == 0);
    fs::create_directories(outside);
    const CliResult r = swap_model_folder_under_lock(dir, root, outside, {"store", "put", root, "m@v2", file});
    check_error(r, 2,
                root + ": " + root + "/m is a symbolic link; a store's model and version folders must be real folders");
    CHECK(fs::is_empty(outside));
    CHECK(index_models(root) == std::set<std::string>{"m@v1"});
  }

  TEST_CASE("store put: symlinks planted at temporary names redirect no write") {
    TempDir dir;
    const std::string root = dir.file("st"), victim = dir.write("v.txt", "victim");
    const std::string file = dir.write("m.pt", "model bytes");
    fs::create_directories(root + "/m/v1");
    const std::vector<std::string> files = {root + "/m/v1/model.pt", root + "/m/v1/meta.json", root + "/index.json"};
    auto r = run_cli({"store", "put", root, "m@v1", file}, at_old_temp_names(files, "ln -s " + shell_quote(victim)));
    CHECK_MESSAGE(r.code == 0, r.err);
    CHECK(slurp(victim) == "victim");
    for (const std::string& f : files)
      CHECK_MESSAGE(fs::is_regular_file(fs::symlink_status(f)), f);
    CHECK(slurp(root + "/m/v1/model.pt") == "model bytes");
  }

  TEST_CASE("store put: files already at temporary names are left as they were") {
    TempDir dir;
    const std::string root = dir.file("st"), file = dir.write("m.pt", "model bytes");
    fs::create_directories(root + "/m/v1");
    auto r = run_cli({"store", "put", root, "m@v1", file},
                     at_old_temp_names({root + "/m/v1/model.pt"}, "printf precious >"));
    CHECK_MESSAGE(r.code == 0, r.err);
    int kept = 0;
    for (const auto& e : fs::directory_iterator(root + "/m/v1")) {
      if (e.path().filename().string().rfind(".model.pt.tmp.", 0) != 0) continue;
      CHECK(slurp(e.path()) == "precious");
      ++kept;
    }
    CHECK(kept == 32);
    CHECK(slurp(root + "/m/v1/model.pt") == "model bytes");
  }

  TEST_CASE("run --out: symlinks planted at temporary names redirect no report") {
    TempDir dir;
    const std::string out = dir.file("out"), victim = dir.write("v.txt", "victim");
    fs::create_directories(out);
    std::vector<std::string> files;
    for (const char* name :
         {"summary.json", "requests.csv", "stages.csv", "stacks.folded", "flamegraph.svg", "trace.json", "report.html"})
      files.push_back(out + "/" + name);
    // The probe that checks the folder is writable had a predictable name too.
    const std::string probe = "ln -s " + shell_quote(victim) + " " + shell_quote(out + "/.inferprof-probe") + ".$$; ";
    auto r =
        run_cli({"run", hardening_model().model, "--trace", hardening_model().trace, "--out", out, "--no-progress"},
                probe + at_old_temp_names(files, "ln -s " + shell_quote(victim)));
    CHECK_MESSAGE(r.code == 0, r.err);
    CHECK(slurp(victim) == "victim");
    for (const std::string& f : files)
      CHECK_MESSAGE(fs::is_regular_file(fs::symlink_status(f)), f);
  }

  TEST_CASE("store: a forged Redis manifest claiming a huge model is corrupt, and the remote serves") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    TempDir dir;
    const std::string root = dir.file("st");
    auto put = run_cli({"store", "put", root, "m@v1", hardening_model().model});
    REQUIRE(put.code == 0);
    simdjson::dom::parser parser;
    const std::string sha(std::string_view(parser.parse(put.out)["sha256"]));
    std::uint64_t claim = 0;
    std::string env;
    SUBCASE("2^62 bytes") {
      claim = std::uint64_t{1} << 62;
    }
    // Under 3 GB of address space (enough for libtorch): 4 GB zero-filled
    // before the chunks are looked at would fail. ASan cannot start there.
    if (!kSanitized) {
      SUBCASE("4 GB, under ulimit -v") {
        claim = 4'000'000'000;
        env = "ulimit -v 3000000;";
      }
    }
    REQUIRE(redis.set(redis_key("m@v1", "manifest"), forged_manifest(claim, sha)) == "+OK");
    const std::vector<std::string> args = {"run",           "m@v1",      "--store", root,
                                           "--store-redis", redis.url(), "--trace", hardening_model().trace,
                                           "--no-progress"};
    auto r = run_cli(args, env);
    CHECK_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("(m@v1 from the store's remote tier)") != std::string::npos);
    // The remote's copy replaced the forged one.
    auto again = run_cli(args, env);
    CHECK_MESSAGE(again.code == 0, again.err);
    CHECK(again.out.find("(m@v1 from the store's redis tier)") != std::string::npos);
  }

  TEST_CASE("store: a bad meta.json elsewhere is a warning, and rm and put keep index.json true to the folders") {
    TempDir dir;
    const std::string root = dir.file("st"), file = dir.write("m.pt", "model bytes");
    REQUIRE(run_cli({"store", "put", root, "m@v1", file}).code == 0);
    REQUIRE(run_cli({"store", "put", root, "m@v2", file}).code == 0);
    const std::string junk = dir.write("st/x/v9/meta.json", "junk\n");
    const auto warned = [&](const CliResult& r) {
      CHECK(count_lines(r.err) == 1);
      CHECK_MESSAGE(r.err.rfind("inferprof: warning: " + junk + ": ", 0) == 0, r.err);
    };
    auto rm = run_cli({"store", "rm", root, "m@v1"});
    CHECK(rm.code == 0);
    CHECK(rm.out == "removed m@v1 from " + root + "\n");
    warned(rm);
    CHECK_FALSE(fs::exists(root + "/m/v1"));
    CHECK(index_models(root) == std::set<std::string>{"m@v2"});
    auto put = run_cli({"store", "put", root, "m@v3", file});
    CHECK(put.code == 0);
    warned(put);
    CHECK(index_models(root) == std::set<std::string>{"m@v2", "m@v3"});
  }

  TEST_CASE("--replicas is bounded by the cores and ulimit -u, before any replica starts") {
    TempDir dir;
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const std::vector<std::string> run = {"run",   hardening_model().model, "--trace", hardening_model().trace,
                                          "--out", dir.file("out")};
    auto with = [&](const std::string& n) {
      std::vector<std::string> args = run;
      args.insert(args.end(), {"--replicas", n});
      return args;
    };
    SUBCASE("more than 8 per core") {
      check_error(run_cli(with("100000")), 2,
                  fmt::format("--replicas 100000: at most {} on this machine (8 per core, {} core{})", 8 * cores, cores,
                              cores == 1 ? "" : "s"));
    }
    // Every thread of every replica counts against ulimit -u: 64 is 4 replicas of 16 threads.
    SUBCASE("ulimit -u") {
      check_error(run_cli(with("5"), "prlimit --nproc=64 --"), 2,
                  "--replicas 5: at most 4 on this machine (ulimit -u 64 allows 4 processes of 16 threads)");
    }
    CHECK(dir_is_empty_or_missing(dir.file("out")));
  }
}

// Issue 24, the rest: symbolic-link loops, a model larger than the address
// space, report files a killed run left behind.
TEST_SUITE("e2e hardening") {
  TEST_CASE("a symbolic-link loop as a store, a store entry, --profile, --costs or the model is one line, exit 2") {
    TempDir dir;
    const std::string loop = dir.file("loop");
    fs::create_symlink("loop", loop);
    const std::string why = "Too many levels of symbolic links";
    check_error(run_cli({"store", "ls", loop}), 2, loop + ": " + loop + ": " + why);
    const std::string root = dir.file("st");
    REQUIRE(run_cli({"store", "put", root, "m@v1", hardening_model().model}).code == 0);
    fs::create_symlink("loop", root + "/loop");
    // ls lists what it can read and names what it left out, as put does (exit 0).
    auto ls = run_cli({"store", "ls", root, "--format", "csv"});
    CHECK_MESSAGE(ls.code == 0, ls.err);
    CHECK(ls.out.find("\nm,v1,") != std::string::npos);
    CHECK(ls.err == "inferprof: warning: " + root + ": " + root + "/loop: " + why + " (left out of the list)\n");
    // A put still publishes, and says what it left out of index.json.
    auto put = run_cli({"store", "put", root, "m@v2", hardening_model().model});
    CHECK_MESSAGE(put.code == 0, put.err);
    CHECK(put.err == "inferprof: warning: " + root + ": " + root + "/loop: " + why + " (left out of index.json)\n");
    CHECK(count_index_models(root) == 2);
    check_error(run_cli({"run", hardening_model().model, "--trace", hardening_model().trace, "--profile", loop}), 2,
                "profile '" + loop + "': " + why);
    check_error(run_cli({"simulate", "--trace", hardening_model().trace, "--tier", "l1=lru:10", "--costs", loop}), 2,
                "--costs " + loop + ": " + why);
    check_error(run_cli({"run", loop, "--trace", hardening_model().trace}), 2, "model '" + loop + "': " + why);
    check_error(run_cli({"inspect", loop}), 2, "model '" + loop + "': " + why);
    check_error(run_cli({"store", "put", root, "m@v3", loop}), 2, loop + ": cannot open: " + why);
  }

  // ASan reserves terabytes of address space for its shadow memory: under `ulimit -v` it cannot start.
  TEST_CASE("a model larger than the address space: store put, inspect and run name it and its size, exit 3" *
            doctest::skip(kSanitized)) {
    TempDir dir;
    const std::string big = dir.write("big.pt", "");
    fs::resize_file(big, 4'000'000'000);             // sparse: nothing to read, 4 GB to allocate
    const std::string limit = "ulimit -v 3000000;";  // enough for libtorch, not for 4 GB more
    const std::string message = big + ": 4000000000 bytes: not enough memory to read it (see ulimit -v)";
    check_error(run_cli({"store", "put", dir.file("st"), "m@v1", big}, limit), 3, message);
    CHECK(dir_is_empty_or_missing(dir.file("st")));
    check_error(run_cli({"inspect", big}, limit), 3, message);
    check_error(
        run_cli({"run", big, "--trace", hardening_model().trace, "--out", dir.file("out"), "--no-progress"}, limit), 3,
        message);
    CHECK(dir_is_empty_or_missing(dir.file("out")));
  }

  TEST_CASE("a FIFO as simulate's trace or --costs, convert's trace, a model or a text_file is refused at once") {
    TempDir dir;
    for (const char* name : {"t.jsonl", "summary.json", "run/summary.json", "m.pt", "f.txt"}) {
      fs::create_directories(fs::path(dir.file(name)).parent_path());
      REQUIRE(::mkfifo(dir.file(name).c_str(), 0600) == 0);
    }
    const std::string timeout = "timeout 60";  // 124 when it waits for a writer
    const std::string trace_fifo = "cannot read trace '" + dir.file("t.jsonl") +
                                   "': not a regular file (a pipe or device is read only once, and a trace is read "
                                   "several times: save it to a file first)";
    check_error(run_cli({"simulate", "--trace", dir.file("t.jsonl"), "--tier", "l1=lru:10"}, timeout), 2, trace_fifo);
    check_error(run_cli({"convert", dir.file("t.jsonl"), "-o", dir.file("t.iptrace")}, timeout), 2, trace_fifo);
    CHECK_FALSE(fs::exists(dir.file("t.iptrace")));
    // The file, or a run's folder holding it.
    for (const auto& [costs, named] : {std::pair{dir.file("summary.json"), dir.file("summary.json")},
                                       std::pair{dir.file("run"), dir.file("run/summary.json")}})
      check_error(
          run_cli({"simulate", "--trace", hardening_model().trace, "--tier", "l1=lru:10", "--costs", costs}, timeout),
          2, "--costs " + named + ": not a regular file (expected a run's summary.json or its --out folder)");
    check_error(run_cli({"run", dir.file("m.pt"), "--trace", hardening_model().trace}, timeout), 2,
                "model '" + dir.file("m.pt") + "' is not a regular file");
    check_error(run_cli({"inspect", dir.file("m.pt")}, timeout), 2,
                "model '" + dir.file("m.pt") + "' is not a regular file");
    check_error(run_cli({"store", "put", dir.file("st"), "m@v1", dir.file("m.pt")}, timeout), 2,
                dir.file("m.pt") + ": not a regular file");
    const std::string text_trace = dir.write("x.jsonl", "{\"input\": {\"text_file\": \"f.txt\"}}\n");
    check_error(run_cli({"run", hardening_model().model, "--trace", text_trace, "--warmup", "0", "--out", dir.file("r"),
                         "--no-progress"},
                        timeout),
                2, text_trace + ":1: text file '" + dir.file("f.txt") + "': not a regular file");
    CHECK(dir_is_empty_or_missing(dir.file("r")));
  }

  TEST_CASE("run --out leaves every file it did not create, also temporary files a killed run left") {
    // A SIGKILLed run's temporary files are named as ours are, but this process did not create them:
    // removing by a name pattern is how a user's file goes, so they stay (docs/development.md).
    TempDir dir;
    const std::string out = dir.file("out");
    fs::create_directories(out);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) ::_exit(0);
    REQUIRE(::waitpid(child, nullptr, 0) == child);  // a PID that runs nothing now, as a SIGKILLed run's
    const std::vector<std::string> kept = {fmt::format(".requests.csv.tmp.{}.0123456789abcdef", child),
                                           fmt::format(".trace.json.tmp.{}.fedcba9876543210", child),
                                           fmt::format(".requests.csv.tmp.{}.0123456789abcdef", ::getpid()),
                                           "notes.txt"};
    for (const std::string& name : kept)
      dir.write("out/" + name, "someone's");
    auto r =
        run_cli({"run", hardening_model().model, "--trace", hardening_model().trace, "--out", out, "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    for (const std::string& name : kept)
      CHECK_MESSAGE(fs::exists(out + "/" + name), name);
  }
}
