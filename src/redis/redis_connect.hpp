#pragma once
// Internal to the modules that talk to Redis (the cache's Redis backend, the
// model store's update channel): parsing a Redis URL and opening an
// authenticated connection, so both speak to a server the same way. Includes
// hiredis; include it only from files that use hiredis themselves.
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>

#include <cerrno>
#include <ctime>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace inferprof::redis_detail {

struct RedisUrl {
  bool unix_socket = false;
  std::string host;  // without brackets for IPv6
  int port = 6379;
  std::string path;  // unix socket
  int db = 0;
  std::string user, password;
  bool password_in_url = false;
  std::string shown;  // canonical form, password replaced by ***
};

// "redis://[:password@]host:port[/db]" or "unix:///path.sock[?db=N&password=P]".
// Throws Error(bad_input) for a malformed URL (the message never shows the
// password). Without a password in the URL, INFERPROF_REDIS_PASSWORD supplies it.
RedisUrl resolve_redis_url(const std::string& url);
// Server text may quote what we sent; never let it carry the password out.
std::string scrub(const RedisUrl& url, std::string text);

struct ContextFree {
  void operator()(redisContext* c) const noexcept { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextFree>;
struct ReplyFree {
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

// hiredis writes with write(2): a server that went away would raise SIGPIPE,
// whose default action ends the process. SIGPIPE from a write is directed at
// the writing thread, so block it in this thread for the duration of a call
// and swallow one that arrived meanwhile -- without touching the process-wide
// disposition, which belongs to main.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeGuard() {
    if (!was_pending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        timespec zero{0, 0};
        while (sigtimedwait(&pipe_, nullptr, &zero) == -1 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_{}, old_{};
  bool was_pending_ = false;
};

// A command with binary-safe arguments (never a format string); nullptr when
// the connection broke (c->errstr says why). At most 6 arguments.
Reply command(redisContext* c, std::initializer_list<std::string_view> args);
// The same with any number of arguments (MGET of many keys, EVAL).
Reply command(redisContext* c, const std::vector<std::string>& args);

// Every connection's limits: a server that takes longer to accept, or to
// answer one command, is treated as gone.
inline constexpr timeval kConnectTimeout{2, 0};
inline constexpr timeval kCommandTimeout{2, 0};

// A new connection, authenticated (AUTH), on the URL's database (SELECT) and,
// with `ping`, checked with PING; `command_timeout` null leaves reads blocking
// (a subscriber waits for messages indefinitely). nullptr with `why` set when
// any step fails.
Context connect_redis(const RedisUrl& url, timeval connect_timeout, const timeval* command_timeout, bool ping,
                      std::string* why);

}  // namespace inferprof::redis_detail
