#pragma once
// The process around a replay: interrupts, and what must not outlive it.
//
// install() (once, from main) routes SIGINT and SIGTERM to a lifecycle thread.
// While a command that keeps what it measured runs (a GracefulScope: run,
// compare), the first signal only requests a stop: interrupted() turns true
// and the OnInterrupt hooks run; the command lets in-flight work finish,
// reports it marked "interrupted" and exits 128 + the signal. A second signal,
// or the first outside a GracefulScope, runs the Cleanup actions (a replay's
// Redis namespace, its private LMDB folder, temporary report files, replica
// processes) and exits 128 + the signal at once; a third exits without them.
// std::terminate and crash signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT)
// run the Cleanup actions too, within a bounded time, then die as before.
#include <functional>
#include <string>

namespace inferprof::lifecycle {

void install();

bool interrupted();            // a stop was requested
int interrupt_signal();        // SIGINT or SIGTERM; 0 when none
std::string interrupt_name();  // "SIGINT", "SIGTERM"; empty when none
int interrupted_exit_code();   // 128 + the signal

// Marks a command that handles a first interrupt itself (nests).
class GracefulScope {
 public:
  GracefulScope();
  ~GracefulScope();
  GracefulScope(const GracefulScope&) = delete;
  GracefulScope& operator=(const GracefulScope&) = delete;
};

// `fn` runs on the lifecycle thread when a stop is requested while this
// lives (at once, on this thread, if one already was). It must not block.
class OnInterrupt {
 public:
  explicit OnInterrupt(std::function<void()> fn);
  ~OnInterrupt();
  OnInterrupt(const OnInterrupt&) = delete;
  OnInterrupt& operator=(const OnInterrupt&) = delete;

 private:
  unsigned long id_;
};

// `fn` runs if the process dies of a signal or std::terminate while this
// lives; never on a normal exit or an exception (destructors do that). It
// may run on another thread while the registering code is still working, so
// it captures copies (paths, URLs), not objects in use.
class Cleanup {
 public:
  Cleanup() = default;
  explicit Cleanup(std::function<void()> fn);
  ~Cleanup() { release(); }
  Cleanup(Cleanup&& o) noexcept : id_(o.id_) { o.id_ = 0; }
  Cleanup& operator=(Cleanup&& o) noexcept;
  Cleanup(const Cleanup&) = delete;
  Cleanup& operator=(const Cleanup&) = delete;
  void release();

 private:
  unsigned long id_ = 0;
};

// A folder of this process alone under the temp directory, "<prefix>-<pid>-XXXXXX",
// removed when the object goes and by the Cleanup actions. It holds an flock on
// the folder while it lives; creating one first removes folders of the same
// prefix whose process is gone (its PID is not running and nobody holds the
// lock): a crash or SIGKILL leaves them. Throws Error(runtime).
class PrivateFolder {
 public:
  PrivateFolder() = default;
  explicit PrivateFolder(const std::string& prefix);
  ~PrivateFolder() { remove(); }
  PrivateFolder(PrivateFolder&& o) noexcept;
  PrivateFolder& operator=(PrivateFolder&& o) noexcept;
  const std::string& path() const { return path_; }
  void remove() noexcept;

 private:
  std::string path_;
  int lock_fd_ = -1;
  Cleanup cleanup_;
};

// Removes stale "<prefix>-<pid>-*" folders of dead processes from `dir`;
// returns how many. PrivateFolder calls it; exposed for tests.
int sweep_stale_folders(const std::string& dir, const std::string& prefix);

// Report files written under a temporary name in `dir` by this process
// (".NAME.tmp.PID.RANDOM", report::TempFile's; also ".NAME.tmp.PID"):
// removed by a Cleanup action.
void remove_own_temp_files(const std::string& dir) noexcept;
// The same of processes no longer running (a SIGKILL leaves them): removed.
// Only files of that naming, and only when their PID runs nothing.
void sweep_stale_temp_files(const std::string& dir) noexcept;
// For a command writing reports into `dir`: sweeps the stale temporary
// files, and returns the Cleanup that removes this process's own.
Cleanup temp_files_cleanup(const std::string& dir);

// For tests: what the first signal does (without a signal), what a second one
// does before it exits, and back to the start.
void request_stop(int sig);
void run_cleanups_for_tests();
void reset_for_tests();

}  // namespace inferprof::lifecycle
