#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/arg_check.hpp"
#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "inferprof/error.hpp"
#include "inferprof/merge.hpp"
#include "report/format.hpp"

namespace inferprof::cli {

Runner add_merge_command(CLI::App& app) {
  auto options = std::make_shared<MergeOptions>();
  auto format = std::make_shared<report::Format>(report::Format::table);
  CLI::App* cmd = app.add_subcommand(
      "merge",
      "Merge the run folders of one run's replicas (run --group on several hosts, or --replicas) into one report "
      "whose statistics cover every request");
  cmd->add_option("DIR", options->dirs, "A replica's run folder (its --out: summary.json and requests.csv)")
      ->required();
  cmd->add_option("--out", options->out_dir, "Write the merged reports and replicas.json to this folder");
  cmd->add_option("--replicas", options->replicas,
                  "How many replicas the group had, when their summaries do not say (those without a folder are "
                  "reported as failed)")
      ->check(whole_at_least(1, options->replicas));
  cmd->add_option("--trace", options->trace_path,
                  "The trace the replicas replayed, to count each one's share and the requests none served "
                  "(default: the path their summaries name)");
  add_format_option<RunSummary>(cmd, *format);

  return [options, format] {
    const MergeResult r = merge_runs(*options);
    if (*format == report::Format::table || *format == report::Format::markdown) {
      std::fputs(report::render(*format, r.run, "a run").c_str(), stdout);
      std::fputs("\n", stdout);
      std::fputs(report::render(*format, r.replicas, "the replica table").c_str(), stdout);
    } else {
      std::fputs(report::render(*format, r.run, "a run").c_str(), stdout);
    }
    if (!r.files.empty() && *format == report::Format::table) {
      std::printf("\nreports written to %s/:", options->out_dir.c_str());
      for (const std::string& f : r.files)
        std::printf(" %s", f.substr(options->out_dir.size() + 1).c_str());
      std::printf("\n");
    }
    if (r.replicas.failed > 0) {
      std::fprintf(stderr, "inferprof: error: %d of %zu replicas failed or left no report (see the table)\n",
                   r.replicas.failed, r.replicas.replicas.size());
      return static_cast<int>(ExitCode::runtime);
    }
    return 0;
  };
}

}  // namespace inferprof::cli
