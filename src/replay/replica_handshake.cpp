#include "replay/replica_handshake.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"

extern char** environ;

namespace inferprof::replica_handshake {

namespace {

constexpr char kReady = 'r';
constexpr char kGo = 'g';

// Flags of the parent's command line that it decides per replica or keeps to
// itself: dropped, with their values, before the assignment's are added.
const std::vector<std::string>& parent_only_with_value() {
  static const std::vector<std::string> flags = {"--replicas", "--replica-timeout-s", "--out",       "--format",
                                                 "--split",    kReplicaFlag,          kNamespaceFlag};
  return flags;
}
constexpr const char* kNoProgress = "--no-progress";

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::vector<std::string> without_flags(const std::vector<std::string>& args, const std::vector<std::string>& with_value,
                                       const std::vector<std::string>& bare) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (std::find(bare.begin(), bare.end(), a) != bare.end()) continue;
    bool drop = false;
    for (const std::string& flag : with_value) {
      if (a == flag) {
        drop = true;
        ++i;  // and its value
      } else if (a.rfind(flag + "=", 0) == 0) {
        drop = true;
      }
    }
    if (!drop) out.push_back(a);
  }
  return out;
}

std::vector<std::string> child_arguments(const std::vector<std::string>& parent_args, const Assignment& assignment) {
  std::vector<std::string> out = without_flags(parent_args, parent_only_with_value(), {kNoProgress});
  for (std::string a : {std::string(kReplicaFlag), fmt::format("{}/{}", assignment.index, assignment.count),
                        std::string("--split"), std::string(enum_name(assignment.split)), std::string(kNamespaceFlag),
                        assignment.cache_namespace, std::string("--out"), assignment.out_dir, std::string("--format"),
                        std::string("json"), std::string(kNoProgress)})
    out.push_back(std::move(a));
  return out;
}

Child Child::start(const std::string& binary, const std::vector<std::string>& parent_args, const Assignment& assignment,
                   const std::string& log_path) {
  return start(binary, child_arguments(parent_args, assignment), log_path);
}

Child Child::start(const std::string& binary, const std::vector<std::string>& child_args, const std::string& log_path) {
  // A socket pair, not pipes: one fd each way, and send() with MSG_NOSIGNAL
  // reports a peer that is gone as EPIPE without a process-wide SIGPIPE setting.
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    throw runtime_failure(fmt::format("replicas: cannot create the start socket: {}", std::strerror(errno)));
  std::vector<std::string> args{binary};
  args.insert(args.end(), child_args.begin(), child_args.end());
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_adddup2(&fa, ends[1], kReplicaFd);  // dup2 clears SOCK_CLOEXEC on the copy
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;  // the parent's thread blocks SIGINT/SIGTERM (lifecycle.cpp); a replica starts without that
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  // The environment plus the mark join() checks: this process's PID, which a
  // replica compares with its parent's (a user's --replica flag alone starts no handshake).
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, kParentEnv, std::strlen(kParentEnv)) != 0 || (*e)[std::strlen(kParentEnv)] != '=')
      env_text.emplace_back(*e);
  env_text.push_back(fmt::format("{}={}", kParentEnv, ::getpid()));
  std::vector<char*> envp;
  for (auto& e : env_text)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  Child c;
  const int rc = posix_spawn(&c.pid_, binary.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  ::close(ends[1]);  // the replica's alone now: its exit is end-of-file here
  c.fd_ = ends[0];
  if (rc != 0) throw runtime_failure(fmt::format("replicas: cannot start {}: {}", binary, std::strerror(rc)));
  return c;
}

Child::Child(Child&& other) noexcept : pid_(std::exchange(other.pid_, -1)), fd_(std::exchange(other.fd_, -1)) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    close_fd(fd_);
    pid_ = std::exchange(other.pid_, -1);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

Child::~Child() {
  close_fd(fd_);
}

bool Child::wait_ready(std::chrono::steady_clock::time_point deadline, const std::function<bool()>& give_up) {
  if (fd_ < 0) return false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd p{fd_, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::clamp<long long>(left, 0, 100)));
    if (n == 1) {
      char byte = 0;
      return ::recv(fd_, &byte, 1, 0) == 1 && byte == kReady;  // 0: it exited (or closed fd 3) first
    }
    if (left <= 0 || (give_up && give_up())) return false;
  }
}

bool Child::go() {
  const bool sent = fd_ >= 0 && ::send(fd_, &kGo, 1, MSG_NOSIGNAL) == 1;
  close_fd(fd_);
  return sent;
}

void Child::cancel() {
  close_fd(fd_);
}

void die_with_parent() {
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
}

std::string log_tail(const std::string& path, std::size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);)
    all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i)
    out += all[i] + "\n";
  return out;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status) == 0 ? "ok" : fmt::format("exit {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return "unknown";
}

void ready_and_wait(int fd) {
  char byte = 0;
  const bool started = ::send(fd, &kReady, 1, MSG_NOSIGNAL) == 1 && ::recv(fd, &byte, 1, 0) == 1 && byte == kGo;
  ::close(fd);
  if (!started)
    throw runtime_failure("replica: lost the parent before the start (run replicas through `run --replicas N`)");
}

bool started_by_parent() {
  const char* mark = std::getenv(kParentEnv);
  return mark != nullptr && *mark != '\0' && fmt::format("{}", ::getppid()) == mark;
}

ReplicaRole join(const std::string& replica_flag, Split split) {
  ReplicaRole role;
  int consumed = 0;
  if (std::sscanf(replica_flag.c_str(), "%d/%d%n", &role.index, &role.count, &consumed) != 2 ||
      static_cast<std::size_t>(consumed) != replica_flag.size() || role.index < 0 || role.count < 1 ||
      role.index >= role.count)
    throw bad_input(fmt::format("{} {}: expected I/N with 0 <= I < N", kReplicaFlag, printable(replica_flag)));
  if (!started_by_parent())
    throw bad_input(
        fmt::format("{} {} goes with --group NAME (a replica of a group started apart, docs/scale-out.md); "
                    "`run --replicas N` starts replicas on this host",
                    kReplicaFlag, printable(replica_flag)));
  role.split = split;
  // Dies with its parent, also one killed by SIGKILL: SIGTERM then stops it
  // like an interrupt (its own files and folders go). A parent already gone
  // shows in the handshake.
  die_with_parent();
  role.on_ready = [] { ready_and_wait(kReplicaFd); };
  // Fault injection for the tests: this replica dies before it says ready.
  if (const char* crash = std::getenv("INFERPROF_TEST_CRASH_REPLICA"); crash && std::atoi(crash) == role.index)
    role.on_ready = [] { std::abort(); };
  return role;
}

}  // namespace inferprof::replica_handshake
