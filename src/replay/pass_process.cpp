#include "replay/pass_process.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "inferprof/error.hpp"
#include "replay/replica_handshake.hpp"

namespace inferprof::detail {
namespace {

namespace fs = std::filesystem;

// The last line of the child's log with something on it: its one-line error.
std::string last_line(const std::string& log) {
  std::string tail = replica_handshake::log_tail(log, 20);
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' '))
    tail.pop_back();
  const std::size_t from = tail.rfind('\n');
  tail = from == std::string::npos ? tail : tail.substr(from + 1);
  constexpr std::string_view kError = "inferprof: error: ";
  if (tail.rfind(kError, 0) == 0) tail.erase(0, kError.size());
  return tail.empty() ? "(its log is empty)" : tail;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw runtime_failure(fmt::format("cannot wait for pass process {}", pid));
  return status;
}

}  // namespace

PassProcesses::PassProcesses(std::string binary, std::vector<std::string> args)
    : binary_(std::move(binary)),
      args_(replica_handshake::without_flags(args, {kPassOnlyFlag, kPassFileFlag}, {"--no-progress"})),
      forward_([running = running_] {
        if (const pid_t pid = running->load()) ::kill(pid, lifecycle::interrupt_signal());
      }),
      take_down_([running = running_] {
        // The child's own cleanup (its Redis namespaces), as for a second interrupt.
        if (const pid_t pid = running->load()) ::kill(pid, SIGTERM), ::kill(pid, SIGTERM);
      }) {}

std::optional<PassFigures> PassProcesses::run(int index) {
  if (folder_.path().empty()) folder_ = lifecycle::PrivateFolder("inferprof-passes");
  const std::string name = fmt::format("pass-{}.bin", index + 1);
  const std::string file = (fs::path(folder_.path()) / name).string();
  const std::string log = (fs::path(folder_.path()) / fmt::format("pass-{}.log", index + 1)).string();
  std::vector<std::string> args = args_;
  for (std::string a : {std::string(kPassOnlyFlag), std::to_string(index), std::string(kPassFileFlag), file,
                        std::string("--no-progress")})
    args.push_back(std::move(a));
  replica_handshake::Child child = replica_handshake::Child::start(binary_, args, log);
  running_->store(child.pid());
  if (lifecycle::interrupted()) ::kill(child.pid(), lifecycle::interrupt_signal());  // came before the store
  const int status = wait_for(child.pid());
  running_->store(0);
  child.cancel();
  std::error_code ec;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return read_pass_file(file);
  if (lifecycle::interrupted()) {
    // Stopped between requests, it wrote what it served; before the first, nothing.
    if (!fs::exists(file, ec)) return std::nullopt;
    PassFigures pass = read_pass_file(file);
    return pass.requests > 0 ? std::optional<PassFigures>(std::move(pass)) : std::nullopt;
  }
  throw runtime_failure(fmt::format("lockstep pass {} failed in its own process ({}): {}", index + 1,
                                    replica_handshake::describe_status(status), last_line(log)));
}

void join_as_pass_process(int index) {
  replica_handshake::die_with_parent();
  if (const char* fail = std::getenv("INFERPROF_TEST_FAIL_PASS"); fail && std::atoi(fail) == index + 1)
    throw runtime_failure(fmt::format("pass {} fails on purpose (INFERPROF_TEST_FAIL_PASS)", index + 1));
}

}  // namespace inferprof::detail
