#pragma once
// compare --pass-process fresh: each lockstep pass after the first in a
// process of its own, both sides. The parent re-runs its own binary with its
// own compare arguments and
//   --pass-only K --pass-file DIR/pass-K.bin --no-progress
// (the children start as replicas do, replica_handshake.hpp: own process
// group, output to DIR/pass-K.log, dying with the parent); the child runs
// pass K (its own Redis namespaces, no reports) and writes its figures
// (pass_file.hpp). DIR is the parent's private folder: removed when compare
// ends, also on a failure or a signal.
#include <sys/types.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "inferprof/lifecycle.hpp"
#include "replay/pass_file.hpp"

namespace inferprof::detail {

// The hidden flags a pass process gets (not in `compare --help`).
inline constexpr const char* kPassOnlyFlag = "--pass-only";
inline constexpr const char* kPassFileFlag = "--pass-file";

// The parent's side.
class PassProcesses {
 public:
  // `binary` (/proc/self/exe) re-run with `args`, the parent's compare arguments.
  PassProcesses(std::string binary, std::vector<std::string> args);
  // Runs pass `index` (from 0) in a fresh process and returns its figures.
  // nullopt: an interrupt (passed on to the child) stopped it before it
  // completed a request. A child that fails otherwise throws Error(runtime):
  // one line naming the pass, how it ended and the last line of its log.
  std::optional<PassFigures> run(int index);

 private:
  std::string binary_;
  std::vector<std::string> args_;
  lifecycle::PrivateFolder folder_;  // created with the first child
  std::shared_ptr<std::atomic<pid_t>> running_ = std::make_shared<std::atomic<pid_t>>(0);  // 0: none
  lifecycle::OnInterrupt forward_;  // a first interrupt, passed on to the running child
  lifecycle::Cleanup take_down_;    // a second one (or a crash): the child stops at once
};

// The child's side, before its pass: it dies with the parent. For the
// tests, INFERPROF_TEST_FAIL_PASS=K makes pass K (from 1) fail here, exit 3.
void join_as_pass_process(int index);

}  // namespace inferprof::detail
