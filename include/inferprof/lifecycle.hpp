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
// processes), then the output owner's (temporary files, private folders, every
// file and folder this process created: no partial report), and exits 128 +
// the signal at once with one line; a third exits without them.
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

// A folder of this process alone under the temp directory, "<prefix>-<pid>-XXXXXX"
// (mkdtemp, mode 0700), removed with its whole tree when the object goes and by
// the Cleanup actions (the output owner's private folders). A process killed
// with SIGKILL leaves it: nothing removes another process's folder by its name.
// Throws Error(runtime).
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
};

// For tests: what the first signal does (without a signal), what a second one
// does before it exits, and back to the start.
void request_stop(int sig);
void run_cleanups_for_tests();
void reset_for_tests();

}  // namespace inferprof::lifecycle
