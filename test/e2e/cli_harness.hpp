#pragma once
// Runs the built inferprof binary as a user would and captures what it says.
#include <fmt/format.h>
#include <simdjson.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.hpp"

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

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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

}  // namespace inferprof::testing
