#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/atomic_file.hpp"
#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "inferprof/diff.hpp"
#include "inferprof/error.hpp"

namespace inferprof::cli {

Runner add_diff_command(CLI::App& app) {
  auto config = std::make_shared<DiffConfig>();
  auto format = std::make_shared<report::Format>(report::Format::table);
  auto junit = std::make_shared<std::string>();
  auto positional = std::make_shared<std::array<std::string, 2>>();
  CLI::App* cmd = app.add_subcommand(
      "diff",
      "Compare saved runs (one or several per side) stage by stage; exit 1 when a gate fails (a CI latency gate)");
  cmd->add_option("BASE", (*positional)[0],
                  "The baseline run: its summary.json or its --out folder (one run; --base takes several)");
  cmd->add_option("NEW", (*positional)[1], "The run to judge, as BASE (one run; --new takes several)");
  cmd->add_option("--base", config->base_paths,
                  "Baseline runs (summary.json or --out folders): several give an interval that includes the "
                  "variation between runs");
  cmd->add_option("--new", config->new_paths, "Runs to judge, as --base");
  cmd->add_option("--max-regression", config->gates,
                  "Gates: [STAGE.][cpu.|wall.]METRIC=PCT%, optionally +FLOOR (ms|us, default +0.01ms); METRIC in "
                  "mean, p50, p90, p99, max (cpu: mean, p50, p99), throughput; wall when no clock is named")
      ->capture_default_str();
  add_format_option<DiffResult>(cmd, *format);
  cmd->add_option("--junit", *junit, "Also write a JUnit XML report (one test case per gate) to this file");
  cmd->add_flag("--force", config->force, "Compare runs of different models, traces, machines or settings anyway");
  cmd->add_option("--confidence", config->confidence, "Confidence level of the intervals")->capture_default_str();

  return [config, format, junit, positional] {
    const bool lists = !config->base_paths.empty() || !config->new_paths.empty();
    const auto given = std::count_if(positional->begin(), positional->end(), [](auto& p) { return !p.empty(); });
    if (lists && given > 0) throw bad_input("diff: give BASE NEW, or --base DIR... --new DIR..., not both");
    if (!lists && given != 2)
      throw bad_input(fmt::format("diff: expected two runs, BASE NEW (got {}), or --base DIR... --new DIR...", given));
    if (lists && (config->base_paths.empty() || config->new_paths.empty()))
      throw bad_input(fmt::format("diff: {} given without {} (expected --base DIR... --new DIR...)",
                                  config->base_paths.empty() ? "--new" : "--base",
                                  config->base_paths.empty() ? "--base" : "--new"));
    if (!lists) {
      config->base_paths = {(*positional)[0]};
      config->new_paths = {(*positional)[1]};
    }
    DiffResult r = run_diff(*config);
    if (!junit->empty()) {
      std::filesystem::path p(*junit);
      const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
      if (!std::filesystem::is_directory(dir))
        throw bad_input(fmt::format("--junit {}: the folder {} does not exist", *junit, dir));
      write_file_atomic(dir, p.filename().string(), render_diff_junit(r));
    }
    std::fputs(report::render(*format, r, "a diff").c_str(), stdout);
    return r.exit_code();
  };
}

}  // namespace inferprof::cli
