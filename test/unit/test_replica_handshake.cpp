// The start of `run --replicas N` (replica_handshake.hpp): the arguments a
// replica gets, and the ready/go exchange over real processes and sockets.
// The parent side is exercised with /bin/sh replicas that speak the protocol
// on fd 3; the replica side in this process, on a socket pair. The whole of
// it, with the real binary, is e2e (test_cli_updates.cpp).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "inferprof/error.hpp"
#include "replay/replica_handshake.hpp"
#include "temp_dir.hpp"
#include "text_util.hpp"

using namespace inferprof;
using inferprof::testing::TempDir;
namespace hs = inferprof::replica_handshake;

namespace {

using inferprof::testing::slurp;

int exit_status(pid_t pid) {
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

// A replica that runs `script` under /bin/sh. Its arguments after the
// script are the assignment's: "$7" is the --out value, here a file path.
struct ShellReplica {
  TempDir dir;
  hs::Assignment assignment;
  std::string log = dir.file("replica.log");
  hs::Child child;
  explicit ShellReplica(const std::string& script, int index = 0, int count = 1)
      : assignment{index, count, Split::round_robin, "ns", dir.file("got")},
        child(hs::Child::start("/bin/sh", {"-c", script}, assignment, log)) {}
};

auto far_deadline() {
  return std::chrono::steady_clock::now() + std::chrono::minutes(5);
}

}  // namespace

TEST_SUITE("replica handshake") {
  TEST_CASE("a replica's arguments: the parent's, less what it decides per replica, then its assignment") {
    const std::vector<std::string> parent = {
        "run",   "m.pt",          "--trace",      "t.jsonl", "--replicas", "3",
        "--out", "report",        "--format=csv", "--split", "hash",       "--replica-timeout-s",
        "9",     "--no-progress", "--caches",     "l1,l2",   "--update",   "async"};
    hs::Assignment a{1, 3, Split::hash, "replicas-42", "report/replica-1"};
    CHECK(hs::child_arguments(parent, a) ==
          std::vector<std::string>{"run", "m.pt", "--trace", "t.jsonl", "--caches", "l1,l2", "--update", "async",
                                   "--replica", "1/3", "--split", "hash", "--cache-namespace", "replicas-42", "--out",
                                   "report/replica-1", "--format", "json", "--no-progress"});
  }

  TEST_CASE("--replica I/N: the role it gives, and what it refuses") {
    // Only a process its parent started is a replica (kParentEnv names that parent): this one, here.
    ::setenv(hs::kParentEnv, std::to_string(::getppid()).c_str(), 1);
    ReplicaRole role = hs::join("2/3", Split::hash);
    CHECK(role.index == 2);
    CHECK(role.count == 3);
    CHECK(role.split == Split::hash);
    CHECK(role.is_replica());
    CHECK(static_cast<bool>(role.on_ready));
    for (const char* bad : {"3/3", "-1/3", "1", "1/0", "a/b", "1/3x", ""}) {
      CAPTURE(bad);
      CHECK_THROWS_WITH(hs::join(bad, Split::round_robin),
                        (std::string("--replica ") + bad + ": expected I/N with 0 <= I < N").c_str());
    }
    ::unsetenv(hs::kParentEnv);
    CHECK_THROWS_WITH(hs::join("2/3", Split::hash), doctest::Contains("--replica 2/3 goes with --group NAME"));
  }

  TEST_CASE("parent side: a replica says ready, gets go, in its own process group, its output in the log") {
    ShellReplica r(R"(echo started; printf r >&3; head -c1 <&3 >"$7"; echo "done")");
    REQUIRE(r.child.pid() > 0);
    REQUIRE(r.child.wait_ready(far_deadline(), [] { return false; }));
    CHECK(::getpgid(r.child.pid()) == r.child.pid());  // a terminal's Ctrl-C reaches the parent alone
    CHECK(r.child.go());
    CHECK(exit_status(r.child.pid()) == 0);
    CHECK(slurp(r.assignment.out_dir) == "g");
    CHECK(slurp(r.log) == "started\ndone\n");
  }

  TEST_CASE("parent side: a replica that exits before ready is not ready, without waiting for the deadline") {
    ShellReplica r("exit 3");
    CHECK(exit_status(r.child.pid()) == 3);
    bool asked = false;  // the end of file answers at once: never polled for giving up
    CHECK_FALSE(r.child.wait_ready(far_deadline(), [&] { return asked = true; }));
    CHECK_FALSE(asked);
  }

  TEST_CASE("parent side: past the deadline it gives up, and cancel tells the replica the start is off") {
    ShellReplica r(R"(head -c1 <&3 >"$7"; echo "read $?")");
    CHECK_FALSE(r.child.wait_ready(std::chrono::steady_clock::now(), [] { return false; }));
    r.child.cancel();
    CHECK(exit_status(r.child.pid()) == 0);
    CHECK(slurp(r.assignment.out_dir).empty());  // end of file, no go
  }

  TEST_CASE("parent side: giving up (an interrupt) ends the wait") {
    ShellReplica r(R"(head -c1 <&3 >/dev/null)");
    int polls = 0;
    CHECK_FALSE(r.child.wait_ready(far_deadline(), [&] { return ++polls == 2; }));
    CHECK(polls == 2);
    r.child.cancel();
    CHECK(exit_status(r.child.pid()) == 0);
  }

  TEST_CASE("parent side: go to a replica gone after ready fails, with no SIGPIPE to the parent") {
    ShellReplica r("printf r >&3; exit 0");
    REQUIRE(r.child.wait_ready(far_deadline(), [] { return false; }));
    CHECK(exit_status(r.child.pid()) == 0);
    CHECK_FALSE(r.child.go());  // a SIGPIPE would have ended this test binary
  }

  TEST_CASE("parent side: a binary that cannot start is a runtime error") {
    TempDir dir;
    try {
      hs::Child::start(dir.file("missing"), {}, hs::Assignment{}, dir.file("log"));
      FAIL("started a missing binary");
    } catch (const Error& e) {
      CHECK(e.exit_code() == static_cast<int>(ExitCode::runtime));
      CHECK(std::string(e.what()).find("replicas: cannot start " + dir.file("missing")) == 0);
    }
  }

  TEST_CASE("replica side: says ready and returns on go") {
    int ends[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends) == 0);
    REQUIRE(::write(ends[0], "g", 1) == 1);  // the parent's go, already waiting
    hs::ready_and_wait(ends[1]);             // closes its end
    char byte = 0;
    CHECK(::read(ends[0], &byte, 1) == 1);
    CHECK(byte == 'r');
    CHECK(::read(ends[0], &byte, 1) == 0);
    ::close(ends[0]);
  }

  TEST_CASE("replica side: a parent gone, or none at all, is a runtime error, not a hang or a SIGPIPE") {
    const std::string message = "replica: lost the parent before the start (run replicas through `run --replicas N`)";
    int ends[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends) == 0);
    ::close(ends[0]);
    CHECK_THROWS_WITH(hs::ready_and_wait(ends[1]), message.c_str());

    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends) == 0);
    ::shutdown(ends[0], SHUT_WR);  // reads the ready, then leaves without go
    CHECK_THROWS_WITH(hs::ready_and_wait(ends[1]), message.c_str());
    ::close(ends[0]);

    const int not_a_socket = ::open("/dev/null", O_RDWR | O_CLOEXEC);  // `run --replica 0/2` by hand
    REQUIRE(not_a_socket >= 0);
    CHECK_THROWS_WITH(hs::ready_and_wait(not_a_socket), message.c_str());
  }
}
