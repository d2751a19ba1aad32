#pragma once
// A real HTTP server for one test (or benchmark): Python's http.server
// serving a folder on a free loopback port, ready once it accepts a
// connection, stopped when the object goes. Two additions to the stock
// handler: any path under /status-503/ answers 503, so a test can meet an
// HTTP error status that is not 404, and any path under /endless/ answers
// with a body that never ends (until the client hangs up), and any path under
// /no-length/ is the folder's file without a Content-Length (the body ends
// when the connection closes), so a client cannot know the size before it
// reads.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "redis_server.hpp"
#include "spawn.hpp"
#include "temp_dir.hpp"

namespace inferprof::testing {

class HttpServer {
 public:
  static bool available() { return ::system("python3 -c 'import http.server' >/dev/null 2>&1") == 0; }

  explicit HttpServer(const std::string& root) : port_(RedisServer::free_port()) {
    std::string script = dir_.write("serve.py", R"(import functools, http.server, sys
class Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith('/status-503/'):
            self.send_error(503, 'unavailable (test)')
            return
        if self.path.startswith('/endless/'):
            self.send_response(200)
            self.end_headers()
            try:
                self.wfile.write(b'{"models": [')
                while True:
                    self.wfile.write(b' ' * 65536)
            except (BrokenPipeError, ConnectionResetError):
                return
        if self.path.startswith('/no-length/'):
            try:
                with open(self.translate_path(self.path[len('/no-length'):]), 'rb') as f:
                    data = f.read()
            except OSError:
                self.send_error(404, 'not found')
                return
            self.send_response(200)
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        super().do_GET()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), functools.partial(Handler, directory=sys.argv[2]))
server.serve_forever()
)");
    pid_ = spawn_quiet({"python3", script, std::to_string(port_), root});
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
      if (accepts()) return;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("the HTTP server exited at start");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stop();
    throw std::runtime_error("the HTTP server did not answer in time");
  }
  ~HttpServer() { stop(); }
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  bool accepts() const {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port_));
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
  }

  TempDir dir_;
  int port_;
  pid_t pid_ = -1;
};

}  // namespace inferprof::testing
