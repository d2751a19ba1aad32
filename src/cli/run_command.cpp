#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "inferprof/error.hpp"
#include "inferprof/replay.hpp"

namespace inferprof::cli {

namespace {
struct RunArgs {
  std::string model, trace, profile, out, format = "table";
  int warmup = -1, threads = -1, concurrency = 1;
  bool open_loop = false, ops = false, no_progress = false, skip_invalid = false;
  double speed = 1.0;
  std::uint64_t limit = 0, trace_json_requests = 20000;
};
}  // namespace

Runner add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Replay a trace once and print where each request's time goes");
  cmd->add_option("model", args->model, "TorchScript model file (model.pt)")->required();
  cmd->add_option("--trace", args->trace, "Request trace (JSON lines, see DESIGN.md)")->required();
  cmd->add_option("--profile", args->profile, "Pipeline profile: a name from profiles/ or a .toml path")
      ->default_str("default");
  cmd->add_option("--warmup", args->warmup, "Un-measured warm-up iterations (default: the profile's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--threads", args->threads, "libtorch intra-op threads; 0 = one per core (default: the profile's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--concurrency", args->concurrency, "Replay workers sharing the loaded model")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--open-loop", args->open_loop, "Release requests at their ts_ms (queueing is measured)");
  cmd->add_option("--speed", args->speed, "Open loop: replay the trace this many times faster")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--limit", args->limit, "Replay at most N requests");
  cmd->add_option("--out", args->out, "Write the report files to this folder");
  cmd->add_option("--format", args->format, "What to print: table, json, csv or markdown")
      ->check(CLI::IsMember({"table", "json", "csv", "markdown"}));
  cmd->add_flag("--ops", args->ops, "Attribute compute to aten operators (RecordFunction observers)");
  cmd->add_flag("--no-progress", args->no_progress, "No live progress line on stderr");
  cmd->add_flag("--skip-invalid", args->skip_invalid, "Skip (and count) invalid trace lines instead of failing");
  cmd->add_option("--trace-json-requests", args->trace_json_requests,
                  "trace.json keeps the first N requests (0 = all); the other reports keep all");

  return [args] {
    RunConfig config;
    config.model_path = args->model;
    config.trace_path = args->trace;
    config.profile = load_profile(args->profile);
    config.warmup = args->warmup;
    config.threads = args->threads;
    config.concurrency = args->concurrency;
    config.open_loop = args->open_loop;
    config.speed = args->speed;
    config.limit = args->limit;
    config.out_dir = args->out;
    config.ops = args->ops;
    config.progress = !args->no_progress;
    config.skip_invalid = args->skip_invalid;
    config.trace_json_max_requests = args->trace_json_requests;

    RunOutcome outcome = run_replay(config);
    const RunSummary& s = outcome.summary;
    std::string text;
    if (args->format == "json") text = render_summary_json(s);
    else if (args->format == "csv") text = render_stages_csv(s);
    else if (args->format == "markdown") text = render_markdown(s);
    else text = render_table(s);
    std::fputs(text.c_str(), stdout);
    if (!outcome.files.empty()) {
      // Machine formats own stdout; the file list goes to stderr then.
      std::FILE* to = args->format == "table" ? stdout : stderr;
      std::fprintf(to, "\nreports written to %s/: summary.json requests.csv stages.csv stacks.folded "
                       "flamegraph.svg trace.json\n", config.out_dir.c_str());
    }
    return 0;
  };
}

}  // namespace inferprof::cli
