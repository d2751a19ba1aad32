#pragma once
// Starts a helper server for a test (redis-server, an HTTP server) as a child
// process whose output goes nowhere and which dies with the thread that
// started it (PR_SET_PDEATHSIG), so a crashed test leaves nothing behind.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace inferprof::testing {

// args[0] is the program: a path, or a name looked up on PATH. Throws when
// fork fails; an exec failure shows as the child exiting with 127.
inline pid_t spawn_quiet(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  // Only async-signal-safe calls between fork and exec.
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("cannot start " + args[0] + ": " + std::string(std::strerror(errno)));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, STDIN_FILENO);
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
    }
    for (int fd = 3; fd < 1024; ++fd)
      ::close(fd);  // not the test's sockets
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

}  // namespace inferprof::testing
