#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>

#include "cli/commands.hpp"
#include "inferprof/error.hpp"

namespace inferprof::cli {

namespace {
std::vector<std::string>& saved_args() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

const std::vector<std::string>& command_line() { return saved_args(); }

int run_cli(int argc, char** argv) {
  saved_args().assign(argv + 1, argv + argc);
  CLI::App app{"inferprof: where inference latency goes, and what caching would buy"};
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
  add(add_gen_model_command);
  add(add_gen_trace_command);
  add(add_gen_images_command);
  add(add_store_command);
  add(add_diff_command);
  add(add_simulate_command);
  add(add_convert_command);

  try {
    app.parse(argc, argv);
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
