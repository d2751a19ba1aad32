#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "inferprof/diff.hpp"
#include "inferprof/error.hpp"

namespace inferprof::cli {

Runner add_diff_command(CLI::App& app) {
  auto config = std::make_shared<DiffConfig>();
  auto format = std::make_shared<report::Format>(report::Format::table);
  auto junit = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("diff", "Compare two saved runs stage by stage; exit 1 when a gate fails (a CI latency gate)");
  cmd->add_option("BASE", config->base_path, "The baseline run: its summary.json or its --out folder")->required();
  cmd->add_option("NEW", config->new_path, "The run to judge: its summary.json or its --out folder")->required();
  cmd->add_option("--max-regression", config->gates,
                  "Gates: METRIC=PCT% (every stage and the total) or STAGE.METRIC=PCT%, optionally +FLOOR (ms|us, "
                  "default +0.01ms); METRIC in mean, p50, p90, p99, max, throughput")
      ->capture_default_str();
  add_format_option<DiffResult>(cmd, *format);
  cmd->add_option("--junit", *junit, "Also write a JUnit XML report (one test case per gate) to this file");
  cmd->add_flag("--force", config->force, "Compare runs of different models, traces, machines or settings anyway");
  cmd->add_option("--confidence", config->confidence, "Confidence level of the intervals")->capture_default_str();

  return [config, format, junit] {
    DiffResult r = run_diff(*config);
    if (!junit->empty()) {
      std::filesystem::path p(*junit);
      const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
      if (!std::filesystem::is_directory(dir))
        throw bad_input(fmt::format("--junit {}: the folder {} does not exist", *junit, dir));
      write_file_atomic(dir, p.filename().string(), render_diff_junit(r));
    }
    std::fputs(report::render(*format, r, "a diff").c_str(), stdout);
    return r.failed() ? static_cast<int>(ExitCode::check_failed) : 0;
  };
}

}  // namespace inferprof::cli
