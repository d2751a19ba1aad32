#pragma once
// A real redis-server for one test (or benchmark): started on a free loopback
// port with persistence off, ready once it answers PING, stopped (SIGTERM,
// then SIGKILL) when the object goes. stop() and start() let a test kill it
// mid-use and bring it back on the same port.
//
// No hiredis here: the helper speaks the few bytes of RESP it needs over a
// plain socket, so the tests do not share code with what they test.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "spawn.hpp"

namespace inferprof::testing {

class RedisServer {
 public:
  // Whether redis-server is on PATH; tests skip with `why_unavailable()` if not.
  static bool available() { return !find_binary("redis-server").empty(); }
  static std::string why_unavailable() {
    return "redis-server is not on PATH (apt-get install redis-server); skipping the Redis tests";
  }
  // Set INFERPROF_REQUIRE_REDIS=1 (CI) to turn a missing server into a failure.
  static bool required() {
    const char* v = std::getenv("INFERPROF_REQUIRE_REDIS");
    return v && *v && std::string(v) != "0";
  }

  // port 0: pick a free one. unix_socket: also listen there (an absolute path).
  explicit RedisServer(std::string password = "", int port = 0, std::string unix_socket = "")
      : password_(std::move(password)), unix_socket_(std::move(unix_socket)) {
    port_ = port ? port : free_port();
    start();
  }
  ~RedisServer() { stop(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  bool running() const { return pid_ > 0; }
  const std::string& password() const { return password_; }
  // Without the password: tests add it where they mean to.
  std::string url(int db = 0) const { return "redis://127.0.0.1:" + std::to_string(port_) + "/" + std::to_string(db); }
  std::string url_with_password(int db = 0) const {
    return "redis://:" + password_ + "@127.0.0.1:" + std::to_string(port_) + "/" + std::to_string(db);
  }

  // Starts (or restarts) the server on port(); throws if it is not answering
  // within `wait`.
  void start(std::chrono::milliseconds wait = std::chrono::milliseconds(10000)) {
    if (pid_ > 0) return;
    std::string bin = find_binary("redis-server");
    if (bin.empty()) throw std::runtime_error(why_unavailable());
    std::vector<std::string> args = {bin, "--port", std::to_string(port_), "--bind", "127.0.0.1"};
    // No persistence, no log: a test server starts empty and leaves nothing.
    for (const char* a : {"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", "", "--dir", "/tmp"})
      args.push_back(a);
    if (!unix_socket_.empty()) {
      for (const char* a : {"--unixsocket", unix_socket_.c_str(), "--unixsocketperm", "700"})
        args.push_back(a);
    }
    if (!password_.empty()) {
      args.push_back("--requirepass");
      args.push_back(password_);
    }
    // Its log goes nowhere: the tests judge the server by its answers.
    pid_t pid = spawn_quiet(args);
    pid_ = pid;

    auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("redis-server exited at start (port " + std::to_string(port_) + " taken?)");
      }
      std::string line;
      if (roundtrip("PING", &line, /*auth=*/false) && (line == "+PONG" || line.rfind("-NOAUTH", 0) == 0)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop();
    throw std::runtime_error("redis-server on port " + std::to_string(port_) + " did not answer PING in time");
  }

  // SIGSTOP / SIGCONT: a server that accepts connections but never answers.
  void pause() const {
    if (pid_ > 0) ::kill(pid_, SIGSTOP);
  }
  void resume() const {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
  }

  // hard: SIGKILL at once, as a crash; else SIGTERM, and SIGKILL after 5 s.
  void stop(bool hard = false) {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);  // a paused server could not act on SIGTERM
    ::kill(pid_, hard ? SIGKILL : SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pid_ = -1;
  }

  // One inline command (no spaces inside arguments), after AUTH when the
  // server has a password; returns the first line of the reply ("+OK",
  // ":3", "$5", "-ERR ..."), or "" when the server cannot be reached.
  std::string command(const std::string& inline_command) const {
    std::string line;
    roundtrip(inline_command, &line, /*auth=*/true);
    return line;
  }
  // SET of a binary value (RESP bulk strings, which an inline command cannot
  // carry): "+OK", an error line, or "" when the server cannot be reached.
  std::string set(const std::string& key, const std::string& value) const {
    std::string cmd = "*3\r\n$3\r\nSET\r\n$" + std::to_string(key.size()) + "\r\n" + key + "\r\n$" +
                      std::to_string(value.size()) + "\r\n" + value;  // roundtrip() adds the final CRLF
    std::string line;
    roundtrip(cmd, &line, /*auth=*/true);
    return line;
  }
  // ":N" replies as a number (-1 when the reply is something else).
  long long integer(const std::string& inline_command) const {
    std::string line = command(inline_command);
    if (line.size() < 2 || line[0] != ':') return -1;
    return std::strtoll(line.c_str() + 1, nullptr, 10);
  }

  // A loopback port nothing listens on right now.
  static int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error("socket() failed");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ::close(fd);
      throw std::runtime_error("cannot find a free port");
    }
    ::close(fd);
    return ntohs(a.sin_port);
  }

 private:
  static std::string find_binary(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= dirs.size()) {
      std::size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      std::string dir = dirs.substr(start, end - start);
      if (!dir.empty()) {
        std::string candidate = dir + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      }
      start = end + 1;
    }
    return "";
  }

  // Sends inline commands on a fresh connection and reads the last one's
  // first reply line, with a 2 s bound on everything.
  bool roundtrip(const std::string& cmd, std::string* line, bool auth) const {
    line->clear();
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port_));
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    std::string out;
    int replies = 1;
    if (auth && !password_.empty()) {
      out += "AUTH " + password_ + "\r\n";
      replies = 2;
    }
    out += cmd + "\r\n";
    ok = ok && ::send(fd, out.data(), out.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(out.size());
    std::string in;
    // The AUTH reply is one line, so the wanted line is line number `replies`.
    while (ok) {
      int lines = 0;
      std::size_t pos = 0, start = 0;
      for (std::size_t p; lines < replies && (p = in.find("\r\n", pos)) != std::string::npos; pos = p + 2) {
        start = pos;
        ++lines;
      }
      if (lines == replies) {
        *line = in.substr(start, in.find("\r\n", start) - start);
        break;
      }
      char buf[4096];
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0)
        ok = false;
      else
        in.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return ok;
  }

  std::string password_, unix_socket_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace inferprof::testing
