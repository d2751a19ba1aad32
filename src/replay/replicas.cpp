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
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "base/atomic_file.hpp"
#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "inferprof/report.hpp"
#include "replay/replica_handshake.hpp"
#include "report/saved_run.hpp"

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

std::string tail_lines(const std::string& path, std::size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);)
    all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i)
    out += all[i] + "\n";
  return out;
}

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

std::string describe_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status) == 0 ? "ok" : fmt::format("exit {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return "unknown";
}

// Reads what a finished replica wrote into its summary.json.
void read_summary(const std::string& path, ReplicaResult& r) {
  report::SavedRun run;
  try {
    run = report::read_saved_run(path, report::SummaryCheck::partial);
  } catch (const Error&) {
    if (r.status == "ok") r.status = "no summary.json";
    return;
  }
  r.requests = run.requests;
  r.throughput_rps = run.throughput_rps;
  const StageStats& total = run.stages[kStageCount];
  r.mean_us = total.mean_us;
  r.p50_us = total.p50_us;
  r.p99_us = total.p99_us;
  for (const auto& u : run.updates) {
    ReplicaResult::Live live;
    live.version = u.to_version;
    live.unix_ms = u.live_unix_ms;  // -1 (null): never live in this replica
    live.stale_served = u.stale_served;
    live.stalled = u.stalled;
    live.stall_ms = u.stall_ms;
    r.stale_served += live.stale_served;
    r.stalled += live.stalled;
    r.stall_ms += live.stall_ms;
    r.live.push_back(std::move(live));
  }
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

// How a replica ended, and what its summary.json says when it finished.
ReplicaResult result_of(const Replica& c, int index, bool timed_out) {
  ReplicaResult r;
  r.index = index;
  r.pid = c.process.pid();
  r.status = describe_status(c.wait_status);
  if (timed_out && WIFSIGNALED(c.wait_status) && WTERMSIG(c.wait_status) == SIGKILL) r.status = "timed out";
  // Stopped by the interrupt passed on: what it completed counts, not a failure.
  if (lifecycle::interrupted() && WIFEXITED(c.wait_status) &&
      WEXITSTATUS(c.wait_status) == lifecycle::interrupted_exit_code()) {
    r.status = "ok";
    read_summary((fs::path(c.dir) / "summary.json").string(), r);
    r.status = "interrupted";
  }
  if (!c.ready && r.status == "ok") r.status = "never ready";
  if (r.status == "ok") read_summary((fs::path(c.dir) / "summary.json").string(), r);
  if (r.status != "ok" && r.status != "interrupted") r.log_tail = tail_lines(c.log, 5);
  return r;
}

// The replicas' results folded into one summary: the spread of p50 and p99
// over those that served something; per update, the replicas that went live
// on it and the skew between the first and the last.
class ReplicaFold {
 public:
  explicit ReplicaFold(ReplicaSummary& s) : s_(s) {}
  void add(ReplicaResult r) {
    if (r.status != "ok" && r.status != "interrupted") {
      ++s_.failed;
    } else if (r.requests > 0) {  // the spread is over replicas that served something
      if (finished_ == 0) {
        p50_lo_ = p50_hi_ = r.p50_us;
        p99_lo_ = p99_hi_ = r.p99_us;
      }
      p50_lo_ = std::min(p50_lo_, r.p50_us);
      p50_hi_ = std::max(p50_hi_, r.p50_us);
      p99_lo_ = std::min(p99_lo_, r.p99_us);
      p99_hi_ = std::max(p99_hi_, r.p99_us);
      ++finished_;
    }
    s_.requests += r.requests;
    for (const auto& live : r.live)
      add_live(live);
    s_.replicas.push_back(std::move(r));
  }
  void finish() {
    s_.p50_spread_us = p50_hi_ - p50_lo_;
    s_.p99_spread_us = p99_hi_ - p99_lo_;
    for (const std::string& v : order_) {
      ReplicaUpdate u = by_version_[v];
      if (auto it = live_range_.find(v); it != live_range_.end()) u.skew_ms = it->second.second - it->second.first;
      s_.updates.push_back(u);
    }
  }

 private:
  void add_live(const ReplicaResult::Live& live) {
    if (!by_version_.count(live.version)) order_.push_back(live.version);
    ReplicaUpdate& u = by_version_[live.version];
    u.version = live.version;
    u.stale_served += live.stale_served;
    u.stalled += live.stalled;
    u.stall_ms += live.stall_ms;
    if (live.unix_ms < 0) return;
    auto [it, fresh] = live_range_.try_emplace(live.version, live.unix_ms, live.unix_ms);
    if (!fresh) {
      it->second.first = std::min(it->second.first, live.unix_ms);
      it->second.second = std::max(it->second.second, live.unix_ms);
    }
    ++u.replicas_live;
  }

  ReplicaSummary& s_;
  std::map<std::string, ReplicaUpdate> by_version_;
  std::vector<std::string> order_;
  std::map<std::string, std::pair<double, double>> live_range_;
  double p50_lo_ = 0, p50_hi_ = 0, p99_lo_ = 0, p99_hi_ = 0;
  int finished_ = 0;
};

}  // namespace

ReplicaSummary run_replicas(const ReplicaLaunch& launch) {
  if (launch.replicas < 1) throw bad_input("--replicas must be at least 1");
  check_replica_limit(launch.replicas);
  ensure_output_dir(launch.out_dir);
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

  ReplicaSummary s;
  s.split = enum_name(launch.split);
  if (lifecycle::interrupted()) s.interrupted_by = lifecycle::interrupt_name();
  ReplicaFold fold(s);
  for (std::size_t i = 0; i < children.size(); ++i)
    fold.add(result_of(children[i], static_cast<int>(i), timed_out));
  fold.finish();
  return s;
}

}  // namespace inferprof
