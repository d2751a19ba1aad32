// The parent of `run --replicas N`: starts the replicas together
// (replica_handshake.hpp), waits for them, and folds their reports into one.
// A replica that dies is reported and the others go on.
#include "inferprof/replicas.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "base/atomic_file.hpp"
#include "base/output_owner.hpp"
#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "inferprof/report.hpp"
#include "replay/replica_handshake.hpp"

namespace inferprof {

namespace fs = std::filesystem;

namespace {

// A replica is a whole process with libtorch's thread pools: past a few per
// core they only queue for the CPU, and RLIMIT_NPROC (ulimit -u) counts every
// thread of every one. Unbounded, --replicas 100000 forks until the machine
// gives out.
constexpr int kReplicasPerCore = 8;
constexpr int kThreadsPerReplica = 16;  // workers, libtorch's pools, the store's and Redis's

// Throws Error(bad_input) when `replicas` is more than this machine can run.
void check_replica_limit(int replicas) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int limit = kReplicasPerCore * cores;
  std::string why = fmt::format("{} per core, {} core{}", kReplicasPerCore, cores, cores == 1 ? "" : "s");
  rlimit nproc{};
  if (::getrlimit(RLIMIT_NPROC, &nproc) == 0 && nproc.rlim_cur != RLIM_INFINITY &&
      nproc.rlim_cur / kThreadsPerReplica < static_cast<rlim_t>(limit)) {
    limit = std::max(1, static_cast<int>(nproc.rlim_cur / kThreadsPerReplica));
    why = fmt::format("ulimit -u {} allows {} processes of {} threads", nproc.rlim_cur, limit, kThreadsPerReplica);
  }
  if (replicas > limit)
    throw bad_input(fmt::format("--replicas {}: at most {} on this machine ({})", replicas, limit, why));
}

// How long a replica may take to load, warm up and subscribe.
constexpr int kReadyTimeoutMs = 300'000;

struct Replica {
  replica_handshake::Child process;
  bool ready = false;
  bool exited = false;
  int wait_status = 0;
  std::string dir, log;
};

Replica start(const ReplicaLaunch& launch, int index) {
  replica_handshake::Assignment a;
  a.index = index;
  a.count = launch.replicas;
  a.split = launch.split;
  a.cache_namespace = launch.cache_namespace;
  a.out_dir = (fs::path(launch.out_dir) / fmt::format("replica-{}", index)).string();
  std::string log = (fs::path(launch.out_dir) / fmt::format("replica-{}.log", index)).string();
  return Replica{
      replica_handshake::Child::start(launch.binary, launch.child_args, a, log), false, false, 0, a.out_dir, log};
}

// The shared tiers start empty and keep nothing of the run afterwards; the
// replicas themselves leave the shared namespace alone.
void clear_shared(const ReplicaLaunch& launch) {
  if (launch.redis_url.empty()) return;
  try {
    make_redis_backend(launch.redis_url, launch.cache_namespace)->clear();
  } catch (const std::exception&) {
    // Unreachable now: the replicas report it themselves.
  }
}

// The replicas started so far, for the interrupt passed on and the take-down.
struct Pids {
  std::mutex mu;
  std::vector<pid_t> pids;
  bool forwarded = false;
};

// A second interrupt, or a crash, takes the replicas down: SIGTERM twice (a
// replica's own cleanup, then exit), SIGKILL for any still there, then the
// shared namespace.
lifecycle::Cleanup take_down(Pids& pids, const ReplicaLaunch& launch) {
  return lifecycle::Cleanup([&pids, url = launch.redis_url, ns = launch.cache_namespace] {
    std::vector<pid_t> left;
    {
      std::lock_guard<std::mutex> lock(pids.mu);
      left = pids.pids;
      for (pid_t pid : left) {
        if (!pids.forwarded) ::kill(pid, SIGTERM);
        ::kill(pid, SIGTERM);
      }
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!left.empty() && std::chrono::steady_clock::now() < until) {
      left.erase(
          std::remove_if(left.begin(), left.end(), [](pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) != 0; }),
          left.end());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (pid_t pid : left)
      ::kill(pid, SIGKILL);
    if (!url.empty()) make_redis_backend(url, ns)->clear();
  });
}

// Wait until every replica is ready (or gone, or the run interrupted), then release them together.
void release_together(std::vector<Replica>& children) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kReadyTimeoutMs);
  for (Replica& c : children)
    c.ready = c.process.wait_ready(deadline, [] { return lifecycle::interrupted(); });
  for (Replica& c : children) {
    if (c.ready)
      c.ready = c.process.go();
    else
      c.process.cancel();
  }
}

// Waits for all; past the timeout, the rest are killed. True when some were.
bool wait_all(std::vector<Replica>& children, int timeout_s) {
  const auto stop_at = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::size_t running = children.size();
  bool timed_out = false;
  while (running > 0) {
    for (Replica& c : children) {
      if (c.exited) continue;
      int status = 0;
      pid_t r = ::waitpid(c.process.pid(), &status, WNOHANG);
      if (r == c.process.pid()) {
        c.exited = true;
        c.wait_status = status;
        --running;
      }
    }
    if (running == 0) break;
    if (timeout_s > 0 && !timed_out && std::chrono::steady_clock::now() > stop_at) {
      timed_out = true;
      for (Replica& c : children)
        if (!c.exited) ::kill(c.process.pid(), SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return timed_out;
}

// How a replica's process ended, on its row of the table (merge filled in
// what its folder says).
void annotate(ReplicaResult& r, const Replica& c, bool timed_out) {
  r.pid = c.process.pid();
  std::string status = replica_handshake::describe_status(c.wait_status);
  if (timed_out && WIFSIGNALED(c.wait_status) && WTERMSIG(c.wait_status) == SIGKILL) status = "timed out";
  // Stopped by the interrupt passed on: what it completed counts, not a failure.
  if (lifecycle::interrupted() && WIFEXITED(c.wait_status) &&
      WEXITSTATUS(c.wait_status) == lifecycle::interrupted_exit_code())
    status = "interrupted";
  if (!c.ready && status == "ok") status = "never ready";
  if (status == "ok" && r.status == "no report") status = "no summary.json";
  if (status != "ok") r.status = status;
  if (r.status != "ok" && r.status != "interrupted") r.log_tail = replica_handshake::log_tail(c.log, 5);
}

}  // namespace

MergeResult run_replicas(const ReplicaLaunch& launch) {
  if (launch.replicas < 1) throw bad_input("--replicas must be at least 1");
  check_replica_limit(launch.replicas);
  output::claim_dir(launch.out_dir);
  clear_shared(launch);

  // A first interrupt is passed on to the replicas (each stops as `run`
  // does: reports what completed); the parent then waits for them as usual.
  Pids pids;
  lifecycle::OnInterrupt forward([&] {
    std::lock_guard<std::mutex> lock(pids.mu);
    pids.forwarded = true;
    for (pid_t pid : pids.pids)
      ::kill(pid, lifecycle::interrupt_signal());
  });
  const lifecycle::Cleanup crash_cleanup = take_down(pids, launch);

  std::vector<Replica> children;
  for (int i = 0; i < launch.replicas && !lifecycle::interrupted(); ++i) {
    children.push_back(start(launch, i));
    std::lock_guard<std::mutex> lock(pids.mu);
    pids.pids.push_back(children.back().process.pid());
    if (pids.forwarded) ::kill(children.back().process.pid(), lifecycle::interrupt_signal());
  }
  release_together(children);
  const bool timed_out = wait_all(children, launch.timeout_s);
  clear_shared(launch);

  // One report from every replica's requests, with a row per replica.
  MergeOptions merge;
  merge.replicas = launch.replicas;
  merge.out_dir = launch.merged_dir;
  for (const Replica& c : children)
    if (fs::exists(fs::path(c.dir) / "summary.json")) merge.dirs.push_back(c.dir);
  merge.annotate = [&](ReplicaResult& r) {
    if (static_cast<std::size_t>(r.index) < children.size())
      annotate(r, children[static_cast<std::size_t>(r.index)], timed_out);
  };
  MergeResult result = merge_runs(merge);
  result.replicas.split = enum_name(launch.split);
  if (lifecycle::interrupted()) result.replicas.interrupted_by = lifecycle::interrupt_name();
  return result;
}

}  // namespace inferprof
