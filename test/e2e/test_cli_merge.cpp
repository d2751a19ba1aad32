// merge, run --replicas' merged report and run --group: statistics over every
// replica's requests, checked against the union of their requests.csv files.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cli_harness.hpp"
#include "redis_server.hpp"
#include "temp_dir.hpp"
#include "test_util.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

// total_us of every row of a requests.csv (read here, not with inferprof's reader).
std::vector<double> totals_of(const std::string& csv) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::size_t at = 0;;) {
    const std::size_t comma = line.find(',', at);
    header.push_back(line.substr(at, comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  const auto col = static_cast<std::size_t>(std::find(header.begin(), header.end(), "total_us") - header.begin());
  REQUIRE(col < header.size());
  std::vector<double> out;
  while (std::getline(in, line)) {
    std::size_t at = 0;
    for (std::size_t i = 0; i < col; ++i)
      at = line.find(',', at) + 1;  // the columns before total_us hold no comma (keys are "kN")
    out.push_back(std::stod(line.substr(at, line.find(',', at) - at)));
  }
  return out;
}

// Nearest-rank quantile.
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::max(1.0, std::ceil(q * static_cast<double>(v.size()))));
  return v[rank - 1];
}

struct MergeFixture {
  TempDir dir;
  std::string model = dir.file("m.pt"), trace = dir.file("t.jsonl"), run = dir.file("r");
  MergeFixture() {
    make_model_and_trace(model, trace, {"--requests", "600", "--keys", "50"});
    auto r = run_cli({"run", model, "--trace", trace, "--replicas", "3", "--warmup", "1", "--out", run});
    if (r.code != 0) throw std::runtime_error("run --replicas failed: " + r.err);
  }
  std::string replica(int k) const { return fmt::format("{}/replica-{}", run, k); }
};

MergeFixture& merge_fixture() {
  static MergeFixture f;
  return f;
}

// A copy of replica k's folder in `to`, to change as a hand, a tool or an attacker might.
std::string copy_replica(const MergeFixture& f, int k, const TempDir& to) {
  const std::string dst = to.file(fmt::format("replica-{}", k));
  fs::copy(f.replica(k), dst, fs::copy_options::recursive);
  return dst;
}

void replace_in(const std::string& file, const std::string& from, const std::string& to) {
  std::string text = slurp(file);
  const std::size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  text.replace(at, from.size(), to);
  std::ofstream(file, std::ios::trunc) << text;
}

// Sets the cell of `column` in data row `row` (1: the first after the header) of a requests.csv whose cells hold no
// comma, as the fixture's do.
void set_cell(const std::string& csv, std::size_t row, const std::string& column, const std::string& value) {
  std::vector<std::string> lines;
  std::ifstream in(csv);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  in.close();
  auto cells = [](const std::string& line) {
    std::vector<std::string> out;
    for (std::size_t at = 0;;) {
      const std::size_t comma = line.find(',', at);
      out.push_back(line.substr(at, comma - at));
      if (comma == std::string::npos) return out;
      at = comma + 1;
    }
  };
  const std::vector<std::string> header = cells(lines.at(0));
  const auto col = static_cast<std::size_t>(std::find(header.begin(), header.end(), column) - header.begin());
  REQUIRE(col < header.size());
  std::vector<std::string> r = cells(lines.at(row));
  r.at(col) = value;
  std::string joined;
  for (std::size_t i = 0; i < r.size(); ++i)
    joined += (i ? "," : "") + r[i];
  lines.at(row) = joined;
  std::ofstream out(csv, std::ios::trunc);
  for (const std::string& line : lines)
    out << line << '\n';
}

// One line on stderr, nothing on stdout, exit 2: a refusal.
void check_refused(const CliResult& r, const std::string& says) {
  CHECK_MESSAGE(r.code == 2, std::string(r.out + r.err));
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.size() < 600);
  CHECK_MESSAGE(r.err.find(says) != std::string::npos, r.err);
}

}  // namespace

TEST_SUITE("e2e merge") {
  TEST_CASE("run --replicas writes one report over every replica's requests: its percentiles are the union's") {
    auto& f = merge_fixture();
    simdjson::dom::parser parser;
    auto s = parser.load(f.run + "/summary.json");
    std::vector<double> all;
    for (int k = 0; k < 3; ++k) {
      const std::vector<double> t = totals_of(f.replica(k) + "/requests.csv");
      CHECK(t.size() == 200);  // round-robin
      all.insert(all.end(), t.begin(), t.end());
    }
    CHECK(json_number(s["requests"]) == 600);
    CHECK(std::string_view(s["run"]["command"]) == "merge");
    CHECK(json_number(s["run"]["merged_from"]) == 3);
    CHECK(json_number(s["run"]["concurrency"]) == 3);
    // Under 1,024 requests the histogram keeps every value: the quantiles are exact (to the file's 3 decimals).
    for (auto [name, q] : {std::pair{"p50_us", 0.5}, std::pair{"p90_us", 0.9}, std::pair{"p99_us", 0.99}})
      CHECK(json_number(s["total"][name]) == doctest::Approx(quantile(all, q)).epsilon(1e-6));
    CHECK(json_number(s["total"]["max_us"]) == doctest::Approx(*std::max_element(all.begin(), all.end())));
    // The merged requests.csv holds every request once.
    CHECK(totals_of(f.run + "/requests.csv").size() == 600);
    auto reps = parser.load(f.run + "/replicas.json");
    CHECK(json_number(reps["requests"]) == 600);
    CHECK(json_number(reps["failed"]) == 0);
    CHECK(json_number(reps["lost"]) == 0);
    CHECK(json_number(reps["duplicated"]) == 0);
    CHECK(json_number(reps["replicas"].at(1)["share"]) == 200);
  }

  TEST_CASE("merge of the replicas' folders gives the report run --replicas wrote") {
    auto& f = merge_fixture();
    TempDir out;
    auto r = run_cli({"merge", f.replica(2), f.replica(0), f.replica(1), "--out", out.file("m")});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("inferprof merge") != std::string::npos);
    CHECK(r.out.find("3 replicas merged") != std::string::npos);
    CHECK(slurp(out.file("m") + "/stages.csv") == slurp(f.run + "/stages.csv"));
    simdjson::dom::parser p1, p2;
    auto a = p1.load(out.file("m") + "/summary.json");
    auto b = p2.load(f.run + "/summary.json");
    CHECK(json_number(a["total"]["p99_us"]) == json_number(b["total"]["p99_us"]));
    CHECK(json_number(a["throughput_rps"]) == doctest::Approx(json_number(b["throughput_rps"])));
    // The merged run is a run: diff reads it.
    auto d = run_cli({"diff", f.run, out.file("m")});
    CHECK_MESSAGE(d.code == 0, std::string(d.out + d.err));
  }

  TEST_CASE("a replica without a folder is reported as failed, the others are merged, exit 3") {
    auto& f = merge_fixture();
    TempDir out;
    auto r = run_cli({"merge", f.replica(0), f.replica(2), "--out", out.file("m")});
    CHECK(r.code == 3);
    CHECK(r.err.find("1 of 3 replicas failed or left no report") != std::string::npos);
    simdjson::dom::parser parser;
    auto reps = parser.load(out.file("m") + "/replicas.json");
    CHECK(std::string_view(reps["replicas"].at(1)["status"]) == "no report");
    CHECK(json_number(reps["failed"]) == 1);
    CHECK(json_number(reps["lost"]) == 200);  // replica 1's share, counted from the trace
    auto s = parser.load(out.file("m") + "/summary.json");
    CHECK(json_number(s["requests"]) == 400);
    std::string warnings;
    for (auto w : simdjson::dom::array(s["run"]["warnings"]))
      warnings += std::string(std::string_view(w)) + "\n";
    CHECK(warnings.find("1 of 3 replicas failed or left no report") != std::string::npos);
    CHECK(warnings.find("200 requests of the trace were served by no replica") != std::string::npos);
  }

  TEST_CASE("merge refuses what is not one run's replicas, with one line, and writes nothing") {
    auto& f = merge_fixture();
    TempDir out;
    const std::string o = out.file("m");
    TempDir empty;  // not the folder --out is in: that overlap is refused first
    auto none = run_cli({"merge", empty.path(), "--out", o});
    CHECK(none.code == 2);
    CHECK(count_lines(none.err) == 1);
    CHECK(none.err.find("summary.json") != std::string::npos);
    auto twice = run_cli({"merge", f.replica(0), f.replica(0), "--out", o});
    CHECK(twice.code == 2);
    CHECK(twice.err.find("replica 0 is also") != std::string::npos);
    // Another model's run.
    const std::string other = out.file("other.pt");
    REQUIRE(run_cli({"gen-model", "--arch", "mlp", "--seed", "7", "-o", other}).code == 0);
    REQUIRE(run_cli({"run", other, "--trace", f.trace, "--limit", "20", "--out", out.file("o")}).code == 0);
    auto mixed = run_cli({"merge", f.replica(0), out.file("o"), "--out", o});
    CHECK(mixed.code == 2);
    CHECK(mixed.err.find("differs from") != std::string::npos);
    CHECK(!fs::exists(o));
  }
}

TEST_SUITE("e2e merge") {
  TEST_CASE("merge and diff refuse a requests.csv value past its bound, naming file, line and column") {
    auto& f = merge_fixture();
    // A row of 1e300 µs once merged into a mean of -4.6e13 µs (exit 0); negative totals read as "improved".
    for (const auto& [value, column] : std::vector<std::pair<std::string, std::string>>{{"1e300", "total_us"},
                                                                                        {"-5", "total_us"},
                                                                                        {"1e15", "compute_us"},
                                                                                        {"-1", "arrival_us"},
                                                                                        {"nan", "cpu_us"}}) {
      CAPTURE(value);
      TempDir dir;
      const std::string a = copy_replica(f, 0, dir);
      copy_replica(f, 1, dir);
      copy_replica(f, 2, dir);
      set_cell(a + "/requests.csv", 3, column, value);
      const std::string says = fmt::format(
          "{}/requests.csv:4: '{}' in column '{}' is not a number of µs from 0 to 1e12 "
          "(about 11.6 days)",
          a, value, column);
      check_refused(run_cli({"merge", a, dir.file("replica-1"), dir.file("replica-2"), "--out", dir.file("m")}), says);
      CHECK(!fs::exists(dir.file("m")));
      check_refused(run_cli({"diff", f.replica(1), a}), says);
    }
  }

  TEST_CASE("merge counts each replica's requests from its rows, checked against its summary") {
    auto& f = merge_fixture();
    TempDir dir;
    const std::string a = copy_replica(f, 0, dir), b = copy_replica(f, 1, dir), c = copy_replica(f, 2, dir);
    // A summary claiming a billion requests once printed "1,000,000,200 requests · 0 lost".
    replace_in(b + "/summary.json", "\n  \"requests\": 200,", "\n  \"requests\": 1000000000,");
    check_refused(run_cli({"merge", a, b, c}), fmt::format("{}/requests.csv: 200 requests (rows), but {}/summary.json "
                                                           "says 1,000,000,000",
                                                           b, b));
    // A requests.csv cut to 100 of its 200 rows once read "200 requests, 0 lost" for that replica.
    fs::copy_file(f.replica(1) + "/summary.json", b + "/summary.json", fs::copy_options::overwrite_existing);
    std::ifstream in(f.replica(1) + "/requests.csv");
    std::string cut;
    for (std::string line; cut.size() < 1 << 20 && std::getline(in, line) && count_lines(cut) < 101;)
      cut += line + "\n";
    std::ofstream(b + "/requests.csv", std::ios::trunc) << cut;
    check_refused(run_cli({"merge", a, b, c}),
                  fmt::format("{}/requests.csv: 100 requests (rows), but {}/summary.json says 200", b, b));
    check_refused(run_cli({"diff", f.replica(1), b}), "requests.csv: 100 requests (rows)");
    // A group of ten million replicas (once 3.9 GB of rows): refused before a row is made.
    fs::copy_file(f.replica(1) + "/requests.csv", b + "/requests.csv", fs::copy_options::overwrite_existing);
    for (const std::string& d : {a, b, c})
      replace_in(d + "/summary.json", "\"count\": 3,", "\"count\": 10000000,");
    check_refused(run_cli({"merge", a, b, c}, "ulimit -v 4000000;"),
                  "'run.replica.count' is 10000000, expected a whole number from 1 to 65536");
  }

  TEST_CASE("replicas of one merge agree on group, shard_by, limit, model and trace: else the field is named") {
    auto& f = merge_fixture();
    for (const auto& [from, to, says] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"\"group\": \"\"", "\"group\": \"other\"", "group other differs from"},
             {"\"shard_by\": \"rr\"", "\"shard_by\": \"hash\"", "shard_by hash differs from"},
             {"\"limit\": 0,", "\"limit\": 100,", "limit 100 differs from"},
             {"\"model_sha256\": \"", "\"model_sha256\": \"00", "model sha256 00"},
             {"\"trace_hash\": \"xxh3:", "\"trace_hash\": \"xxh3:00", "trace xxh3:00"}}) {
      CAPTURE(to);
      TempDir dir;
      const std::string a = copy_replica(f, 0, dir), b = copy_replica(f, 1, dir);
      // An empty string (an older summary's) is not compared: a group needs one on both sides.
      if (from.find("group") != std::string::npos) replace_in(a + "/summary.json", from, "\"group\": \"one\"");
      replace_in(b + "/summary.json", from, to);
      const CliResult r = run_cli({"merge", a, b});
      check_refused(r, b + ": " + says);
      CHECK(r.err.find(a + "'s ") != std::string::npos);
    }
  }

  TEST_CASE("merge and diff refuse a FIFO at once, a summary.json over 64 MiB, a requests.csv line over 1 MiB") {
    auto& f = merge_fixture();
    TempDir dir;
    const std::string fifo = dir.file("fifo");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    // Nothing writes to it: these hung. `timeout` ends a hang with 124.
    check_refused(run_cli({"merge", fifo}, "timeout 20"), fifo + ": not a regular file");
    check_refused(run_cli({"diff", fifo, fifo}, "timeout 20"), fifo + ": not a regular file");
    // A FIFO for requests.csv in a replica's folder.
    const std::string a = copy_replica(f, 0, dir);
    fs::remove(a + "/requests.csv");
    REQUIRE(::mkfifo((a + "/requests.csv").c_str(), 0600) == 0);
    check_refused(run_cli({"merge", a}, "timeout 20"), a + "/requests.csv: not a regular file");
    // A 3 GB summary.json took 3.1 GB: its size is refused before a byte is read (a sparse file here).
    const std::string b = copy_replica(f, 1, dir);
    fs::resize_file(b + "/summary.json", (std::uintmax_t{64} << 20) + 1);
    check_refused(run_cli({"merge", b}), b + "/summary.json: 67108865 bytes, more than the 67108864 expected");
    check_refused(run_cli({"diff", b, b}), "more than the 67108864 expected");
    // A 3 MB header without a newline was read whole and echoed in the error: refused at 1 MiB, in one short line.
    const std::string c = copy_replica(f, 2, dir);
    std::ofstream(c + "/requests.csv", std::ios::trunc) << "seq," << std::string(3 << 20, 'x');
    check_refused(run_cli({"merge", c}, "ulimit -v 4000000;"),
                  c + "/requests.csv:1: a record longer than 1,048,576 bytes");
  }

  TEST_CASE("strings of a saved run reach the terminal printable, and markdown escaped") {
    auto& f = merge_fixture();
    TempDir dir;
    const std::string a = copy_replica(f, 0, dir), b = copy_replica(f, 1, dir), c = copy_replica(f, 2, dir);
    for (const std::string& d : {a, b, c}) {
      replace_in(d + "/summary.json", "\"model_arch\": \"mlp\"",
                 "\"model_arch\": \"\\u001b]0;owned\\u0007<img src=x onerror=alert(1)>|\"");
      replace_in(d + "/summary.json", "\"profile_name\": \"default\"", "\"profile_name\": \"\\u001b[2J\\u202e*x*\"");
    }
    replace_in(b + "/summary.json", "\"hostname\": \"", "\"hostname\": \"\\u001b[31m");
    for (const std::string format : {"table", "markdown", "json", "csv"}) {
      CAPTURE(format);
      const CliResult r = run_cli({"merge", a, b, c, "--format", format});
      REQUIRE_MESSAGE(r.code == 0, r.err);
      CHECK(r.out.find('\x1b') == std::string::npos);
      CHECK(r.out.find('\x07') == std::string::npos);
      CHECK(r.out.find("\u202e") == std::string::npos);
      if (format == "table") CHECK(r.out.find("\\x1b]0;owned\\x07") != std::string::npos);
      if (format == "markdown") {
        CHECK(r.out.find("<img") == std::string::npos);
        CHECK(r.out.find("&lt;img src=x onerror=alert(1)&gt;\\|") != std::string::npos);
        CHECK(r.out.find("\\*x\\*") != std::string::npos);
      }
    }
    const CliResult d = run_cli({"diff", a, b, "--force"});
    CHECK(d.out.find('\x1b') == std::string::npos);
    CHECK(d.out.find("\\x1b[31m") != std::string::npos);
  }
}

namespace {

// The trace lines each replica's requests.csv holds ("line" column), and every key on one replica.
std::vector<std::vector<std::string>> rows_of(const std::string& csv) {
  std::ifstream in(csv);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    for (std::size_t at = 0;;) {
      const std::size_t comma = line.find(',', at);
      cells.push_back(line.substr(at, comma - at));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    rows.push_back(std::move(cells));
  }
  return rows;
}

struct GroupFixture {
  TempDir dir;
  std::string model = dir.file("m.pt"), trace = dir.file("t.jsonl"), shared = dir.file("shared");
  GroupFixture() {
    // Open loop at 400 req/s: each replica replays for about a second.
    make_model_and_trace(model, trace, {"--requests", "400", "--keys", "40", "--rate", "400"});
    fs::create_directories(shared);
  }
  std::vector<std::string> args(const std::string& redis, const std::string& group, int k) const {
    return {"run",      model,           "--trace",     trace,
            "--group",  group,           "--redis",     redis,
            "--caches", "l1,l2",         "--open-loop", "--warmup",
            "1",        "--no-progress", "--out",       fmt::format("{}/{}-{}", shared, group, k)};
  }
};

}  // namespace

TEST_SUITE("e2e group") {
  TEST_CASE("replicas started separately meet in Redis, each replays its key shard, and merge loses nothing") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    GroupFixture f;
    std::vector<std::unique_ptr<Background>> group;
    for (int k = 0; k < 3; ++k) {
      std::vector<std::string> a = f.args(redis.url(), "g1", k);
      a.insert(a.end(), {"--shard-by", "key"});
      if (k == 2) {  // as a Kubernetes Indexed Job gives it
        ::setenv("JOB_COMPLETION_INDEX", "2", 1);
        ::setenv("INFERPROF_REPLICAS", "3", 1);
      } else {
        a.insert(a.end(), {"--replica", fmt::format("{}/3", k)});
      }
      group.push_back(start(a, f.dir, fmt::format("g1-{}", k)));
      ::unsetenv("JOB_COMPLETION_INDEX");
      ::unsetenv("INFERPROF_REPLICAS");
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // started apart, as a scheduler would
    }
    for (auto& bg : group)
      CHECK_MESSAGE(bg->wait(std::chrono::seconds(120)) == 0, slurp(bg->err));
    // Each trace line once, each key on one replica, and the replays started together.
    std::map<std::string, int> line_seen, key_on;
    simdjson::dom::parser parser;
    std::vector<double> epochs;
    for (int k = 0; k < 3; ++k) {
      const std::string folder = fmt::format("{}/g1-{}", f.shared, k);
      auto rows = rows_of(folder + "/requests.csv");
      const auto& h = rows.front();
      const auto col = [&](const char* name) {
        return static_cast<std::size_t>(std::find(h.begin(), h.end(), name) - h.begin());
      };
      for (std::size_t i = 1; i < rows.size(); ++i) {
        ++line_seen[rows[i][col("line")]];
        auto [it, fresh] = key_on.emplace(rows[i][col("key")], k);
        CHECK(it->second == k);
      }
      epochs.push_back(json_number(parser.load(folder + "/summary.json")["run"]["epoch_unix_ms"]));
    }
    CHECK(line_seen.size() == 400);
    CHECK(std::all_of(line_seen.begin(), line_seen.end(), [](const auto& p) { return p.second == 1; }));
    CHECK(*std::max_element(epochs.begin(), epochs.end()) - *std::min_element(epochs.begin(), epochs.end()) < 100);
    std::string said;
    for (auto& bg : group)
      said += slurp(bg->err);
    CHECK(said.find("group g1: every replica done; merge their folders with 'inferprof merge'") != std::string::npos);
    // The last to finish removed the group's keys and the shared cache's.
    CHECK(redis.integer("DBSIZE") == 0);
    TempDir out;
    auto m = run_cli({"merge", f.shared + "/g1-0", f.shared + "/g1-1", f.shared + "/g1-2", "--out", out.file("m")});
    REQUIRE_MESSAGE(m.code == 0, m.err);
    auto s = parser.load(out.file("m") + "/summary.json");
    CHECK(json_number(s["requests"]) == 400);
    CHECK(std::string_view(s["run"]["replica"]["group"]) == "g1");
  }

  TEST_CASE("a replica killed mid-run: the others finish and say so, merge reports its share as failed") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    GroupFixture f;
    std::vector<std::unique_ptr<Background>> group;
    for (int k = 0; k < 3; ++k) {
      std::vector<std::string> a = f.args(redis.url(), "g2", k);
      a.insert(a.end(), {"--replica", fmt::format("{}/3", k), "--speed", "0.25"});  // about 4 s each
      group.push_back(start(a, f.dir, fmt::format("g2-{}", k)));
    }
    // Killed once the replays have started (the start key is set).
    for (int i = 0; i < 600 && redis.command("EXISTS inferprof:group:g2:go").find('1') == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    ::kill(group[1]->pid, SIGKILL);
    CHECK(group[1]->wait(std::chrono::seconds(10)) == 128 + SIGKILL);
    std::string said;
    for (int k : {0, 2}) {
      CHECK_MESSAGE(group[static_cast<std::size_t>(k)]->wait(std::chrono::seconds(120)) == 0,
                    slurp(group[static_cast<std::size_t>(k)]->err));
      said += slurp(group[static_cast<std::size_t>(k)]->err);
    }
    CHECK(said.find("group g2: replica 1 stopped without finishing (no heartbeat)") != std::string::npos);
    CHECK(redis.integer("DBSIZE") == 0);
    TempDir out;
    auto m = run_cli({"merge", f.shared + "/g2-0", f.shared + "/g2-2", "--out", out.file("m")});
    CHECK(m.code == 3);
    simdjson::dom::parser parser;
    auto reps = parser.load(out.file("m") + "/replicas.json");
    CHECK(std::string_view(reps["replicas"].at(1)["status"]) == "no report");
    // Its share is lost, not silently missing: the three shares add up to the trace.
    const double share = json_number(reps["replicas"].at(1)["share"]);
    CHECK(share > 0);
    CHECK(json_number(reps["lost"]) == share);
    CHECK(json_number(reps["requests"]) + share == 400);
  }

  TEST_CASE("an interrupted replica stops at once, at the start barrier or mid-run, and the group still cleans up") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    GroupFixture f;
    auto wait_for_key = [&](const std::string& key) {
      for (int i = 0; i < 600 && redis.command("EXISTS " + key).find('1') == std::string::npos; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    };
    // Alone at the barrier (its partner never comes): Ctrl-C ends it as any interrupted run, keys gone.
    std::vector<std::string> a = f.args(redis.url(), "g5", 0);
    a.insert(a.end(), {"--replica", "0/2", "--group-timeout-s", "60"});
    auto alone = start(a, f.dir, "g5-alone");
    wait_for_key("inferprof:group:g5:alive:0");
    ::kill(alone->pid, SIGINT);
    CHECK(alone->wait(std::chrono::seconds(10)) == 130);
    CHECK(redis.integer("DBSIZE") == 0);
    // Mid-run: the interrupted replica reports what it served and leaves without waiting for the other.
    std::vector<std::unique_ptr<Background>> group;
    for (int k = 0; k < 2; ++k) {
      std::vector<std::string> b = f.args(redis.url(), "g6", k);
      b.insert(b.end(), {"--replica", fmt::format("{}/2", k), "--speed", "0.25"});  // about 4 s each
      group.push_back(start(b, f.dir, fmt::format("g6-{}", k)));
    }
    wait_for_key("inferprof:group:g6:go");
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    ::kill(group[0]->pid, SIGINT);
    CHECK(group[0]->wait(std::chrono::seconds(3)) == 130);
    CHECK(group[1]->code < 0);  // still replaying
    CHECK_MESSAGE(group[1]->wait(std::chrono::seconds(60)) == 0, slurp(group[1]->err));
    CHECK(fs::exists(f.shared + "/g6-0/summary.json"));
    CHECK(redis.integer("DBSIZE") == 0);
  }

  TEST_CASE("the start barrier times out naming who never came, and leaves nothing behind") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    GroupFixture f;
    std::vector<std::string> a = f.args(redis.url(), "g3", 0);
    a.insert(a.end(), {"--replica", "0/3", "--group-timeout-s", "1"});
    auto r = run_cli(a);
    CHECK(r.code == 3);
    CHECK(r.err.find("group g3: replicas 1, 2 of 3 not ready after 1 s") != std::string::npos);
    CHECK(count_lines(r.err) == 1);
    CHECK(!fs::exists(f.shared + "/g3-0"));
    CHECK(redis.integer("DBSIZE") == 0);
  }

  TEST_CASE("--group settings that cannot work are refused before anything starts") {
    GroupFixture f;
    const std::string redis = "redis://127.0.0.1:1";
    auto check = [&](std::vector<std::string> extra, const std::string& says, const std::string& env = "") {
      std::vector<std::string> a = f.args(redis, "g4", 0);
      a.insert(a.end(), extra.begin(), extra.end());
      auto r = run_cli(a, env);
      CHECK_MESSAGE(r.code == 2, r.err);
      CHECK_MESSAGE(r.err.find(says) != std::string::npos, r.err);
    };
    check({"--replica", "3/3"}, "--replica 3/3: expected K/N with 0 <= K < N");
    check({}, "--group needs this replica's place: --replica K/N, or $JOB_COMPLETION_INDEX and $INFERPROF_REPLICAS");
    check({}, "(from $JOB_COMPLETION_INDEX/$INFERPROF_REPLICAS)", "JOB_COMPLETION_INDEX=x INFERPROF_REPLICAS=2");
    check({"--replica", "0/2", "--replicas", "2"}, "--group joins replicas started elsewhere");
    auto bad_name = f.args(redis, "a b", 0);
    bad_name.insert(bad_name.end(), {"--replica", "0/2"});
    auto r = run_cli(bad_name);
    CHECK(r.code == 2);
    CHECK(r.err.find("--group 'a b': expected a name of letters") != std::string::npos);
  }
}
