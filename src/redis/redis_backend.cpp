// The Redis backend of the cache tiers (docs/caches.md), the store replicas
// share. hiredis only here, in redis_connect.cpp (URL and connection set-up,
// shared with the model store's update channel) and in the update channel (docs/development.md).
//
// Keys are "inferprof:<namespace>:<32 hex digits>", values are the raw blobs.
// A hiredis context is not thread-safe, so the backend keeps a small pool of
// connections: a call takes an idle one (or opens a new one outside the lock)
// and gives it back when done. A connection that failed is dropped, together
// with the idle ones (they talk to the same, probably restarted, server), so
// the next call reconnects. A call that fails on a connection taken from the
// pool is retried once on a fresh connection: after a server restart the
// pooled sockets are dead, and every command here is idempotent.
//
// GET and SET, the hot path, frame their RESP themselves on the connection's
// socket so that a value is copied once (see Session); hiredis connects,
// authenticates and runs the rest.
//
// entries() and bytes() SCAN the namespace (MATCH, then STRLEN pipelined per
// batch): exact for what the server holds now, whoever wrote it and whatever
// expired, at a cost proportional to the namespace -- meant for the end of a
// run, not the hot path.
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"
#include "redis/redis_connect.hpp"

namespace inferprof {
namespace {

using redis_detail::Context;
using redis_detail::kCommandTimeout;
using redis_detail::kConnectTimeout;
using redis_detail::RedisUrl;
using redis_detail::Reply;
using redis_detail::SigpipeGuard;

constexpr std::size_t kMaxIdle = 16;  // idle connections kept; more are closed
constexpr std::size_t kBatch = 256;   // keys per pipelined batch / UNLINK
constexpr const char* kScanCount = "1000";
// Every key a replay writes expires: a run's namespace is emptied when it ends
// (and on a signal, lifecycle.hpp), but a process killed by SIGKILL or a lost
// connection cannot, and the next run uses another namespace. An hour bounds
// the debris; set on every write, so a value rewritten lives on. A tier with
// its own TTL keeps that one. The cost: a replay running over an hour sees
// values written over an hour before (and not rewritten since) as misses.
constexpr double kKeyTtlS = 3600;

// The connection broke (I/O, protocol, timeout): the context is unusable.
struct ConnectionBroken {
  bool timeout;
  std::string text;
};

bool is_timeout(const redisContext* c, int saved_errno) {
#ifdef REDIS_ERR_TIMEOUT
  if (c->err == REDIS_ERR_TIMEOUT) return true;
#endif
  return c->err == REDIS_ERR_IO && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || saved_errno == ETIMEDOUT);
}

[[noreturn]] void broken(const redisContext* c, int saved_errno) {
  throw ConnectionBroken{is_timeout(c, saved_errno), c->errstr[0] ? c->errstr : "connection closed"};
}

// A server-side error reply (-ERR ...): the connection itself is fine.
struct ServerError {
  std::string text;
};

// One leased connection and the commands sent on it. Arguments are passed
// binary-safe (argv + lengths), never through a format string.
class Session {
 public:
  explicit Session(redisContext* c) : c_(c) {}
  int pending() const { return pending_; }

  void append(std::initializer_list<std::string_view> args) { append(args.begin(), args.size()); }
  void append(const std::string_view* args, std::size_t n) {
    argv_.resize(n);
    lens_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      argv_[i] = args[i].data() ? args[i].data() : "";  // an empty value may have no data pointer
      lens_[i] = args[i].size();
    }
    if (redisAppendCommandArgv(c_, static_cast<int>(n), argv_.data(), lens_.data()) != REDIS_OK) broken(c_, errno);
    ++pending_;
  }
  Reply next() {
    void* r = nullptr;
    int rc = redisGetReply(c_, &r);
    --pending_;
    if (rc != REDIS_OK || r == nullptr) {
      int saved = errno;
      if (r) freeReplyObject(r);
      broken(c_, saved);
    }
    return Reply(static_cast<redisReply*>(r));
  }
  // ---- The hot path: GET and SET as raw RESP on the context's socket ----
  // Through hiredis a value is formatted into one buffer and appended to a
  // second on the way out, and read into a third and copied to a fourth on
  // the way in. For tensors of 100s of KB those are fresh pages on every call
  // (glibc returns them to the kernel), and the page faults cost more than
  // the round trip. Here a value goes from the caller's buffer to the socket
  // (sendmsg) and from the socket into the returned string (recv), once.
  // hiredis still connects, authenticates and runs everything else; a raw
  // exchange starts only with nothing of hiredis's queued either way, and
  // leaves nothing behind (see in_step()).

  // Sends the commands in `iov` (whole RESP commands) and counts `replies`.
  void raw_send(iovec* iov, std::size_t n, int replies) {
    if (pending_ != 0 || sdslen(c_->obuf) != 0 || c_->reader->pos != c_->reader->len)
      throw ConnectionBroken{false, "connection out of step"};
    std::size_t first = 0;
    while (first < n) {
      msghdr msg{};
      msg.msg_iov = iov + first;
      msg.msg_iovlen = n - first;
      ssize_t sent = ::sendmsg(c_->fd, &msg, MSG_NOSIGNAL);
      if (sent < 0) {
        if (errno == EINTR) continue;
        raw_failed(errno);
      }
      auto left = static_cast<std::size_t>(sent);
      while (first < n && left >= iov[first].iov_len)
        left -= iov[first++].iov_len;
      if (first < n) {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
        iov[first].iov_len -= left;
      }
    }
    pending_ += replies;
  }

  // The reply to a GET: the value, or nullopt for nil.
  std::optional<std::string> raw_bulk() {
    std::string_view line = raw_line();
    --pending_;
    if (line[0] == '-') throw ServerError{std::string(line.substr(1))};
    long long len = -2;
    if (line[0] == '$') len = parse_length(line.substr(1));
    if (len == -1) return std::nullopt;
    if (len < 0) throw ConnectionBroken{false, "protocol error: unexpected reply to GET"};
    std::string value(static_cast<std::size_t>(len), '\0');
    std::size_t have = std::min(value.size(), end_ - beg_);
    if (have) std::memcpy(value.data(), buf_ + beg_, have);
    beg_ += have;
    while (have < value.size())
      have += raw_recv(value.data() + have, value.size() - have);
    while (end_ - beg_ < 2)
      raw_fill();
    if (buf_[beg_] != '\r' || buf_[beg_ + 1] != '\n')
      throw ConnectionBroken{false, "protocol error: bulk without CRLF"};
    beg_ += 2;
    return value;
  }

  // The reply to a SET: +OK, or the server's error.
  void raw_status() {
    std::string_view line = raw_line();
    --pending_;
    if (line[0] == '-') throw ServerError{std::string(line.substr(1))};
    if (line[0] != '+') throw ConnectionBroken{false, "protocol error: unexpected reply to SET"};
  }

  // Whether the connection can go back to the pool: every reply read, no
  // byte left over.
  bool in_step() const { return pending_ == 0 && beg_ == end_; }

 private:
  static long long parse_length(std::string_view digits) {
    bool negative = !digits.empty() && digits[0] == '-';
    if (negative) digits.remove_prefix(1);
    if (digits.empty() || digits.size() > 15) return -2;
    long long v = 0;
    for (char ch : digits) {
      if (ch < '0' || ch > '9') return -2;
      v = v * 10 + (ch - '0');
    }
    return negative ? (v == 1 ? -1 : -2) : v;
  }

  [[noreturn]] static void raw_failed(int err) {
    bool timeout = err == EAGAIN || err == EWOULDBLOCK;  // SO_SNDTIMEO / SO_RCVTIMEO expired
    throw ConnectionBroken{timeout, std::strerror(err)};
  }

  std::size_t raw_recv(char* into, std::size_t room) {
    for (;;) {
      ssize_t n = ::recv(c_->fd, into, room, 0);
      if (n > 0) return static_cast<std::size_t>(n);
      if (n == 0) throw ConnectionBroken{false, "Server closed the connection"};
      if (errno != EINTR) raw_failed(errno);
    }
  }

  void raw_fill() {
    if (beg_ == end_) beg_ = end_ = 0;
    if (end_ == sizeof buf_) {
      std::memmove(buf_, buf_ + beg_, end_ - beg_);
      end_ -= beg_;
      beg_ = 0;
    }
    if (end_ == sizeof buf_) throw ConnectionBroken{false, "protocol error: reply line too long"};
    end_ += raw_recv(buf_ + end_, sizeof buf_ - end_);
  }

  // The next reply line without its CRLF; valid until the next raw call.
  std::string_view raw_line() {
    for (;;) {
      std::string_view have(buf_ + beg_, end_ - beg_);
      std::size_t eol = have.find("\r\n");
      if (eol != std::string_view::npos && eol > 0) {
        beg_ += eol + 2;
        return have.substr(0, eol);
      }
      if (eol == 0) throw ConnectionBroken{false, "protocol error: empty reply line"};
      raw_fill();
    }
  }

  char buf_[16 * 1024];  // reply bytes read but not yet consumed
  std::size_t beg_ = 0, end_ = 0;

 public:
  Reply call(std::initializer_list<std::string_view> args) {
    append(args);
    return next();
  }
  Reply call(const std::vector<std::string_view>& args) {
    append(args.data(), args.size());
    return next();
  }

 private:
  redisContext* c_;
  int pending_ = 0;
  std::vector<const char*> argv_;
  std::vector<std::size_t> lens_;
};

void expect_no_error(const Reply& r) {
  if (r->type == REDIS_REPLY_ERROR) throw ServerError{std::string(r->str, r->len)};
}

std::string glob_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// ---- the backend ---------------------------------------------------------

class RedisBackend final : public BlobBackend {
 public:
  RedisBackend(RedisUrl url, const std::string& name_space)
      : url_(std::move(url)), prefix_("inferprof:" + name_space + ":"), pattern_(glob_escape(prefix_) + "*") {
    // Creation checks the whole path once -- connect, AUTH, SELECT, PING -- so
    // a wrong address or password is an error before the run, not a run of
    // silent misses. The connection then joins the pool.
    std::string why;
    Context c = open(&why, /*ping=*/true);
    if (!c) throw runtime_failure(why);
    idle_.push_back(std::move(c));
  }

  std::string describe() const override { return "redis " + url_.shown + " (keys " + prefix_ + "*)"; }

  std::optional<std::string> get(const CacheKey& key) override {
    return run("GET", [&](Session& s) {
      std::string cmd = get_command(key);
      iovec iov{cmd.data(), cmd.size()};
      s.raw_send(&iov, 1, 1);
      return s.raw_bulk();
    });
  }

  std::vector<std::optional<std::string>> get_many(const std::vector<CacheKey>& keys) override {
    return run("GET (pipelined)", [&](Session& s) {
      std::vector<std::optional<std::string>> out;
      out.reserve(keys.size());
      // Up to kBatch requests in flight, sent in one write.
      std::string cmds;
      for (std::size_t i = 0; i < keys.size(); i += kBatch) {
        std::size_t end = std::min(keys.size(), i + kBatch);
        cmds.clear();
        for (std::size_t j = i; j < end; ++j)
          cmds += get_command(keys[j]);
        iovec iov{cmds.data(), cmds.size()};
        s.raw_send(&iov, 1, static_cast<int>(end - i));
        for (std::size_t j = i; j < end; ++j)
          out.push_back(s.raw_bulk());
      }
      return out;
    });
  }

  void put(const CacheKey& key, std::string_view value, double ttl_s) override {
    // Whole seconds go as EX, anything finer as PX (rounded up to a millisecond).
    std::string ttl;
    const char* unit = nullptr;
    if (!(ttl_s > 0 && std::isfinite(ttl_s) && ttl_s < 1e12)) ttl_s = kKeyTtlS;
    {
      double ms = std::ceil(ttl_s * 1000.0);
      if (std::fmod(ms, 1000.0) == 0) {
        unit = "EX";
        ttl = std::to_string(static_cast<long long>(ms / 1000.0));
      } else {
        unit = "PX";
        ttl = std::to_string(static_cast<long long>(ms));
      }
    }
    std::string k = key_of(key);
    std::string head = std::string(unit ? "*5" : "*3") + "\r\n$3\r\nSET\r\n$" + std::to_string(k.size()) + "\r\n" + k +
                       "\r\n$" + std::to_string(value.size()) + "\r\n";
    std::string tail = "\r\n";
    if (unit) tail += "$2\r\n" + std::string(unit) + "\r\n$" + std::to_string(ttl.size()) + "\r\n" + ttl + "\r\n";
    run("SET", [&](Session& s) {
      iovec iov[3] = {{head.data(), head.size()},
                      {const_cast<char*>(value.data() ? value.data() : ""), value.size()},
                      {tail.data(), tail.size()}};
      s.raw_send(iov, 3, 1);
      s.raw_status();
      return true;
    });
  }

  void clear() override { unlink_matching("clear (SCAN/UNLINK)", pattern_); }

  // Keys are prefix + to_hex(key), so one version's results share the first 8 hex digits.
  std::uint64_t erase_version(std::uint32_t tag) override {
    return unlink_matching("invalidate (SCAN/UNLINK)", glob_escape(prefix_) + fmt::format("{:08x}", tag) + "*");
  }

  std::uint64_t entries() override { return census(false).first; }
  std::uint64_t bytes() override { return census(true).second; }

 private:
  std::uint64_t unlink_matching(const char* what, const std::string& pattern) {
    return run(what, [&](Session& s) {
      std::uint64_t n = 0;
      scan(s, pattern, [&](std::vector<std::string_view>& keys) {
        for (std::size_t i = 0; i < keys.size(); i += kBatch) {
          std::size_t end = std::min(keys.size(), i + kBatch);
          std::vector<std::string_view> args{unlink_ ? "UNLINK" : "DEL"};
          args.insert(args.end(), keys.begin() + static_cast<std::ptrdiff_t>(i),
                      keys.begin() + static_cast<std::ptrdiff_t>(end));
          Reply r = s.call(args);
          if (r->type == REDIS_REPLY_ERROR && unlink_ && std::strstr(r->str, "unknown command")) {
            unlink_ = false;  // Redis < 4: DEL frees in the foreground, same effect
            args[0] = "DEL";
            r = s.call(args);
          }
          expect_no_error(r);
          // What the server removed (SCAN may repeat a key; another replica may have removed it).
          if (r->type == REDIS_REPLY_INTEGER && r->integer > 0) n += static_cast<std::uint64_t>(r->integer);
        }
      });
      return n;
    });
  }

  std::string key_of(const CacheKey& key) const { return prefix_ + to_hex(key); }
  std::string get_command(const CacheKey& key) const {
    std::string k = key_of(key);
    return "*2\r\n$3\r\nGET\r\n$" + std::to_string(k.size()) + "\r\n" + k + "\r\n";
  }

  std::string scrub(std::string text) const { return redis_detail::scrub(url_, std::move(text)); }

  Context open(std::string* why, bool ping) const {
    return redis_detail::connect_redis(url_, kConnectTimeout, &kCommandTimeout, ping, why);
  }

  // Runs `fn` on a pooled connection; see the top of the file for the policy.
  // Throws BackendError, with the server's or hiredis's text.
  template <class Fn>
  auto run(const char* what, Fn&& fn) -> decltype(fn(std::declval<Session&>())) {
    for (int attempt = 0;; ++attempt) {
      Context c;
      bool reused = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!idle_.empty()) {
          c = std::move(idle_.back());
          idle_.pop_back();
          reused = true;
        }
      }
      if (!c) {
        std::string why;
        c = open(&why, /*ping=*/false);
        if (!c) throw BackendError(why);
      }
      SigpipeGuard guard;
      Session s(c.get());
      try {
        auto result = fn(s);
        if (s.in_step()) give_back(std::move(c));
        return result;
      } catch (const ServerError& e) {
        // The reply was an error but the connection is in step -- unless a
        // pipeline still has replies in flight.
        if (s.in_step()) give_back(std::move(c));
        throw BackendError("Redis at " + url_.shown + ": " + what + " failed: " + scrub(e.text));
      } catch (const ConnectionBroken& e) {
        bool timeout = e.timeout;
        std::string text = timeout ? "no answer within " + std::to_string(kCommandTimeout.tv_sec) + " s" : e.text;
        c.reset();
        drop_idle();
        if (reused && !timeout && attempt == 0) continue;
        throw BackendError("Redis at " + url_.shown + ": " + what + " failed: " + scrub(text));
      }
    }
  }

  void give_back(Context c) {
    if (c->err) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (idle_.size() < kMaxIdle) idle_.push_back(std::move(c));
  }

  void drop_idle() {
    std::vector<Context> dead;
    {
      std::lock_guard<std::mutex> lock(mu_);
      dead.swap(idle_);
    }
  }

  // Calls `batch` with the keys of each SCAN step (deduplicated: SCAN may
  // return a key twice while the server rehashes).
  template <class Batch>
  void scan(Session& s, const std::string& pattern, Batch&& batch, std::unordered_set<std::string>* seen = nullptr) {
    std::string cursor = "0";
    std::vector<std::string_view> keys;
    do {
      Reply r = s.call({"SCAN", cursor, "MATCH", pattern, "COUNT", kScanCount});
      expect_no_error(r);
      if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
          r->element[1]->type != REDIS_REPLY_ARRAY)
        throw ServerError{"unexpected SCAN reply"};
      cursor.assign(r->element[0]->str, r->element[0]->len);
      const redisReply* list = r->element[1];
      keys.clear();
      for (std::size_t i = 0; i < list->elements; ++i) {
        std::string_view k(list->element[i]->str, list->element[i]->len);
        if (seen && !seen->emplace(k).second) continue;
        keys.push_back(k);
      }
      if (!keys.empty()) batch(keys);
    } while (cursor != "0");
  }

  // (entries, bytes) of the namespace as the server holds it now.
  std::pair<std::uint64_t, std::uint64_t> census(bool with_bytes) {
    return run("SCAN", [&](Session& s) {
      std::unordered_set<std::string> seen;
      std::uint64_t n = 0, total = 0;
      scan(
          s, pattern_,
          [&](std::vector<std::string_view>& keys) {
            n += keys.size();
            if (!with_bytes) return;
            for (std::string_view k : keys)
              s.append({"STRLEN", k});  // pipelined
            while (s.pending() > 0) {
              Reply r = s.next();
              expect_no_error(r);
              if (r->type == REDIS_REPLY_INTEGER && r->integer > 0) total += static_cast<std::uint64_t>(r->integer);
            }
          },
          &seen);
      return std::make_pair(n, total);
    });
  }

  const RedisUrl url_;
  const std::string prefix_, pattern_;
  std::mutex mu_;
  std::vector<Context> idle_;
  std::atomic<bool> unlink_{true};
};

}  // namespace

std::unique_ptr<BlobBackend> make_redis_backend(const std::string& url, const std::string& name_space) {
  return std::make_unique<RedisBackend>(redis_detail::resolve_redis_url(url), name_space);
}

}  // namespace inferprof
