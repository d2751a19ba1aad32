#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <unistd.h>

#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "inferprof/compare.hpp"
#include "inferprof/error.hpp"

namespace inferprof::cli {

namespace {
void print_files(const std::vector<std::string>& files, const std::string& dir, bool to_stdout) {
  if (files.empty()) return;
  std::FILE* to = to_stdout ? stdout : stderr;  // machine formats own stdout
  std::fprintf(to, "\nreports written to %s/:", dir.c_str());
  for (const auto& f : files) {
    std::string rel = f.rfind(dir + "/", 0) == 0 ? f.substr(dir.size() + 1) : f;
    std::fprintf(to, " %s", rel.c_str());
  }
  std::fprintf(to, "\n");
}
}  // namespace

Runner add_run_command(CLI::App& app) {
  auto args = std::make_shared<ReplayArgs>();
  auto out = std::make_shared<std::string>();
  auto caches = std::make_shared<std::string>("none");
  CLI::App* cmd = app.add_subcommand("run", "Replay a trace once and print where each request's time goes");
  add_replay_options(cmd, *args);
  cmd->add_option("--out", *out, "Write the report files to this folder");
  cmd->add_option("--cache", *caches, "Cache tiers to replay with: none, or tiers joined by commas (l1,l2,l3)")
      ->capture_default_str();

  return [args, out, caches] {
    RunConfig config = make_run_config(*args);
    config.out_dir = *out;
    config.tiers = resolve_tiers(config.profile, *caches, tier_overrides(*args), redis_url(*args), "");
    config.cache_namespace = fmt::format("run-{}", ::getpid());
    RunOutcome outcome = run_replay(config);
    const RunSummary& s = outcome.summary;
    std::string text = args->format == "json"       ? render_summary_json(s)
                       : args->format == "csv"      ? render_stages_csv(s)
                       : args->format == "markdown" ? render_markdown(s)
                                                    : render_table(s);
    std::fputs(text.c_str(), stdout);
    print_files(outcome.files, config.out_dir, args->format == "table");
    if (s.verify.mismatches > 0) {
      std::fprintf(stderr, "inferprof: verification failed: %llu cached results differ from recomputed ones\n",
                   static_cast<unsigned long long>(s.verify.mismatches));
      return static_cast<int>(ExitCode::check_failed);
    }
    return 0;
  };
}

Runner add_compare_command(CLI::App& app) {
  auto args = std::make_shared<ReplayArgs>();
  auto out = std::make_shared<std::string>();
  auto configs = std::make_shared<std::vector<std::string>>();
  auto repeat = std::make_shared<int>(1);
  auto diff = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "compare", "Replay a trace under several cache configurations and report the measured speedup of each");
  add_replay_options(cmd, *args);
  cmd->add_option("--caches", *configs,
                  "A configuration to replay (repeatable; the first is the baseline): none, l1, l1,l2, l1,l2,l3 "
                  "(default: the profile's [compare] caches, else those four)");
  cmd->add_option("--repeat", *repeat, "Replay each configuration N times, interleaved")->check(CLI::PositiveNumber);
  cmd->add_option("--out", *out, "Write compare.csv, compare.json and each configuration's reports here");
  cmd->add_flag("--flamegraph-diff", *diff, "With --out: a differential flame graph of each configuration vs the first");

  return [args, out, configs, repeat, diff] {
    CompareConfig config;
    config.base = make_run_config(*args);
    config.configurations = *configs;
    if (config.configurations.empty()) config.configurations = config.base.profile.compare_caches;
    if (config.configurations.empty()) config.configurations = {"none", "l1", "l1,l2", "l1,l2,l3"};
    config.overrides = tier_overrides(*args);
    config.redis_url = redis_url(*args);
    config.repeat = *repeat;
    config.out_dir = *out;
    config.flamegraph_diff = *diff;
    if (*diff && out->empty()) throw bad_input("--flamegraph-diff needs --out DIR to write the graphs to");
    CompareResult result = run_compare(config);
    std::string text = args->format == "json"       ? render_compare_json(result)
                       : args->format == "csv"      ? render_compare_csv(result)
                       : args->format == "markdown" ? render_compare_markdown(result)
                                                    : render_compare_table(result);
    std::fputs(text.c_str(), stdout);
    print_files(result.files, config.out_dir, args->format == "table");
    if (result.verify_mismatches > 0) {
      std::fprintf(stderr, "inferprof: verification failed: %llu cached results differ from recomputed ones\n",
                   static_cast<unsigned long long>(result.verify_mismatches));
      return static_cast<int>(ExitCode::check_failed);
    }
    return 0;
  };
}

}  // namespace inferprof::cli
