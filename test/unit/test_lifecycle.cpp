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
#include "base/output_owner.hpp"
#include "inferprof/lifecycle.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
namespace lifecycle = inferprof::lifecycle;
namespace report = inferprof::report;
namespace output = inferprof::output;
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

  TEST_CASE(
      "a private folder goes with its object, a dead process's is left alone, a swapped-in link is not followed") {
    const std::string prefix = fmt::format("inferprof-unit-{}", ::getpid());
    std::string path;
    {
      lifecycle::PrivateFolder folder(prefix);
      path = folder.path();
      CHECK(fs::is_directory(path));
      CHECK(fs::path(path).filename().string().rfind(fmt::format("{}-{}-", prefix, ::getpid()), 0) == 0);
      touch(fs::path(path) / "data.mdb");
      fs::create_directory(fs::path(path) / "replica-0");
      touch(fs::path(path) / "replica-0" / "summary.json");
    }
    CHECK_FALSE(fs::exists(path));

    // Left by a process that died (SIGKILL): not this process's, so never removed by its name.
    const fs::path stale = fs::temp_directory_path() / fmt::format("{}-{}-abcdef", prefix, dead_pid());
    fs::create_directories(stale);
    touch(stale / "data.mdb");
    { lifecycle::PrivateFolder folder(prefix); }
    CHECK(fs::exists(stale / "data.mdb"));
    fs::remove_all(stale);

    // The folder swapped for a link to a user's folder: nothing there is removed.
    TempDir user;
    touch(user.path() / "keep.txt");
    {
      lifecycle::PrivateFolder folder(prefix);
      fs::remove(folder.path());
      fs::create_directory_symlink(user.path(), folder.path());
      path = folder.path();
    }
    CHECK(fs::exists(user.path() / "keep.txt"));
    fs::remove(path);
  }

  TEST_CASE(
      "temporary files: unguessable names that carry the PID, and a fatal signal's cleanup removes them, no one "
      "else's") {
    output::reset_for_tests();
    TempDir dir;
    report::TempFile a, b;
    a.open(dir.str(), "summary.json");
    b.open(dir.str(), "summary.json");
    const std::string prefix = fmt::format("{}/.summary.json.tmp.{}.", dir.str(), ::getpid());
    CHECK(a.temp_path().rfind(prefix, 0) == 0);
    CHECK(a.temp_path().size() == prefix.size() + 16);  // 64 random bits in hex
    CHECK(a.temp_path() != b.temp_path());
    // Someone else's file of the same shape of name, and a killed process's: never ours to remove.
    const std::vector<std::string> others = {fmt::format(".requests.csv.tmp.{}.00ff00ff00ff00ff", dead_pid()),
                                             fmt::format(".summary.json.tmp.{}.0", ::getpid())};
    for (const std::string& name : others)
      touch(dir.path() / name);
    output::abandon_all();
    CHECK(dir.list() == others);
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
