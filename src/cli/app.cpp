#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <map>

#include "cli/arg_check.hpp"
#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "inferprof/error.hpp"

namespace inferprof::cli {

namespace {
std::vector<std::string>& saved_args() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

const std::vector<std::string>& command_line() {
  return saved_args();
}

int run_cli(int argc, char** argv) {
  saved_args().assign(argv + 1, argv + argc);
  CLI::App app{"inferprof: where inference latency goes, and what caching would buy", "inferprof"};
  app.require_subcommand(1);
  app.set_version_flag("--version", INFERPROF_VERSION);
  std::map<CLI::App*, Runner> runners;
  auto add = [&](auto&& adder) {
    std::size_t before = app.get_subcommands({}).size();
    Runner r = adder(app);
    runners[app.get_subcommands({})[before]] = std::move(r);
  };
  add(add_run_command);
  add(add_compare_command);
  add(add_sweep_command);
  add(add_inspect_command);
  add(add_gen_model_command);
  add(add_gen_trace_command);
  add(add_gen_images_command);
  add(add_store_command);
  add(add_diff_command);
  add(add_merge_command);
  add(add_simulate_command);
  add(add_convert_command);

  if (saved_args().empty()) {
    // A bare `inferprof`: what it can do, not an error about a missing command.
    std::fputs(short_usage(app).c_str(), stderr);
    return static_cast<int>(ExitCode::bad_input);
  }
  check_command_line(app, saved_args());
  try {
    // CLI11 takes the arguments last first.
    std::vector<std::string> args = normalize_verify(saved_args());
    std::reverse(args.begin(), args.end());
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Usage errors are bad input (exit 2), in the same one-line form as the rest.
    throw bad_input(e.what());
  }
  for (auto* sub : app.get_subcommands())
    if (auto it = runners.find(sub); it != runners.end()) return it->second();
  return 0;
}

}  // namespace inferprof::cli
