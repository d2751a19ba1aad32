#pragma once
// `run --group NAME --replica K/N`: replicas started separately (a Kubernetes
// Indexed Job, a batch scheduler, ssh), on one host or many, meet in Redis
// (module redis, src/redis/replica_group.cpp). Each replica is the member
// "K/N/RULE" (its index, the group's size and its --shard-by rule): the
// barrier admits exactly 0/N ... N-1/N of one N and one rule; anything else in
// the sets is ignored (and named), and a replica that would join a group
// where another replica of another N or rule is present (its heartbeat
// names it) is refused, as is a second replica K. Under inferprof:group:NAME:
//   ready   a set: the replicas loaded, warmed up and waiting
//   starter the replica that prepares the start: the first to see all N ready
//   go      the common start, Unix ms, set by the starter (a short lead, so
//           that each replica sees it in time)
//   alive:K this replica's heartbeat, "K/N/RULE host pid" (refreshed every
//           second, expires after five): a replica that died is reported,
//           never waited for
//   done    a set: the replicas that finished (members as in ready)
//   left    a count: the finished replicas that saw every other done or dead
// A replica that finishes waits for the others (each done or dead); the last
// to leave removes every key. Every key also expires (the timeout plus an hour).
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace inferprof {

class ReplicaGroup {
 public:
  // The largest group: each replica reads every other's state while it waits
  // (one Redis round trip per poll, of up to this many members).
  static constexpr int kMaxReplicas = 4096;
  struct Options {
    std::string redis_url;
    std::string name;
    int index = 0, count = 1;  // 0 <= index < count <= kMaxReplicas
    std::string shard_by;      // the sharding rule ("key", "round-robin"): every replica has the same
    int timeout_s = 300;       // how long the start barrier waits for the others
    std::string member;        // "host pid", in the heartbeat (what an operator sees)
    // Run by the one replica that prepares the start, before it is set (the
    // group's cache namespace emptied of an earlier run's keys).
    std::function<void()> before_start;
    // Run by the one replica that removes the group's keys at the end (the
    // group's cache namespace emptied).
    std::function<void()> after_all;
    // A line for people (without "inferprof: warning: "): members of the
    // ready set that the barrier ignored.
    std::function<void(const std::string&)> warn;
  };
  // Connects. Throws Error(bad_input) for a bad name or place, Error(runtime)
  // when Redis cannot be reached.
  explicit ReplicaGroup(Options options);
  ~ReplicaGroup();  // stops the heartbeat; a replica that failed takes its ready mark back
  ReplicaGroup(const ReplicaGroup&) = delete;
  ReplicaGroup& operator=(const ReplicaGroup&) = delete;

  // Says ready, starts the heartbeat and waits for every replica, then for the
  // common start. Throws Error(bad_input) when another replica of another N
  // or rule, or another replica K, is in the group; Error(runtime) past the
  // timeout (naming the replicas that never came and the members ignored);
  // returns early when `give_up` says so (polled every 50 ms; an interrupt:
  // the replay then stops as any interrupted run does).
  void join(const std::function<bool()>& give_up);
  // Says done and waits until every other replica is done or dead (at most
  // the timeout). Then one replica removes the group's keys and runs
  // after_all. Never throws: Redis lost at the end costs the bookkeeping,
  // not the run (`problem` says what happened). A replica that never started
  // (join gave up) only takes its ready mark and heartbeat back.
  struct Finish {
    bool started = true;        // false: join gave up before the start; nothing else below applies
    std::vector<int> dead;      // replicas that stopped without finishing (no heartbeat)
    bool last = false;          // this replica removed the group's keys
    bool left_running = false;  // stopped waiting (timeout, give_up) with others running: they clean up
    std::string problem;        // non-empty: Redis failed; what happened
  };
  // `give_up` (polled, e.g. an interrupt) stops the wait: the others clean up.
  Finish finish(const std::function<bool()>& give_up);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferprof
