#pragma once
// How the parent of `run --replicas N` starts its replicas, and how they start
// replaying together: both sides of the protocol, in one place.
//
// The parent runs replica I as the same binary with its own `run` arguments,
// less the flags it decides per replica, and then
//   --replica I/N --split S --cache-namespace NS --out DIR --format json --no-progress
// with one end of a socket pair on the replica's fd 3, stdout and stderr to a
// log, in a process group of its own (a Ctrl-C on the terminal reaches the
// parent alone, which passes it on once).
// The replica dies with the parent (SIGTERM, handled as an interrupt); it
// loads, warms up and subscribes to the update channel, then writes one byte
// ('r', ready) on fd 3 and waits for one byte ('g', go). The parent sends go
// to every ready replica at once, so that their replays start at the same
// moment and an update published by one is seen by all. Either side sees the
// other gone as end-of-file (or EPIPE), never as a signal: a replica that died
// is "never ready", a replica whose parent died fails instead of waiting.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "inferprof/run_config.hpp"

namespace inferprof::replica_handshake {

// The flags only a parent gives its replicas (hidden from `run --help`).
inline constexpr const char* kReplicaFlag = "--replica";  // I/N
inline constexpr const char* kNamespaceFlag = "--cache-namespace";
// Where the replica finds its end of the socket pair.
inline constexpr int kReplicaFd = 3;
// Set by the parent, in each replica's environment, to its own PID: join()
// takes the handshake only when it names the replica's parent, so a user's
// `--replica K/N` without --group is refused instead of waiting on fd 3.
inline constexpr const char* kParentEnv = "INFERPROF_REPLICA_PARENT";
// Whether this process is a replica that a --replicas parent started.
bool started_by_parent();

// What the parent decides for one replica.
struct Assignment {
  int index = 0;
  int count = 1;
  Split split = Split::round_robin;
  std::string cache_namespace;  // shared by all replicas
  std::string out_dir;          // this replica's reports
};

// The replica's arguments (after argv[0]): the parent's `parent_args`
// without the flags it decides per replica (or keeps to itself), then the
// assignment's.
std::vector<std::string> child_arguments(const std::vector<std::string>& parent_args, const Assignment& assignment);

// `args` without the flags `with_value` (with their values, "--flag V" or
// "--flag=V") and `bare`: the one filter of a parent's arguments for a child
// (replicas here, compare's pass processes in pass_process.cpp).
std::vector<std::string> without_flags(const std::vector<std::string>& args, const std::vector<std::string>& with_value,
                                       const std::vector<std::string>& bare);

// The parent's handle on one replica it started.
class Child {
 public:
  // Starts `binary` with child_arguments(parent_args, assignment), its output
  // to `log_path`. Throws Error(runtime) if it cannot.
  static Child start(const std::string& binary, const std::vector<std::string>& parent_args,
                     const Assignment& assignment, const std::string& log_path);
  // Starts `binary` with `args` (after argv[0]) the same way (a compare pass
  // process, which ignores fd 3).
  static Child start(const std::string& binary, const std::vector<std::string>& args, const std::string& log_path);
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();  // closes the socket; the process is the caller's to wait for

  pid_t pid() const { return pid_; }
  // Waits for its ready byte until `deadline`, polling `give_up` (e.g. an
  // interrupt) every 100 ms. False: it exited or closed fd 3 first, it was
  // late, or `give_up` said so.
  bool wait_ready(std::chrono::steady_clock::time_point deadline, const std::function<bool()>& give_up);
  // Sends go and closes the socket. False: it is gone.
  bool go();
  // Closes the socket without go: the replica fails as if the parent were gone.
  void cancel();

 private:
  Child() = default;
  pid_t pid_ = -1;
  int fd_ = -1;  // the parent's end
};

// The replica's side of `--replica I/N` (Error(bad_input) unless 0 <= I < N):
// its role, with on_ready = ready_and_wait(kReplicaFd). From here on the
// process dies with its parent. For the tests, INFERPROF_TEST_CRASH_REPLICA=I
// makes replica I abort instead of saying ready.
ReplicaRole join(const std::string& replica_flag, Split split);

// From here on this process gets SIGTERM when its parent dies (handled as
// an interrupt: its own files, folders and Redis keys go).
void die_with_parent();

// The last `lines` lines of a child's log; how a waitpid status ended it
// ("ok", "exit 3", "killed by signal 9").
std::string log_tail(const std::string& path, std::size_t lines);
std::string describe_status(int wait_status);

// Says ready on `fd` and waits for go. Throws Error(runtime) if the parent is
// gone (then there is nobody to start with).
void ready_and_wait(int fd);

}  // namespace inferprof::replica_handshake
