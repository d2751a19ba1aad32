#pragma once
// The command line (the only user of CLI11). Each subcommand registers its
// options, validates them into the settings struct of the module it drives,
// and runs it; errors are inferprof::Error, printed once by main().
#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace inferprof::cli {

// Adds a subcommand to `app`; the returned callable runs it after parsing and
// returns the exit code.
using Runner = std::function<int()>;
Runner add_run_command(CLI::App& app);
Runner add_compare_command(CLI::App& app);
Runner add_gen_model_command(CLI::App& app);
Runner add_gen_trace_command(CLI::App& app);
Runner add_gen_images_command(CLI::App& app);
Runner add_store_command(CLI::App& app);
Runner add_diff_command(CLI::App& app);
Runner add_simulate_command(CLI::App& app);
Runner add_sweep_command(CLI::App& app);
Runner add_convert_command(CLI::App& app);
Runner add_inspect_command(CLI::App& app);
Runner add_merge_command(CLI::App& app);

// Parses argv and runs the chosen subcommand. Returns the process exit code.
int run_cli(int argc, char** argv);
// The command line as given (argv[0] excluded), for commands that start copies of themselves.
const std::vector<std::string>& command_line();

}  // namespace inferprof::cli
