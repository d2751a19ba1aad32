// `inferprof sweep`: its options, validated into a SweepConfig (sweep.hpp).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/text.hpp"
#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "inferprof/sweep.hpp"

namespace inferprof::cli {

namespace {

constexpr int kMaxSweepWorkers = 1024;  // a list's bound, far past what a host's cores serve

struct SweepArgs {
  std::string speeds, rates, concurrency, out;
  bool service_times = false;
  std::vector<std::string> caches, models;
  std::string max_batches;  // --max-batch 1,8
  std::string workers;      // --workers 1,2
  std::uint64_t measure_after = 0;
  double slo_ms = 0;
  int refine = 0;
  int tries = 3;
};

double number_in(std::string_view text, std::string_view flag, std::string_view whole) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
    throw bad_input(
        fmt::format("{} {}: '{}' is not a number (expected FROM:TO:STEP or a list A,B,C)", flag, whole, text));
  return v;
}

// "FROM:TO:STEP" (STEP defaults to 1) or "A,B,C": the steps.
std::vector<double> parse_steps(const std::string& text, std::string_view flag) {
  std::vector<double> out;
  const bool range = text.find(':') != std::string::npos;
  for (const std::string& part : report::split(text, range ? ':' : ','))
    out.push_back(number_in(part, flag, text));
  if (!range) return out;
  if (out.size() < 2 || out.size() > 3) throw bad_input(fmt::format("{} {}: expected FROM:TO:STEP", flag, text));
  const double from = out[0], to = out[1], step = out.size() == 3 ? out[2] : 1;
  if (!(step > 0) || !(to >= from)) throw bad_input(fmt::format("{} {}: expected FROM <= TO and STEP > 0", flag, text));
  constexpr int kMaxSteps = 100;
  out.clear();
  for (int i = 0;; ++i) {
    const double x = from + step * i;
    if (x > to * (1 + 1e-9)) break;
    if (i == kMaxSteps) throw bad_input(fmt::format("{} {}: more than {} steps", flag, text, kMaxSteps));
    out.push_back(x);
  }
  return out;
}

// "A,B,C": whole numbers from `low` to `high` (an option's list); empty text: none.
std::vector<int> whole_numbers(const std::string& text, std::string_view flag, std::string_view what, int low,
                               int high) {
  std::vector<int> out;
  if (text.empty()) return out;
  for (const std::string& part : report::split(text, ',')) {
    const double n = number_in(part, flag, text);
    if (n != std::floor(n) || n < low || n > high)
      throw bad_input(fmt::format("{} {}: expected {} from {} to {}, e.g. {},{}", flag, text, what, low, high, low,
                                  std::min(high, 8)));
    out.push_back(static_cast<int>(n));
  }
  return out;
}

SweepConfig make_sweep_config(ReplayArgs args, const SweepArgs& a) {
  const int kinds = !a.speeds.empty() + !a.rates.empty() + !a.concurrency.empty();
  if (kinds != 1)
    throw bad_input(
        "sweep needs one kind of step: --speeds FROM:TO:STEP (open loop, the trace's arrivals sped up), "
        "--rates FROM:TO:STEP (open loop, Poisson arrivals in req/s) or --concurrency FROM:TO[:STEP] (closed loop)");
  if (args.open_loop || args.speed != 0 || args.rate != 0)
    throw bad_input(
        "sweep sets the drive per step: leave out --open-loop, --speed and --rate (use --speeds or --rates)");
  if (!a.concurrency.empty() && !a.workers.empty())
    throw bad_input("sweep --concurrency sets the workers of each step: leave out --workers");
  const std::vector<int> workers = whole_numbers(a.workers, "--workers", "numbers of workers", 1, kMaxSweepWorkers);
  if (workers.size() == 1) args.concurrency = workers[0];
  const std::vector<std::string> models = models_to_replay(args, a.models, "sweep");
  SweepConfig config;
  config.base = make_run_config(args);
  if (models.size() > 1) config.models = models;
  config.profiles = profiles_to_replay(args);
  if (!a.speeds.empty()) {
    config.load = SweepLoad::speed;
    config.loads = parse_steps(a.speeds, "--speeds");
  } else if (!a.rates.empty()) {
    config.load = SweepLoad::rate;
    config.loads = parse_steps(a.rates, "--rates");
  } else {
    config.load = SweepLoad::concurrency;
    config.loads = parse_steps(a.concurrency, "--concurrency");
  }
  config.configurations = a.caches.empty() ? std::vector<std::string>{"none"} : a.caches;
  config.overrides = tier_overrides(args);
  config.redis_url = redis_url(args);
  config.slo_ms = a.slo_ms;
  config.refine = a.refine;
  config.tries = a.tries;
  if (a.tries % 2 == 0)
    throw bad_input(fmt::format("--tries {}: expected an odd number (the median try stands), e.g. {} or {}", a.tries,
                                a.tries - 1, a.tries + 1));
  config.base.replay.measure_after = a.measure_after;
  if (!a.max_batches.empty())
    config.max_batches = whole_numbers(a.max_batches, "--max-batch", "batch sizes", 1, kMaxBatch);
  if (workers.size() > 1) config.workers = workers;
  if (a.refine > 0 && !sweep_open_loop(config.load))
    throw bad_input(
        "--refine bisects between offered loads: it needs --speeds or --rates (--concurrency steps are whole "
        "workers)");
  config.out_dir = a.out;
  config.service_times = a.service_times;
  if (a.service_times && a.out.empty())
    throw bad_input("--service-times writes service_times.csv beside the other reports: it needs --out DIR");
  return config;
}

}  // namespace

Runner add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<ReplayArgs>();
  auto a = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Replay a trace at rising load under each cache configuration: latency against throughput, and the traffic "
      "each serves within a p99 objective");
  add_replay_options(cmd, *args, false);
  add_format_option<SweepResult>(cmd, args->format);
  // --concurrency is a replay option (one value); sweep takes a range under the same name.
  cmd->remove_option(cmd->get_option("--concurrency"));
  cmd->remove_option(cmd->get_option("--max-batch"));  // likewise a list here
  cmd->add_option("--speeds", a->speeds,
                  "Open loop: the trace's own arrivals sped up by each step, e.g. 0.5:4:0.5 or 1,2,4,8");
  cmd->add_option("--rates", a->rates,
                  "Open loop: Poisson arrivals at each step's rate in req/s, the trace's requests in order, e.g. "
                  "50:400:50 (the same seeded arrivals for every configuration)");
  cmd->add_option("--concurrency", a->concurrency, "Closed loop: workers at each step, e.g. 1:8 or 1,2,4,8");
  cmd->add_option("--workers", a->workers,
                  "With --speeds or --rates: the replay workers (model instances) serving the open loop; a list, "
                  "e.g. 1,2,4, sweeps each with every configuration (default 1)");
  cmd->add_option("--caches", a->caches,
                  "A cache configuration to sweep (repeatable): none, l1, l1,l2, ... (default: none)")
      ->allow_extra_args(false);
  cmd->add_option("--model", a->models,
                  "A model to sweep (repeatable; MODEL, when given, comes first): each model's curves beside the "
                  "others', step by step (--profile may be repeated instead, to sweep profiles)")
      ->allow_extra_args(false);
  cmd->add_option(
      "--max-batch", a->max_batches,
      "With --speeds or --rates: batch sizes to sweep, each with every --caches configuration, e.g. 1,8 (default 1); "
      "a batched configuration gets max(--workers, 2N) workers");
  cmd->add_option("--measure-after", a->measure_after,
                  "Serve each step's first N requests without measuring them (the caches fill, the queue settles), "
                  "and measure the rest (default 0)")
      ->check(whole_at_least(0, a->measure_after));
  cmd->add_option("--slo-ms", a->slo_ms,
                  "The p99 objective in ms: a configuration stops at the first step past it, and its capacity is "
                  "the traffic it serves within it")
      ->check(number_above(0));
  cmd->add_option(
         "--refine", a->refine,
         "With --speeds or --rates: after the steps, N bisection rounds between each configuration's last step within "
         "the objective (unsaturated) and its first past it, one replay each")
      ->check(whole_at_least(0, a->refine))
      ->capture_default_str();
  cmd->add_option("--tries", a->tries,
                  "With --speeds or --rates: a step past --slo-ms is replayed up to N times in all (an odd number), "
                  "stopping once most tries are past it, and the try with the median p99 stands (1: the first try "
                  "decides)")
      ->check(whole_at_least(1, a->tries))
      ->capture_default_str();
  cmd->add_option("--out", a->out, "Write sweep.json, sweep.csv and report.html here");
  cmd->add_flag("--service-times", a->service_times,
                "With --out: also service_times.csv, every request's arrival and service time in every replay (what "
                "the queueing model is fed)");
  return [args, a] {
    lifecycle::GracefulScope graceful;  // a first SIGINT/SIGTERM keeps the steps completed
    const SweepConfig config = make_sweep_config(*args, *a);
    const SweepResult result = run_sweep(config);
    std::fputs(report::render(args->format, result, "a sweep").c_str(), stdout);
    if (!result.files.empty()) {
      std::FILE* to = args->format == report::Format::table ? stdout : stderr;
      std::string names;
      for (const std::string& f : result.files)
        names += " " + std::filesystem::path(f).filename().string();
      std::fprintf(to, "\nreports written to %s/:%s\n", config.out_dir.c_str(), names.c_str());
    }
    if (lifecycle::interrupted()) {
      std::fflush(stdout);
      std::fprintf(stderr, "inferprof: interrupted by %s: reported the steps that completed\n",
                   lifecycle::interrupt_name().c_str());
      return lifecycle::interrupted_exit_code();
    }
    return 0;
  };
}

}  // namespace inferprof::cli
