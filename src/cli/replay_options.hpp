#pragma once
// Options `run` and `compare` share: what to replay and how.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/arg_check.hpp"
#include "inferprof/replay.hpp"
#include "report/format.hpp"

namespace inferprof::cli {

struct ReplayArgs {
  std::string model, trace, redis;
  std::vector<std::string> profiles;  // --profile (run: at most one; compare: one configuration each)
  report::Format format = report::Format::table;
  int warmup = -1, threads = -1, concurrency = 1;
  bool open_loop = false, ops = false, no_progress = false, skip_invalid = false;
  double speed = 0;                // --speed; 0: not given (1x)
  double rate = 0;                 // --rate (Poisson req/s); 0: not given (the trace's ts_ms)
  std::uint64_t limit = 0;         // --limit; 0: not given (the whole trace)
  double trace_json_max_mb = 100;  // --trace-json-max-mb
  std::vector<std::string> tiers;  // --tier l1=lru:1000
  double verify = -1;              // --verify[=FRACTION]; -1: off
  std::string store, store_redis;  // the model store
  bool store_zstd = false;
  std::optional<UpdateMode> update;  // unset: the profile's
  double preload_lead_ms = 1000;
  std::string device;  // --device; empty: the profile's
  bool pinned = false;
  bool gpu_trace = true;                  // --gpu-trace on|off
  std::string model_sha256;               // --model-sha256 HEX
  std::string csv_columns;                // --csv-columns MAP (a .csv trace)
  std::uint32_t cpu_sample = 0;           // --cpu-sample N; 0: not given (calibrated)
  Driver driver = Driver::threaded;       // --driver
  std::string dump_inputs, dump_outputs;  // --dump-inputs DIR, --dump-outputs DIR
  std::string warmup_from;                // --warmup-from KEY
  int max_batch = 1;                      // --max-batch N
  double batch_delay_us = 0;              // --batch-delay-us D
};

// `model_required`: false for compare, whose models may come from --model instead.
void add_replay_options(CLI::App* cmd, ReplayArgs& args, bool model_required = true);
// compare and sweep: MODEL (when given) then each --model, in order; args.model
// becomes the first. Throws bad_input naming `command` when there is none.
std::vector<std::string> models_to_replay(ReplayArgs& args, const std::vector<std::string>& more,
                                          std::string_view command);
// Each --profile loaded, when more than one is given (else none: the base's).
std::vector<Profile> profiles_to_replay(const ReplayArgs& args);
// Validated RunConfig (the first --profile loaded) from the parsed options.
RunConfig make_run_config(const ReplayArgs& args);
// The profile `spec` names (a name, a path, or "" for the default), with
// --device applied, as make_run_config loads it.
Profile load_run_profile(const ReplayArgs& args, const std::string& spec);
// --tier l1=lru:1000 ... parsed into specs; --redis or INFERPROF_REDIS_URL.
std::vector<TierSpec> tier_overrides(const ReplayArgs& args);
// Each "TIER=SPEC" of --tier through parse_tier_spec.
std::vector<TierSpec> parse_tier_options(const std::vector<std::string>& tiers);
std::string redis_url(const ReplayArgs& args);

// --format for a command whose result is `Result`: the formats it has, parsed
// into `f` (report::reporters is the one list).
template <class Result>
CLI::Option* add_format_option(CLI::App* cmd, report::Format& f) {
  const auto names = report::reporters<Result>().names();
  std::string help = "What to print:";
  for (std::size_t i = 0; i < names.size(); ++i)
    help += (i == 0 ? " " : i + 1 == names.size() ? " or " : ", ") + names[i];
  return cmd
      ->add_option_function<std::string>(
          "--format", [&f](const std::string& s) { f = *report::parse_format(s); }, help)
      ->check(one_of(names))
      ->default_str("table");
}

// `--verify` takes an optional value; written `--verify[=FRACTION]` so that a
// bare --verify never swallows the next word (the model path). Rewrites
// `--verify` to `--verify=1` (and `--verify 0.5` to `--verify=0.5`).
std::vector<std::string> normalize_verify(const std::vector<std::string>& args);

}  // namespace inferprof::cli
