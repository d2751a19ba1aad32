// A group of separately started replicas meeting in Redis (inferprof/replica_group.hpp).
// The main thread's connection does the barrier and the finish; the heartbeat
// has its own (a hiredis context is one thread's).
#include "inferprof/replica_group.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "inferprof/error.hpp"
#include "redis/redis_connect.hpp"

namespace inferprof {

using redis_detail::Context;
using redis_detail::kCommandTimeout;
using redis_detail::kConnectTimeout;
using redis_detail::Reply;

namespace {
constexpr auto kBeat = std::chrono::seconds(1);
constexpr int kAliveMs = 5000;     // a replica whose heartbeat is this old is dead
constexpr int kStartLeadMs = 300;  // the common start, after the last replica is ready
constexpr auto kPoll = std::chrono::milliseconds(50);
constexpr int kKeepS = 3600;  // keys outlive the barrier's timeout by this much

double unix_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool ok(const Reply& r) {
  return r && r->type != REDIS_REPLY_ERROR;
}
}  // namespace

struct ReplicaGroup::Impl {
  Options o;
  redis_detail::RedisUrl url;
  std::string prefix;
  Context c;
  std::string ready_key, done_key, go_key;
  std::string alive_key(int k) const { return fmt::format("{}alive:{}", prefix, k); }

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::thread heartbeat;
  bool joined = false, finished = false;

  Reply cmd(std::initializer_list<std::string_view> args) {
    redis_detail::SigpipeGuard guard;
    Reply r = redis_detail::command(c.get(), args);
    if (!r) {  // the connection broke (Redis restarted): once more on a new one
      std::string why;
      if (Context fresh = redis_detail::connect_redis(url, kConnectTimeout, &kCommandTimeout, false, &why)) {
        c = std::move(fresh);
        r = redis_detail::command(c.get(), args);
      }
    }
    if (!r)
      throw runtime_failure(
          fmt::format("group {}: Redis at {} failed: {}", o.name, url.shown, redis_detail::scrub(url, c->errstr)));
    if (r->type == REDIS_REPLY_ERROR)
      throw runtime_failure(fmt::format("group {}: Redis at {} said: {}", o.name, url.shown,
                                        redis_detail::scrub(url, std::string(r->str, r->len))));
    return r;
  }
  long long integer(std::initializer_list<std::string_view> args) {
    Reply r = cmd(args);
    return r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
  }

  void start_heartbeat() {
    heartbeat = std::thread([this] {
      std::string why;
      Context hb;
      std::unique_lock<std::mutex> lock(mu);
      while (!stopping) {
        lock.unlock();
        if (!hb) hb = redis_detail::connect_redis(url, kConnectTimeout, &kCommandTimeout, false, &why);
        if (hb) {
          redis_detail::SigpipeGuard guard;
          const std::string ms = std::to_string(kAliveMs);
          if (!ok(redis_detail::command(hb.get(), {"SET", alive_key(o.index), o.member, "PX", ms})))
            hb.reset();  // reconnect at the next beat (Redis restarted)
        }
        lock.lock();
        cv.wait_for(lock, kBeat, [this] { return stopping; });
      }
    });
  }
  void stop_heartbeat() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
    }
    cv.notify_all();
    if (heartbeat.joinable()) heartbeat.join();
  }

  // The replicas (of 0..count-1) that `in(k)` says are missing, as "1, 3".
  template <class In>
  std::string missing(In in) {
    std::string out;
    for (int k = 0; k < o.count; ++k)
      if (!in(k)) out += (out.empty() ? "" : ", ") + std::to_string(k);
    return out;
  }
  bool member(const std::string& set, int k) { return integer({"SISMEMBER", set, std::to_string(k)}) == 1; }
};

ReplicaGroup::ReplicaGroup(Options options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.o = std::move(options);
  if (m.o.name.empty() || m.o.name.size() > 200 || !std::all_of(m.o.name.begin(), m.o.name.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
      }))
    throw bad_input(fmt::format("--group '{}': expected a name of letters, digits, '-', '_' and '.' (at most 200)",
                                m.o.name.substr(0, 60)));
  m.url = redis_detail::resolve_redis_url(m.o.redis_url);
  m.prefix = fmt::format("inferprof:group:{}:", m.o.name);
  m.ready_key = m.prefix + "ready";
  m.done_key = m.prefix + "done";
  m.go_key = m.prefix + "go";
  std::string why;
  m.c = redis_detail::connect_redis(m.url, kConnectTimeout, &kCommandTimeout, true, &why);
  if (!m.c) throw runtime_failure(fmt::format("group {}: cannot reach Redis at {}: {}", m.o.name, m.url.shown, why));
}

ReplicaGroup::~ReplicaGroup() {
  Impl& m = *impl_;
  m.stop_heartbeat();
  if (m.joined && !m.finished) {  // failed or interrupted: not ready any more, and not alive
    try {
      m.cmd({"SREM", m.ready_key, std::to_string(m.o.index)});
      m.cmd({"DEL", m.alive_key(m.o.index)});
    } catch (const Error&) {
      // Redis gone: the keys expire.
    }
  }
}

void ReplicaGroup::join(const std::function<bool()>& give_up) {
  Impl& m = *impl_;
  const std::string keep = std::to_string(m.o.timeout_s + kKeepS);
  m.cmd({"SADD", m.ready_key, std::to_string(m.o.index)});
  m.cmd({"EXPIRE", m.ready_key, keep});
  m.joined = true;
  m.start_heartbeat();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(m.o.timeout_s);
  // Every replica ready: the first to see it sets the start (SET NX), all read it.
  while (m.integer({"SCARD", m.ready_key}) < m.o.count) {
    if (give_up && give_up()) return;  // the replay then stops at once, as any interrupted run
    if (std::chrono::steady_clock::now() > deadline)
      throw runtime_failure(fmt::format(
          "group {}: replica{} {} of {} not ready after {} s (never started, failed to load, or another --group "
          "name or Redis?)",
          m.o.name, m.o.count - m.integer({"SCARD", m.ready_key}) > 1 ? "s" : "",
          m.missing([&](int k) { return m.member(m.ready_key, k); }), m.o.count, m.o.timeout_s));
    std::this_thread::sleep_for(kPoll);
  }
  // The first to get here prepares the start (the shared cache namespace
  // emptied) and then sets it; the others wait for it.
  if (m.cmd({"SET", m.prefix + "starter", std::to_string(m.o.index), "NX", "EX", keep})->type == REDIS_REPLY_STATUS) {
    if (m.o.before_start) m.o.before_start();
    m.cmd({"SET", m.go_key, fmt::format("{:.0f}", unix_ms() + kStartLeadMs), "EX", keep});
  }
  Reply go;
  while ((go = m.cmd({"GET", m.go_key}))->type != REDIS_REPLY_STRING) {
    if (give_up && give_up()) return;
    if (std::chrono::steady_clock::now() > deadline)
      throw runtime_failure(fmt::format("group {}: every replica was ready, but the start was never set", m.o.name));
    std::this_thread::sleep_for(kPoll);
  }
  const double go_ms = std::atof(go->str);
  const double wait_ms = go_ms - unix_ms();
  // A start already well past (clock skew, or a replica restarted late): go now.
  if (wait_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(std::min(wait_ms, 10'000.0)));
}

ReplicaGroup::Finish ReplicaGroup::finish(const std::function<bool()>& give_up) {
  Impl& m = *impl_;
  Finish f;
  m.finished = true;
  m.stop_heartbeat();
  try {
    m.cmd({"SADD", m.done_key, std::to_string(m.o.index)});
    m.cmd({"EXPIRE", m.done_key, std::to_string(m.o.timeout_s + kKeepS)});
    m.cmd({"DEL", m.alive_key(m.o.index)});
    // Wait for the others: each done, or dead (its heartbeat expired), so
    // that one replica is there to remove the group's keys whoever dies when.
    // Past the timeout a replica leaves that to the last one still running.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(m.o.timeout_s);
    for (;;) {
      bool running = false;
      f.dead.clear();
      for (int k = 0; k < m.o.count; ++k) {
        if (k == m.o.index || m.member(m.done_key, k)) continue;
        if (m.integer({"PTTL", m.alive_key(k)}) < 0)
          f.dead.push_back(k);
        else
          running = true;
      }
      if (!running) break;
      if (std::chrono::steady_clock::now() > until || (give_up && give_up())) {
        // Counted as left, so that the last of the others still sees the count reach the done set's size.
        m.cmd({"INCR", m.prefix + "left"});
        m.cmd({"EXPIRE", m.prefix + "left", std::to_string(m.o.timeout_s + kKeepS)});
        f.left_running = true;
        return f;
      }
      std::this_thread::sleep_for(kPoll * 4);
    }
    // Every replica done or dead. The last of the finished ones to get here
    // (INCR is atomic: exactly one sees the count reach the done set's size)
    // removes the keys, after every other has stopped reading them.
    const long long leaving = m.integer({"INCR", m.prefix + "left"});
    m.cmd({"EXPIRE", m.prefix + "left", std::to_string(m.o.timeout_s + kKeepS)});
    if (leaving == m.integer({"SCARD", m.done_key})) {
      m.cmd({"DEL", m.ready_key, m.done_key, m.go_key, m.prefix + "starter", m.prefix + "left"});
      for (int k : f.dead)
        m.cmd({"DEL", m.alive_key(k)});
      if (m.o.after_all) m.o.after_all();
      f.last = true;
    }
  } catch (const Error& e) {
    f.problem = e.what();
  }
  return f;
}

}  // namespace inferprof
