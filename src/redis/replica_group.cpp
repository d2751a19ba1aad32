// A group of separately started replicas meeting in Redis (inferprof/replica_group.hpp).
// The main thread's connection does the barrier and the finish; the heartbeat
// has its own (a hiredis context is one thread's).
#include "inferprof/replica_group.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/text.hpp"
#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"
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

// Joining, atomically: refused ("other", the member and its heartbeat) when a
// replica of another N or rule is present (its heartbeat names it) or
// ("taken", the heartbeat) when another process is replica K; else the
// member is added to ready and its heartbeat set. ARGV: prefix, K, N, rule,
// "host pid", the ready set's TTL (s), the heartbeat's (ms).
constexpr const char* kJoinScript = R"lua(
local prefix, k, n, rule = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local me = k .. '/' .. n .. '/' .. rule
for _, m in ipairs(redis.call('SMEMBERS', prefix .. 'ready')) do
  local mk, mn, mrule = string.match(m, '^(%d+)/(%d+)/(.*)$')
  if mk and (mn ~= n or mrule ~= rule) then
    local beat = redis.call('GET', prefix .. 'alive:' .. mk)
    if beat and string.sub(beat, 1, #m + 1) == m .. ' ' then return {'other', m, beat} end
  end
end
local beat = redis.call('GET', prefix .. 'alive:' .. k)
if beat and beat ~= me .. ' ' .. ARGV[5] then return {'taken', beat} end
redis.call('SADD', prefix .. 'ready', me)
redis.call('EXPIRE', prefix .. 'ready', ARGV[6])
redis.call('SET', prefix .. 'alive:' .. k, me .. ' ' .. ARGV[5], 'PX', ARGV[7])
return {'ok'}
)lua";

// What a set's member or a heartbeat (not ours: anyone can write Redis) may
// show in a message: printable, at most 40 bytes of it.
std::string shown(const std::string& text) {
  return "'" + printable(text.substr(0, 40)) + (text.size() > 40 ? "...'" : "'");
}

std::string reply_text(const redisReply* r) {
  return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) ? std::string(r->str, r->len) : "";
}
}  // namespace

struct ReplicaGroup::Impl {
  Options o;
  redis_detail::RedisUrl url;
  std::string prefix;
  Context c;
  std::string ready_key, done_key, go_key;
  std::string me;  // this replica's member: "K/N/RULE"
  std::string alive_key(int k) const { return fmt::format("{}alive:{}", prefix, k); }
  std::string member_of(int k) const { return fmt::format("{}/{}/{}", k, o.count, o.shard_by); }
  // K of a member of this group's shape (0 <= K < N, this N and rule), -1 for anything else.
  int index_of(std::string_view m) const {
    int k = -1;
    const auto [end, ec] = std::from_chars(m.data(), m.data() + m.size(), k);
    if (ec != std::errc() || k < 0 || k >= o.count) return -1;
    return m == member_of(k) ? k : -1;
  }

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::thread heartbeat;
  bool joined = false, started = false, finished = false;

  Reply cmd(const std::vector<std::string>& args) {
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
                                        printable(redis_detail::scrub(url, std::string(r->str, r->len)))));
    return r;
  }
  long long integer(const std::vector<std::string>& args) {
    Reply r = cmd(args);
    return r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
  }
  // Which of 0..N-1 a set holds (members of this group's shape); the other members in `ignored`.
  std::vector<bool> members(const std::string& set, std::vector<std::string>* ignored = nullptr) {
    std::vector<bool> in(static_cast<std::size_t>(o.count));
    Reply r = cmd({"SMEMBERS", set});
    if (r->type != REDIS_REPLY_ARRAY) return in;
    for (std::size_t i = 0; i < r->elements; ++i) {
      const std::string m = reply_text(r->element[i]);
      const int k = index_of(m);
      if (k >= 0)
        in[static_cast<std::size_t>(k)] = true;
      else if (ignored)
        ignored->push_back(shown(m));
    }
    if (ignored) std::sort(ignored->begin(), ignored->end());
    return in;
  }

  void start_heartbeat() {
    heartbeat = std::thread([this] {
      std::string why;
      Context hb;
      const std::string beat = me + " " + o.member;
      std::unique_lock<std::mutex> lock(mu);
      while (!stopping) {
        lock.unlock();
        if (!hb) hb = redis_detail::connect_redis(url, kConnectTimeout, &kCommandTimeout, false, &why);
        if (hb) {
          redis_detail::SigpipeGuard guard;
          const std::string ms = std::to_string(kAliveMs);
          if (!ok(redis_detail::command(hb.get(), {"SET", alive_key(o.index), beat, "PX", ms})))
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
  // Not ready any more, and not alive (failed, interrupted, or never started).
  void take_back() {
    cmd({"SREM", ready_key, me});
    cmd({"DEL", alive_key(o.index)});
  }

  // Those of 0..N-1 other than this replica that `in` lacks, as "1, 3" (the first ten, then how many more).
  std::string missing(const std::vector<bool>& in) const {
    std::vector<std::string> out;
    for (int k = 0; k < o.count; ++k)
      if (!in[static_cast<std::size_t>(k)]) out.push_back(std::to_string(k));
    return report::join_abbreviated(out);
  }
};

ReplicaGroup::ReplicaGroup(Options options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.o = std::move(options);
  if (m.o.name.empty() || m.o.name.size() > 200 || !std::all_of(m.o.name.begin(), m.o.name.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
      }))
    throw bad_input(fmt::format("--group '{}': expected a name of letters, digits, '-', '_' and '.' (at most 200)",
                                printable(m.o.name.substr(0, 60))));
  if (m.o.count < 1 || m.o.count > kMaxReplicas || m.o.index < 0 || m.o.index >= m.o.count)
    throw bad_input(
        fmt::format("--replica {}/{}: expected K/N with 0 <= K < N <= {}", m.o.index, m.o.count, kMaxReplicas));
  m.url = redis_detail::resolve_redis_url(m.o.redis_url);
  m.prefix = fmt::format("inferprof:group:{}:", m.o.name);
  m.ready_key = m.prefix + "ready";
  m.done_key = m.prefix + "done";
  m.go_key = m.prefix + "go";
  m.me = m.member_of(m.o.index);
  std::string why;
  m.c = redis_detail::connect_redis(m.url, kConnectTimeout, &kCommandTimeout, true, &why);
  if (!m.c) throw runtime_failure(fmt::format("group {}: cannot reach Redis at {}: {}", m.o.name, m.url.shown, why));
}

ReplicaGroup::~ReplicaGroup() {
  Impl& m = *impl_;
  m.stop_heartbeat();
  if (m.joined && !m.finished) {  // failed or interrupted: not ready any more, and not alive
    try {
      m.take_back();
    } catch (const Error&) {
      // Redis gone: the keys expire.
    }
  }
}

void ReplicaGroup::join(const std::function<bool()>& give_up) {
  Impl& m = *impl_;
  const std::string keep = std::to_string(m.o.timeout_s + kKeepS);
  const Reply joined = m.cmd({"EVAL", kJoinScript, "0", m.prefix, std::to_string(m.o.index), std::to_string(m.o.count),
                              m.o.shard_by, m.o.member, keep, std::to_string(kAliveMs)});
  const std::string said =
      joined->type == REDIS_REPLY_ARRAY && joined->elements > 0 ? reply_text(joined->element[0]) : "";
  if (said == "other" && joined->elements >= 3)
    throw bad_input(fmt::format(
        "group {}: replica {} (--shard-by {}) cannot join: replica {} is in the group ({}); every replica of a group "
        "needs the same N and --shard-by (name groups per run)",
        m.o.name, m.me.substr(0, m.me.rfind('/')), m.o.shard_by, shown(reply_text(joined->element[1])),
        shown(reply_text(joined->element[2]))));
  if (said == "taken" && joined->elements >= 2)
    throw bad_input(fmt::format("group {}: replica {} is already in the group ({}): each K joins once", m.o.name,
                                m.me.substr(0, m.me.rfind('/')), shown(reply_text(joined->element[1]))));
  if (said != "ok")
    throw runtime_failure(fmt::format("group {}: Redis at {} did not run the join", m.o.name, m.url.shown));
  m.joined = true;
  m.start_heartbeat();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(m.o.timeout_s);
  // Every replica ready: the first to see it sets the start (SET NX), all read it.
  std::vector<std::string> ignored;
  for (;;) {
    ignored.clear();
    const std::vector<bool> in = m.members(m.ready_key, &ignored);
    const auto ready = std::count(in.begin(), in.end(), true);
    if (ready == m.o.count) break;
    if (give_up && give_up()) return;  // the replay then stops at once, as any interrupted run
    if (std::chrono::steady_clock::now() > deadline)
      throw runtime_failure(fmt::format(
          "group {}: replica{} {} of {} not ready after {} s (never started, failed to load, or another --group "
          "name or Redis?){}",
          m.o.name, m.o.count - ready > 1 ? "s" : "", m.missing(in), m.o.count, m.o.timeout_s,
          ignored.empty() ? ""
                          : fmt::format("; ignored in its ready set (no replica of {} with --shard-by {}): {}",
                                        m.o.count, m.o.shard_by, report::join_abbreviated(ignored, 4))));
    std::this_thread::sleep_for(kPoll);
  }
  if (!ignored.empty() && m.o.warn)
    m.o.warn(fmt::format("group {}: ignored in its ready set (no replica of {} with --shard-by {}): {}", m.o.name,
                         m.o.count, m.o.shard_by, report::join_abbreviated(ignored, 4)));
  // The first to get here prepares the start (the shared cache namespace
  // emptied) and then sets it; the others wait for it.
  if (m.cmd({"SET", m.prefix + "starter", m.me, "NX", "EX", keep})->type == REDIS_REPLY_STATUS) {
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
  const auto go_at = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double, std::milli>(std::clamp(wait_ms, 0.0, 10'000.0)));
  while (std::chrono::steady_clock::now() < go_at) {
    if (give_up && give_up()) return;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(kPoll, go_at - std::chrono::steady_clock::now()));
  }
  m.started = true;
}

ReplicaGroup::Finish ReplicaGroup::finish(const std::function<bool()>& give_up) {
  Impl& m = *impl_;
  Finish f;
  m.finished = true;
  m.stop_heartbeat();
  if (!m.started) {  // join gave up (an interrupt at the barrier): this replica never was one of the group's
    f.started = false;
    try {
      if (m.joined) m.take_back();
    } catch (const Error& e) {
      f.problem = e.what();
    }
    return f;
  }
  try {
    m.cmd({"SADD", m.done_key, m.me});
    m.cmd({"EXPIRE", m.done_key, std::to_string(m.o.timeout_s + kKeepS)});
    m.cmd({"DEL", m.alive_key(m.o.index)});
    // Wait for the others: each done, or dead (its heartbeat expired), so
    // that one replica is there to remove the group's keys whoever dies when.
    // Past the timeout a replica leaves that to the last one still running.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(m.o.timeout_s);
    std::vector<bool> done;
    for (;;) {
      done = m.members(m.done_key);
      std::vector<int> others;
      std::vector<std::string> get{"MGET"};
      for (int k = 0; k < m.o.count; ++k)
        if (k != m.o.index && !done[static_cast<std::size_t>(k)]) {
          others.push_back(k);
          get.push_back(m.alive_key(k));
        }
      bool running = false;
      f.dead.clear();
      if (!others.empty()) {
        const Reply beats = m.cmd(get);
        for (std::size_t i = 0; i < others.size(); ++i) {
          const std::string beat =
              beats->type == REDIS_REPLY_ARRAY && i < beats->elements ? reply_text(beats->element[i]) : "";
          if (beat.rfind(m.member_of(others[i]) + " ", 0) == 0)
            running = true;
          else
            f.dead.push_back(others[i]);
        }
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
    done = m.members(m.done_key);
    if (leaving == std::count(done.begin(), done.end(), true)) {
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
