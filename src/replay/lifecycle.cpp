// Signals reach a handler that only writes the signal's number into a pipe
// (all a handler may safely do); a detached thread reads it and does the rest,
// which needs locks, sockets and the heap (Redis UNLINK, the output owner removing files).
#include "inferprof/lifecycle.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include "base/output_owner.hpp"
#include "inferprof/error.hpp"

namespace inferprof::lifecycle {
namespace {

namespace fs = std::filesystem;

constexpr unsigned char kCrash = 0x80;  // or'ed into the byte: a crash signal, clean up and return
constexpr int kCrashCleanupMs = 3000;   // a crash waits this long for the cleanups, then dies anyway
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// Never destroyed: the lifecycle thread may use them while the process exits.
struct State {
  std::mutex mu;
  int graceful = 0;
  unsigned long next_id = 1;
  std::map<unsigned long, std::function<void()>> hooks, cleanups;
  bool cleaned = false;
};
State& state() {
  static State* s = new State;
  return *s;
}

std::atomic<int> g_stop{0};      // the signal that requested a stop
std::atomic<int> g_received{0};  // SIGINT/SIGTERM received
int g_pipe[2] = {-1, -1};        // handlers -> lifecycle thread
int g_done[2] = {-1, -1};        // lifecycle thread -> a crashing thread: cleanups done
std::atomic<bool> g_crashing{false};

// Under the lock: a Cleanup going out of scope waits for its action to
// finish instead of freeing what the action uses.
void run_cleanups() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.cleaned) return;
  s.cleaned = true;
  for (auto& [id, fn] : s.cleanups) {
    try {
      fn();
    } catch (...) {  // the next one still runs
    }
  }
  s.cleanups.clear();
  // Last: what the actions above wrote or stopped writing (temporary and partial report files).
  output::abandon_all();
}

// The first signal in a graceful command: request the stop. Returns false
// when the signal should end the process instead.
bool begin_stop(int sig) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (g_stop.load() != 0 || s.graceful == 0) return false;
  g_stop = sig;
  for (auto& [id, fn] : s.hooks)
    fn();
  return true;
}

// Exits 128 + sig with one line, as a graceful command's stop does: every
// command ends an interrupt with 130 (SIGINT) or 143 (SIGTERM). Only
// async-signal-safe calls: a third signal calls it from the handler.
[[noreturn]] void die_of(int sig) {
  static constexpr char kInt[] = "inferprof: interrupted by SIGINT: stopped\n";
  static constexpr char kTerm[] = "inferprof: interrupted by SIGTERM: stopped\n";
  if (sig == SIGINT && ::write(STDERR_FILENO, kInt, sizeof kInt - 1) < 0) ::_exit(128 + sig);
  if (sig == SIGTERM && ::write(STDERR_FILENO, kTerm, sizeof kTerm - 1) < 0) ::_exit(128 + sig);
  ::_exit(128 + sig);
}

void on_signal(int sig) {
  const int saved = errno;
  if (g_received.fetch_add(1) + 1 >= 3) die_of(sig);  // the cleanups themselves hang
  auto byte = static_cast<unsigned char>(sig);
  if (::write(g_pipe[1], &byte, 1) != 1) die_of(sig);
  errno = saved;
}

void on_crash(int sig) {
  if (!g_crashing.exchange(true)) {
    auto byte = static_cast<unsigned char>(kCrash | sig);
    if (::write(g_pipe[1], &byte, 1) == 1) {
      pollfd p{g_done[0], POLLIN, 0};
      ::poll(&p, 1, kCrashCleanupMs);
    }
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

void lifecycle_thread() {
  const sigset_t stops = stop_signals();
  ::pthread_sigmask(SIG_UNBLOCK, &stops, nullptr);  // the one thread they reach (see install)
  for (;;) {
    unsigned char byte = 0;
    ssize_t n = ::read(g_pipe[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1) return;
    if (byte & kCrash) {
      run_cleanups();
      const char done = 'd';
      if (::write(g_done[1], &done, 1) != 1) {
      }
      continue;
    }
    const int sig = byte;
    if (begin_stop(sig)) continue;
    run_cleanups();
    die_of(sig);
  }
}

}  // namespace

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (::pipe2(g_pipe, O_CLOEXEC) != 0 || ::pipe2(g_done, O_CLOEXEC) != 0) return;  // signals then act as before
    state();
    try {
      std::thread(lifecycle_thread).detach();
    } catch (const std::system_error&) {
      return;
    }
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int sig : {SIGINT, SIGTERM}) {
      struct sigaction old {};
      ::sigaction(sig, nullptr, &old);
      if (old.sa_handler == SIG_IGN) continue;  // nohup and the like: keep ignoring
      ::sigaction(sig, &sa, nullptr);
    }
    // Crash signals only where nobody else handles them (a sanitizer does).
    struct sigaction crash {};
    crash.sa_handler = on_crash;
    sigemptyset(&crash.sa_mask);
    crash.sa_flags = SA_RESETHAND;
    for (int sig : kCrashSignals) {
      struct sigaction old {};
      ::sigaction(sig, nullptr, &old);
      if (old.sa_handler == SIG_DFL) ::sigaction(sig, &crash, nullptr);
    }
    // Threads started from here on (workers, Redis and libtorch pools) inherit
    // a mask without SIGINT/SIGTERM, so the handler runs on the lifecycle
    // thread and no blocking call elsewhere sees EINTR. Processes this one
    // starts get a clean mask (replicas.cpp).
    const sigset_t stops = stop_signals();
    ::pthread_sigmask(SIG_BLOCK, &stops, nullptr);
  });
}

bool interrupted() {
  return g_stop.load(std::memory_order_relaxed) != 0;
}
int interrupt_signal() {
  return g_stop.load(std::memory_order_relaxed);
}
int interrupted_exit_code() {
  return 128 + interrupt_signal();
}
std::string interrupt_name() {
  const int sig = interrupt_signal();
  if (sig == 0) return "";
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return fmt::format("signal {}", sig);
}

GracefulScope::GracefulScope() {
  std::lock_guard<std::mutex> lock(state().mu);
  ++state().graceful;
}
GracefulScope::~GracefulScope() {
  std::lock_guard<std::mutex> lock(state().mu);
  --state().graceful;
}

OnInterrupt::OnInterrupt(std::function<void()> fn) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  id_ = s.next_id++;
  if (g_stop.load() != 0) fn();
  s.hooks.emplace(id_, std::move(fn));
}
OnInterrupt::~OnInterrupt() {
  std::lock_guard<std::mutex> lock(state().mu);
  state().hooks.erase(id_);
}

Cleanup::Cleanup(std::function<void()> fn) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  id_ = s.next_id++;
  s.cleanups.emplace(id_, std::move(fn));
}
Cleanup& Cleanup::operator=(Cleanup&& o) noexcept {
  if (this != &o) {
    release();
    id_ = o.id_;
    o.id_ = 0;
  }
  return *this;
}
void Cleanup::release() {
  if (id_ == 0) return;
  std::lock_guard<std::mutex> lock(state().mu);
  state().cleanups.erase(id_);
  id_ = 0;
}

PrivateFolder::PrivateFolder(const std::string& prefix) {
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (ec) throw runtime_failure("no temporary folder: " + ec.message());
  std::string path = (tmp / fmt::format("{}-{}-XXXXXX", prefix, ::getpid())).string();
  if (!::mkdtemp(path.data())) throw runtime_failure("cannot create a folder under " + tmp.string());
  path_ = path;
  output::track_private(path_);  // removed by remove() or, on a fatal signal, by output::abandon_all
}

PrivateFolder::PrivateFolder(PrivateFolder&& o) noexcept : path_(std::move(o.path_)) {
  o.path_.clear();
}

PrivateFolder& PrivateFolder::operator=(PrivateFolder&& o) noexcept {
  if (this != &o) {
    remove();
    path_ = std::move(o.path_);
    o.path_.clear();
  }
  return *this;
}

void PrivateFolder::remove() noexcept {
  if (!path_.empty()) output::remove_private(path_);
  path_.clear();
}

void request_stop(int sig) {
  begin_stop(sig);
}
void run_cleanups_for_tests() {
  run_cleanups();
}

void reset_for_tests() {
  g_stop = 0;
  g_received = 0;
  std::lock_guard<std::mutex> lock(state().mu);
  state().cleaned = false;
}

}  // namespace inferprof::lifecycle
