// See redis_connect.hpp.
#include "redis/redis_connect.hpp"

#include <cstdlib>
#include <string_view>

#include "inferprof/error.hpp"

namespace inferprof::redis_detail {
namespace {

const char* const kUrlForms = "expected redis://[:password@]host:port[/db] or unix:///path.sock";

// The URL as the user wrote it, with whatever stands where a password would
// stand replaced by "***": everything before the last '@' after the scheme,
// and the value of a password= query parameter.
std::string redact_url(std::string s) {
  std::size_t scheme = s.find("://");
  std::size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  std::size_t at = s.rfind('@');
  if (at != std::string::npos && at >= start) s.replace(start, at - start, "***");
  for (std::size_t p = s.find("password="); p != std::string::npos; p = s.find("password=", p + 1)) {
    std::size_t v = p + 9, end = s.find('&', v);
    if (end == std::string::npos) end = s.size();
    s.replace(v, end - v, "***");
  }
  return s;
}

[[noreturn]] void bad_url(const std::string& url) {
  throw bad_input("bad Redis URL '" + redact_url(url) + "': " + kUrlForms);
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// A small non-negative decimal, or -1.
long small_number(std::string_view s, long max) {
  if (!all_digits(s) || s.size() > 9) return -1;
  long v = std::strtol(std::string(s).c_str(), nullptr, 10);
  return v <= max ? v : -1;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decoding for the user and password parts; false on a bad escape.
bool percent_decode(std::string_view in, std::string* out) {
  out->clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    int hi = hex_digit(in[i + 1]), lo = hex_digit(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

RedisUrl parse_url(const std::string& url) {
  RedisUrl u;
  std::string_view s(url);
  constexpr std::string_view kRedis = "redis://", kUnix = "unix://";
  if (s.substr(0, kRedis.size()) == kRedis) {
    std::string_view rest = s.substr(kRedis.size());
    // The last '@' ends the user info, so a raw '@' or '/' in a password works.
    std::size_t at = rest.rfind('@');
    if (at != std::string_view::npos) {
      std::string_view info = rest.substr(0, at);
      std::size_t colon = info.find(':');
      if (colon == std::string_view::npos) bad_url(url);
      if (!percent_decode(info.substr(0, colon), &u.user) || !percent_decode(info.substr(colon + 1), &u.password))
        bad_url(url);
      u.password_in_url = !u.password.empty();
      if (u.password.empty() && !u.user.empty()) bad_url(url);
      rest = rest.substr(at + 1);
    }
    std::size_t slash = rest.find('/');
    std::string_view hostport = rest.substr(0, slash);
    std::string_view dbpart = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    std::string_view portpart;
    if (!hostport.empty() && hostport.front() == '[') {  // [IPv6]:port
      std::size_t close = hostport.find(']');
      if (close == std::string_view::npos) bad_url(url);
      u.host = std::string(hostport.substr(1, close - 1));
      std::string_view after = hostport.substr(close + 1);
      if (!after.empty()) {
        if (after.front() != ':') bad_url(url);
        portpart = after.substr(1);
        if (portpart.empty()) bad_url(url);
      }
    } else {
      std::size_t colon = hostport.rfind(':');
      u.host = std::string(hostport.substr(0, colon));
      if (colon != std::string_view::npos) {
        portpart = hostport.substr(colon + 1);
        if (portpart.empty()) bad_url(url);
      }
    }
    bool bracketed = !hostport.empty() && hostport.front() == '[';
    if (u.host.empty() || (!bracketed && u.host.find_first_of(":/?#@ ") != std::string::npos)) bad_url(url);
    if (!portpart.empty()) {
      long port = small_number(portpart, 65535);
      if (port <= 0) bad_url(url);
      u.port = static_cast<int>(port);
    }
    if (!dbpart.empty()) {
      long db = small_number(dbpart, 1000000);
      if (db < 0) bad_url(url);
      u.db = static_cast<int>(db);
    }
    bool v6 = u.host.find(':') != std::string::npos;
    u.shown = "redis://";
    if (u.password_in_url) u.shown += u.user + ":***@";
    u.shown += (v6 ? "[" + u.host + "]" : u.host) + ":" + std::to_string(u.port) + "/" + std::to_string(u.db);
    return u;
  }
  if (s.substr(0, kUnix.size()) == kUnix) {
    u.unix_socket = true;
    std::string_view rest = s.substr(kUnix.size());
    std::size_t q = rest.find('?');
    std::string_view path = rest.substr(0, q);
    if (path.size() < 2 || path.front() != '/' || path.back() == '/') bad_url(url);
    u.path = std::string(path);
    if (q != std::string_view::npos) {
      std::string_view query = rest.substr(q + 1);
      if (query.empty()) bad_url(url);
      while (!query.empty()) {
        std::size_t amp = query.find('&');
        std::string_view param = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        std::size_t eq = param.find('=');
        if (eq == std::string_view::npos) bad_url(url);
        std::string_view name = param.substr(0, eq), value = param.substr(eq + 1);
        if (name == "db") {
          long db = small_number(value, 1000000);
          if (db < 0) bad_url(url);
          u.db = static_cast<int>(db);
        } else if (name == "password") {
          if (!percent_decode(value, &u.password)) bad_url(url);
          u.password_in_url = !u.password.empty();
        } else {
          bad_url(url);
        }
      }
    }
    u.shown = "unix://" + u.path + "?db=" + std::to_string(u.db);
    if (u.password_in_url) u.shown += "&password=***";
    return u;
  }
  bad_url(url);
}

}  // namespace

RedisUrl resolve_redis_url(const std::string& url) {
  RedisUrl u = parse_url(url);
  if (u.password.empty()) {
    // The URL wins; the environment keeps the password off command lines.
    if (const char* env = std::getenv("INFERPROF_REDIS_PASSWORD"); env && *env) u.password = env;
  }
  return u;
}

std::string scrub(const RedisUrl& url, std::string text) {
  if (url.password.empty()) return text;
  for (std::size_t p = text.find(url.password); p != std::string::npos; p = text.find(url.password, p + 3))
    text.replace(p, url.password.size(), "***");
  return text;
}

Reply command(redisContext* c, std::initializer_list<std::string_view> args) {
  constexpr int kMax = 6;
  const char* argv[kMax];
  std::size_t lens[kMax];
  int n = 0;
  for (std::string_view a : args) {
    if (n == kMax) break;
    argv[n] = a.data();
    lens[n++] = a.size();
  }
  return Reply(static_cast<redisReply*>(redisCommandArgv(c, n, argv, lens)));
}

Reply command(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  return Reply(static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data())));
}

Context connect_redis(const RedisUrl& url, timeval connect_timeout, const timeval* command_timeout, bool ping,
                      std::string* why) {
  SigpipeGuard guard;
  Context c(url.unix_socket ? redisConnectUnixWithTimeout(url.path.c_str(), connect_timeout)
                            : redisConnectWithTimeout(url.host.c_str(), url.port, connect_timeout));
  if (!c) {
    *why = "cannot reach Redis at " + url.shown + ": cannot allocate a connection";
    return nullptr;
  }
  if (c->err) {
    *why = "cannot reach Redis at " + url.shown + ": " + scrub(url, c->errstr);
    return nullptr;
  }
  if (command_timeout && redisSetTimeout(c.get(), *command_timeout) != REDIS_OK) {
    *why = "cannot reach Redis at " + url.shown + ": cannot set the timeout: " + scrub(url, c->errstr);
    return nullptr;
  }
  if (!url.unix_socket) redisEnableKeepAlive(c.get());
  auto call = [&](std::initializer_list<std::string_view> args) { return command(c.get(), args); };
  auto broken = [&] {
    *why = "cannot reach Redis at " + url.shown + ": " + scrub(url, c->errstr[0] ? c->errstr : "connection closed");
    return nullptr;
  };
  auto refused = [&](const std::string& what, const Reply& r) {
    std::string text(r->str, r->len);
    if (text.rfind("NOAUTH", 0) == 0)
      return "Redis at " + url.shown +
             " requires a password (give it as redis://:PASSWORD@host:port/db or in INFERPROF_REDIS_PASSWORD): " +
             scrub(url, text);
    return "Redis at " + url.shown + " refused " + what + ": " + scrub(url, text);
  };
  if (!url.password.empty()) {
    Reply r = url.user.empty() ? call({"AUTH", url.password}) : call({"AUTH", url.user, url.password});
    if (!r) return broken();
    if (r->type == REDIS_REPLY_ERROR) {
      *why = refused(url.password_in_url ? "AUTH with the URL's password" : "AUTH with INFERPROF_REDIS_PASSWORD", r);
      return nullptr;
    }
  }
  if (url.db != 0) {
    std::string db = std::to_string(url.db);
    Reply r = call({"SELECT", db});
    if (!r) return broken();
    if (r->type == REDIS_REPLY_ERROR) {
      *why = refused("SELECT " + db, r);
      return nullptr;
    }
  }
  if (ping) {
    Reply r = call({"PING"});
    if (!r) return broken();
    if (r->type == REDIS_REPLY_ERROR) {
      *why = refused("PING", r);
      return nullptr;
    }
  }
  return c;
}

}  // namespace inferprof::redis_detail
