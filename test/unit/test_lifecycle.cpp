// The lifecycle module: stop requests, cleanup actions, private folders and
// the sweep of stale ones. The signals themselves are tested end to end
// (test/e2e/test_cli_lifecycle.cpp).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "base/atomic_file.hpp"
#include "inferprof/lifecycle.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
namespace lifecycle = inferprof::lifecycle;
namespace report = inferprof::report;
using inferprof::testing::TempDir;

namespace {

// The PID of a process that has exited and been reaped.
pid_t dead_pid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

void touch(const fs::path& p) {
  std::ofstream(p) << "x";
}

}  // namespace

TEST_SUITE("lifecycle") {
  TEST_CASE("a stop reaches the hooks registered, and those registered after it at once") {
    lifecycle::reset_for_tests();
    int before = 0, after = 0;
    {
      lifecycle::GracefulScope graceful;
      lifecycle::OnInterrupt hook([&] { ++before; });
      CHECK_FALSE(lifecycle::interrupted());
      lifecycle::request_stop(SIGTERM);
      CHECK(lifecycle::interrupted());
      CHECK(lifecycle::interrupt_name() == "SIGTERM");
      CHECK(lifecycle::interrupted_exit_code() == 143);
      lifecycle::request_stop(SIGINT);  // not a second stop: the first one stands
      CHECK(lifecycle::interrupt_signal() == SIGTERM);
      lifecycle::OnInterrupt late([&] { ++after; });
    }
    CHECK(before == 1);
    CHECK(after == 1);
    lifecycle::reset_for_tests();
    CHECK_FALSE(lifecycle::interrupted());
  }

  TEST_CASE("without a graceful command a stop request is not taken") {
    lifecycle::reset_for_tests();
    lifecycle::request_stop(SIGINT);
    CHECK_FALSE(lifecycle::interrupted());
  }

  TEST_CASE("a private folder is removed with its object, and a dead process's folder by the next one") {
    const std::string prefix = fmt::format("inferprof-unit-{}", ::getpid());
    std::string path;
    {
      lifecycle::PrivateFolder folder(prefix);
      path = folder.path();
      CHECK(fs::is_directory(path));
      CHECK(fs::path(path).filename().string().rfind(fmt::format("{}-{}-", prefix, ::getpid()), 0) == 0);
      touch(fs::path(path) / "data.mdb");
    }
    CHECK_FALSE(fs::exists(path));

    // Left by a process that died (SIGKILL, a crash), and by one still running (pid 1).
    const fs::path tmp = fs::temp_directory_path();
    const fs::path stale = tmp / fmt::format("{}-{}-abcdef", prefix, dead_pid());
    const fs::path alive = tmp / fmt::format("{}-1-abcdef", prefix);
    fs::create_directories(stale);
    fs::create_directories(alive);
    touch(stale / "data.mdb");
    {
      lifecycle::PrivateFolder folder(prefix);
      CHECK_FALSE(fs::exists(stale));
      CHECK(fs::exists(alive));
    }
    fs::remove_all(alive);
  }

  TEST_CASE("the sweep leaves a folder whose owner holds its lock (another PID namespace)") {
    TempDir dir;
    const fs::path folder = dir.path() / fmt::format("inferprof-l3-{}-xyz", dead_pid());
    fs::create_directories(folder);
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX) == 0);
    CHECK(lifecycle::sweep_stale_folders(dir.str(), "inferprof-l3") == 0);
    CHECK(fs::exists(folder));
    ::close(fd);
    CHECK(lifecycle::sweep_stale_folders(dir.str(), "inferprof-l3") == 1);
    CHECK_FALSE(fs::exists(folder));
  }

  TEST_CASE("own temp files go, others' and finished reports stay") {
    TempDir dir;
    const int me = ::getpid();
    const std::vector<std::string> names = {fmt::format(".requests.csv.tmp.{}.3", me),
                                            fmt::format(".trace.json.tmp.{}.0", me),
                                            fmt::format(".summary.json.tmp.{}", me),
                                            fmt::format(".requests.csv.tmp.{}7.1", me),
                                            "summary.json",
                                            ".requests.csv.tmp.1.1"};
    for (const std::string& name : names)
      touch(dir.path() / name);
    lifecycle::remove_own_temp_files(dir.str());
    std::vector<std::string> kept = {fmt::format(".requests.csv.tmp.{}7.1", me), ".requests.csv.tmp.1.1",
                                     "summary.json"};
    std::sort(kept.begin(), kept.end());
    CHECK(dir.list() == kept);
  }

  TEST_CASE("stale temp files of processes that are gone are swept, a running process's and other names stay") {
    TempDir dir;
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) ::_exit(0);
    REQUIRE(::waitpid(child, nullptr, 0) == child);  // its PID runs nothing now
    const int me = ::getpid(), parent = ::getppid();
    const std::vector<std::string> gone = {fmt::format(".requests.csv.tmp.{}.00ff00ff00ff00ff", child),
                                           fmt::format(".trace.json.tmp.{}.0", child),
                                           fmt::format(".summary.json.tmp.{}", child)};
    const std::vector<std::string> stay = {fmt::format(".requests.csv.tmp.{}.00ff00ff00ff00ff", me),
                                           fmt::format(".trace.json.tmp.{}.0", parent),
                                           fmt::format("requests.csv.tmp.{}.0", child),
                                           fmt::format(".requests.csv.tmp.{}.a.b", child),
                                           fmt::format(".requests.csv.tmp.{}x", child),
                                           "summary.json"};
    for (const std::string& name : gone)
      touch(dir.path() / name);
    for (const std::string& name : stay)
      touch(dir.path() / name);
    fs::create_directory(dir.path() / fmt::format(".dump.tmp.{}.abcdef", child));  // not a report file
    lifecycle::sweep_stale_temp_files(dir.str());
    std::vector<std::string> kept = stay;
    kept.push_back(fmt::format(".dump.tmp.{}.abcdef", child));
    std::sort(kept.begin(), kept.end());
    CHECK(dir.list() == kept);
  }

  TEST_CASE("temporary files: unguessable names that still carry the PID, found as this process's own") {
    TempDir dir;
    report::TempFile a, b;
    a.open(dir.str(), "summary.json");
    b.open(dir.str(), "summary.json");
    const std::string prefix = fmt::format("{}/.summary.json.tmp.{}.", dir.str(), ::getpid());
    CHECK(a.temp_path().rfind(prefix, 0) == 0);
    CHECK(a.temp_path().size() == prefix.size() + 16);  // 64 random bits in hex
    CHECK(a.temp_path() != b.temp_path());
    lifecycle::remove_own_temp_files(dir.str());
    CHECK(dir.list().empty());
  }

  TEST_CASE("cleanups run once each, those released or moved from not at all") {
    lifecycle::reset_for_tests();
    int kept = 0, released = 0;
    lifecycle::Cleanup a([&] { ++kept; });
    lifecycle::Cleanup b(std::move(a));
    a.release();  // moved from: nothing to release
    lifecycle::Cleanup c([&] { ++released; });
    c.release();
    c.release();  // twice is fine
    lifecycle::run_cleanups_for_tests();
    lifecycle::run_cleanups_for_tests();  // a second signal's cleanups happen once
    CHECK(kept == 1);
    CHECK(released == 0);
    lifecycle::reset_for_tests();
  }
}
