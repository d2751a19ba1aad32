#pragma once
// Runs the built inferprof binary as a user would and captures what it says.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "temp_dir.hpp"
#include "text_util.hpp"

namespace inferprof::testing {

struct CliResult {
  int code = -1;
  std::string out, err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The environment that points inferprof at the repository's profiles/.
inline const std::string kProfilesEnv = std::string("INFERPROF_PROFILES_DIR=") + INFERPROF_PROFILES_DIR;

// `args` are passed to the binary one by one, quoted for the shell.
inline CliResult run_cli(const std::vector<std::string>& args, const std::string& env = "") {
  static TempDir io;
  static int counter = 0;
  std::string out = io.file(fmt::format("out{}", counter)), err = io.file(fmt::format("err{}", counter));
  ++counter;
  std::string cmd = env + " " + shell_quote(INFERPROF_BINARY);
  for (const auto& a : args)
    cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote(out) + " 2>" + shell_quote(err) + " </dev/null";
  int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

inline std::size_t count_lines(const std::string& text) {
  std::size_t n = 0;
  for (char c : text)
    n += c == '\n';
  return n;
}

inline bool dir_is_empty_or_missing(const std::filesystem::path& dir) {
  return !std::filesystem::exists(dir) || std::filesystem::is_empty(dir);
}

// A JSON number whatever simdjson stored it as (double, int64 or uint64).
inline double json_number(simdjson::dom::element e) {
  double d = 0;
  if (e.get(d) == simdjson::SUCCESS) return d;
  std::int64_t i = 0;
  if (e.get(i) == simdjson::SUCCESS) return static_cast<double>(i);
  std::uint64_t u = 0;
  if (e.get(u) != simdjson::SUCCESS) throw std::runtime_error("not a JSON number");
  return static_cast<double>(u);
}

// gen-model + gen-trace through the CLI, as a user would make them.
inline void make_model_and_trace(const std::string& model, const std::string& trace,
                                 const std::vector<std::string>& trace_args) {
  auto m = run_cli({"gen-model", "--arch", "mlp", "-o", model});
  if (m.code != 0) throw std::runtime_error("gen-model failed: " + m.err);
  std::vector<std::string> args = {"gen-trace"};
  args.insert(args.end(), trace_args.begin(), trace_args.end());
  args.push_back("-o");
  args.push_back(trace);
  auto t = run_cli(args);
  if (t.code != 0) throw std::runtime_error("gen-trace failed: " + t.err);
}

// A test run in the background of a shell ignores SIGINT, and exec keeps
// that: the binary gets the signals as a terminal's foreground job would.
inline void default_signals() {
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

// The binary running in the background, its output in files.
struct Background {
  pid_t pid = -1;
  std::string out, err;
  int code = -1;
  ~Background() {
    if (pid > 0 && code < 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  // Exit code (128 + signal when killed); -1 when still running after `limit`.
  int wait(std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (code < 0 && std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return code;
  }
};

// `cwd`: the folder it runs in (empty: this process's).
inline std::unique_ptr<Background> start(const std::vector<std::string>& args, const TempDir& io,
                                         const std::string& name = "bg", const std::string& cwd = "") {
  auto bg = std::make_unique<Background>();
  bg->out = io.file(name + ".out");
  bg->err = io.file(name + ".err");
  std::vector<std::string> all = {INFERPROF_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(127);
    default_signals();
    int in = ::open("/dev/null", O_RDONLY);
    int out = ::open(bg->out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(bg->err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  bg->pid = pid;
  return bg;
}

}  // namespace inferprof::testing
