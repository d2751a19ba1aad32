#include "inferprof/compare.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <tuple>

#include "base/atomic_file.hpp"
#include "base/output_owner.hpp"
#include "cache/hierarchy.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "replay/dump.hpp"
#include "replay/engine.hpp"
#include "replay/pass_file.hpp"
#include "replay/pass_process.hpp"

namespace inferprof {
namespace {

namespace fs = std::filesystem;

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// A folder name for a configuration: "l1,l2" -> "l1+l2", "models/a.pt" -> "models_a.pt"; a name
// that is empty, "." or ".." (a model or profile named so) gets a leading '_' (output::safe_name):
// every configuration's folder lies inside --out.
std::string folder_name(const std::string& config) {
  std::string out = config;
  std::replace(out.begin(), out.end(), ',', '+');
  return output::safe_name(out);
}

// The slowest 1% of requests hold over half of all the time: the mean is
// then a statement about a few outliers, and the table says so.
bool outliers_dominate(std::vector<double> sample) {
  if (sample.size() < 100) return false;
  std::sort(sample.begin(), sample.end());
  const std::size_t top = sample.size() / 100;
  double total = std::accumulate(sample.begin(), sample.end(), 0.0);
  double tail = std::accumulate(sample.end() - static_cast<std::ptrdiff_t>(top), sample.end(), 0.0);
  return total > 0 && tail / total > 0.5;
}

// A unique namespace per replay, so concurrent runs on one Redis never collide.
std::string run_namespace(std::size_t config, int repeat) {
  std::random_device rd;
  return fmt::format("{}-{:08x}-c{}-r{}", ::getpid(), rd(), config, repeat);
}

// Per outcome, the count and mean of the requests it served, from each
// request's latency and outcome (lockstep).
std::vector<OutcomeStats> outcome_costs(const std::vector<double>& latency_us,
                                        const std::vector<CacheOutcome>& outcome) {
  std::vector<OutcomeStats> out;
  for (int k = 0; k < kCacheOutcomes; ++k) {
    OutcomeStats o;
    const auto served = static_cast<CacheOutcome>(k);
    o.outcome = served;
    double sum = 0;
    for (std::size_t i = 0; i < latency_us.size() && i < outcome.size(); ++i)
      if (outcome[i] == served) {
        ++o.count;
        sum += latency_us[i];
      }
    if (o.count == 0) continue;
    o.mean_us = sum / static_cast<double>(o.count);
    out.push_back(o);
  }
  return out;
}
// The same from a replay's summary (sequential: the last repeat).
std::vector<OutcomeStats> outcome_costs(const std::vector<OutcomeStats>& summary) {
  std::vector<OutcomeStats> out;
  for (const OutcomeStats& o : summary)
    if (o.count > 0) out.push_back(OutcomeStats{o.outcome, o.count, o.mean_us, 0, 0});
  return out;
}

// Lockstep: the two intervals in words, with the classes and single requests
// of every configuration against the baseline as a range.
void describe_lockstep_intervals(CompareResult& result) {
  // The classes and singletons of every configuration against the baseline, as a range.
  std::size_t classes_lo = SIZE_MAX, classes_hi = 0, single_lo = SIZE_MAX, single_hi = 0;
  bool ignored = false, borrowed = false, widened = false;
  for (std::size_t c = 1; c < result.rows.size(); ++c) {
    const TraceIntervalInfo& f = result.rows[c].interval_facts;
    classes_lo = std::min(classes_lo, f.classes);
    classes_hi = std::max(classes_hi, f.classes);
    single_lo = std::min(single_lo, f.singletons);
    single_hi = std::max(single_hi, f.singletons);
    ignored = ignored || f.inputs_ignored;
    borrowed = borrowed || f.borrowed;
    widened = widened || f.between_passes;
  }
  auto range = [](std::size_t lo, std::size_t hi) {
    return lo == hi ? fmt::format("{}", lo) : fmt::format("{}-{}", lo, hi);
  };
  std::string repeats = result.repeat > 1 ? fmt::format(" ({} lockstep repeats)", result.repeat) : "";
  result.interval = fmt::format(
      "this trace: noise with the trace held fixed, {} paired requests{} resampled within {} classes ({}) — "
      "{} alone in their class take the pooled within-class noise{}",
      result.paired, repeats, result.rows.size() > 1 ? range(classes_lo, classes_hi) : "0",
      ignored ? "what served them under both configurations; no input repeated with the same outcome"
              : "input x what served it under both configurations",
      result.rows.size() > 1 ? range(single_lo, single_hi) : "0",
      borrowed ? " (over all outcomes where theirs has too few repeats)" : "");
  if (result.repeat >= 3)
    result.interval += widened ? fmt::format(
                                     "; widened to the spread of the {} passes' own speedups (t, {} df) where "
                                     "that was wider: what moves a whole pass",
                                     result.repeat, result.repeat - 1)
                               : fmt::format("; the {} passes' own speedups spread no wider", result.repeat);
  if (result.repeat > 1 && result.pass_process == PassProcess::fresh)
    result.interval +=
        "; each pass after the first in a process of its own (--pass-process fresh), so that the "
        "passes differ as separate processes do";
  if (result.paced)
    result.interval += fmt::format(
        "; in units of the machine's pace (the baseline's median over the {} requests around each: "
        "{:.2f}–{:.2f}×)",
        result.pace_window, result.pace_min, result.pace_max);
  result.interval += "; the verdicts read it";
  result.traffic_interval = fmt::format(
      "traffic like this trace: paired bootstrap over {} requests{} (which requests, hits and inputs vary too)",
      result.paired, repeats);
}

}  // namespace

namespace {

// What configuration c serves with: its caches, and the model and profile
// when the configurations differ by them.
struct Setup {
  std::string name, caches, model_path;  // model_path empty: the base's
  const Profile* profile = nullptr;      // null: the base's
};

// The configurations and what differs between them: caches, model or profile (one at a time).
std::vector<Setup> compare_setups(const CompareConfig& config, std::string& varies) {
  const bool caches = config.configurations.size() > 1, models = config.models.size() > 1,
             profiles = config.profiles.size() > 1;
  if (caches + models + profiles > 1)
    throw bad_input(fmt::format(
        "compare varies one thing at a time: {} cache configurations (--caches), {} models (--model) and {} "
        "profiles (--profile) were given; keep one of them to several",
        config.configurations.size(), std::max<std::size_t>(config.models.size(), 1),
        std::max<std::size_t>(config.profiles.size(), 1)));
  if (config.configurations.empty()) throw bad_input("compare needs at least one --caches configuration");
  for (const std::string& m : config.models)
    if (m.empty()) throw bad_input("--model '': expected the path of a TorchScript file");
  if ((models || profiles) && (!config.base.output.dump_inputs.empty() || !config.base.output.dump_outputs.empty()))
    throw bad_input(
        "--dump-inputs and --dump-outputs write one model's tensors: with several models or profiles, dump each "
        "with 'inferprof run'");
  const std::string& one_model = config.models.empty() ? std::string() : config.models.front();
  const Profile* one_profile = config.profiles.empty() ? nullptr : &config.profiles.front();
  std::vector<Setup> out;
  if (models) {
    varies = "model";
    for (std::size_t i = 0; i < config.models.size(); ++i)
      out.push_back(Setup{model_label(config.models, i), config.configurations.front(), config.models[i], one_profile});
  } else if (profiles) {
    varies = "profile";
    for (std::size_t i = 0; i < config.profiles.size(); ++i)
      out.push_back(
          Setup{profile_label(config.profiles, i), config.configurations.front(), one_model, &config.profiles[i]});
  } else {
    varies = "caches";
    for (const std::string& c : config.configurations)
      out.push_back(Setup{c, c, one_model, one_profile});
  }
  return out;
}

// Only the elements at `kept` (indices, in order) stay in `v`.
template <class T>
void keep_only(std::vector<T>& v, const std::vector<std::size_t>& kept) {
  std::vector<T> out;
  for (std::size_t i : kept)
    out.push_back(std::move(v[i]));
  v = std::move(out);
}

// One configuration of the compare: how it is set up and what its replays gave.
struct Configuration {
  Setup setup;
  std::vector<double> samples;  // its replays' latency samples, pooled (sequential's interval)
  std::vector<std::pair<std::string, std::uint64_t>> folded;  // its last replay's stacks (--flamegraph-diff)
  detail::RequestSeries paired;  // lockstep: every (pass, request), the same order in every configuration
};

// Lockstep: what the (pass, request) pairs share across the configurations.
struct Pairs {
  std::vector<std::uint64_t> input;    // its input, the same in every configuration
  std::vector<std::uint32_t> pass_of;  // which lockstep pass served it (0, 1, ...)
  std::uint32_t passes = 0;
  void append(std::vector<std::uint64_t>&& pass_input) {
    pass_of.insert(pass_of.end(), pass_input.size(), passes++);
    input.insert(input.end(), pass_input.begin(), pass_input.end());
  }
};

std::vector<std::uint8_t> outcome_codes(const std::vector<CacheOutcome>& outcome) {
  std::vector<std::uint8_t> out;
  out.reserve(outcome.size());
  for (const CacheOutcome o : outcome)
    out.push_back(outcome_code(o));
  return out;
}

// The state run_compare carries from one phase to the next.
struct CompareRun {
  const CompareConfig& config;
  CompareMode mode;
  std::vector<Configuration> configs;  // in the order of result.rows
  CompareResult result;
  Pairs pairs;
  std::vector<double> pace;  // lockstep with an uncached baseline: machine_pace of its latencies

  CompareRun(const CompareConfig& c, CompareMode m, std::vector<Setup> setups) : config(c), mode(m) {
    for (Setup& setup : setups)
      configs.push_back(Configuration{std::move(setup), {}, {}, {}});
  }
  const Setup& setup(std::size_t c) const { return configs[c].setup; }
  RunConfig setup_config(std::size_t c, const RunConfig& base) const {
    RunConfig run = base;
    if (!setup(c).model_path.empty()) run.model_path = setup(c).model_path;
    if (setup(c).profile) run.profile = *setup(c).profile;
    return run;
  }
  std::string out_dir(std::size_t c) const {
    return config.out_dir.empty() ? "" : (fs::path(config.out_dir) / result.rows[c].folder).string();
  }
  const std::vector<double>& base_latency() const { return configs.front().paired.latency_us; }
  // A completed replay (or lockstep pass) of configuration c: its figures, and the last one's reports.
  void keep(std::size_t c, RunOutcome outcome) {
    CompareRow& row = result.rows[c];
    row.means_us.push_back(outcome.summary.total.mean_us);
    row.walls_s.push_back(outcome.summary.info.wall_s);
    std::vector<double>& samples = configs[c].samples;
    samples.insert(samples.end(), outcome.summary.latency_sample_us.begin(), outcome.summary.latency_sample_us.end());
    row.last = std::move(outcome.summary);
    configs[c].folded = std::move(outcome.folded);
    // Each pass rewrites the same files: each is listed once.
    for (auto& f : outcome.files)
      if (std::find(result.files.begin(), result.files.end(), f) == result.files.end()) result.files.push_back(f);
  }
  // A lockstep pass: its requests after the earlier passes', and each configuration's reports.
  void keep(detail::LockstepPass&& pass) {
    result.pass_pids.push_back(::getpid());
    pairs.append(std::move(pass.input));
    for (std::size_t c = 0; c < configs.size(); ++c) {
      configs[c].paired.append(std::move(pass.series[c]));
      keep(c, std::move(pass.outcomes[c]));
    }
  }
  // A lockstep pass of another process (--pass-process fresh): its requests
  // and figures; its reports were not written, the first pass's stay.
  void keep(detail::PassFigures&& pass) {
    if (pass.series.size() != configs.size() || pass.mean_us.size() != configs.size() ||
        pass.wall_s.size() != configs.size())
      throw runtime_failure(fmt::format("lockstep pass {}: its process served {} configurations, not {}",
                                        pairs.passes + 1, pass.series.size(), configs.size()));
    pairs.append(std::move(pass.input));
    for (std::size_t c = 0; c < configs.size(); ++c) {
      configs[c].paired.append(std::move(pass.series[c]));
      result.rows[c].means_us.push_back(pass.mean_us[c]);
      result.rows[c].walls_s.push_back(pass.wall_s[c]);
    }
    result.pass_pids.push_back(pass.pid);
  }
  // Lockstep with an uncached baseline: it does the same work for every
  // request, so its latencies say how fast the machine ran when (machine_pace).
  std::vector<double> current_pace() const {
    return mode == CompareMode::lockstep && result.rows.front().tiers.empty() && !base_latency().empty()
               ? machine_pace(base_latency())
               : std::vector<double>{};
  }
  // The this-trace speedup of configuration c's series `other` over the
  // baseline's `base`, over the pairs read in both (CPU sampling reads the
  // same requests in every configuration), each divided by `pace` when given.
  Speedup speedup(std::size_t c, const std::vector<double>& base, const std::vector<double>& other,
                  const std::vector<double>& pace, TraceIntervalInfo* info = nullptr) const {
    const std::vector<std::uint8_t> cb = outcome_codes(configs[0].paired.outcome);
    const std::vector<std::uint8_t> co = outcome_codes(configs[c].paired.outcome);
    std::vector<double> b, o, p;
    std::vector<std::uint64_t> in;
    std::vector<std::uint8_t> kb, ko;
    std::vector<std::uint32_t> ps;
    for (std::size_t i = 0; i < base.size() && i < other.size(); ++i) {
      if (!std::isfinite(base[i]) || !std::isfinite(other[i])) continue;
      ps.push_back(pairs.pass_of[i]);
      b.push_back(base[i]);
      o.push_back(other[i]);
      if (!pace.empty()) p.push_back(pace[i]);
      in.push_back(pairs.input[i]);
      kb.push_back(cb[i]);
      ko.push_back(co[i]);
    }
    return this_trace_speedup(b, o, in, kb, ko, 2000, p, info, ps);
  }
  // The this-trace speedup of configuration c's mean latency.
  Speedup latency_speedup(std::size_t c, const std::vector<double>& pace, TraceIntervalInfo* info = nullptr) const {
    return speedup(c, base_latency(), configs[c].paired.latency_us, pace, info);
  }
  // The widest relative half-width of the this-trace intervals so far, and whose.
  std::pair<double, std::size_t> widest() const {
    const std::vector<double> p = current_pace();
    std::pair<double, std::size_t> out{0, 0};
    for (std::size_t c = 1; c < result.rows.size(); ++c) {
      const Speedup s = latency_speedup(c, p);
      const double half = s.value > 0 ? std::max(s.high / s.value - 1, 1 - s.low / s.value) : HUGE_VAL;
      if (half >= out.first) out = {half, c};
    }
    return out;
  }
};

CompareMode checked_mode(const CompareConfig& config) {
  if (config.repeat < 1) throw bad_input("--repeat must be at least 1");
  const bool one_worker = config.base.replay.drive == Drive::closed_loop && config.base.replay.concurrency == 1;
  const CompareMode mode = config.mode.value_or(one_worker ? CompareMode::lockstep : CompareMode::sequential);
  if (mode == CompareMode::lockstep && config.base.replay.max_batch > 1)
    throw bad_input(fmt::format(
        "--max-batch {0}: lockstep serves one request at a time under every configuration, so nothing can batch "
        "(use --mode sequential --concurrency {0}, or sweep --max-batch)",
        config.base.replay.max_batch));
  if (mode == CompareMode::lockstep && !one_worker)
    throw bad_input(fmt::format(
        "--mode lockstep serves each request under every configuration in turn, one at a time: it cannot {} "
        "(use --mode sequential)",
        config.base.replay.drive == Drive::open_loop
            ? "release requests at their ts_ms (--open-loop)"
            : fmt::format("keep {} requests in flight (--concurrency)", config.base.replay.concurrency)));
  if (config.precision_pct && !(*config.precision_pct > 0 && *config.precision_pct < 100))
    throw bad_input(fmt::format("--precision {} is out of range (expected a percentage above 0 and below 100, e.g. 3)",
                                *config.precision_pct));
  if (config.precision_pct && mode != CompareMode::lockstep)
    throw bad_input("--precision repeats lockstep passes: it needs --mode lockstep (a closed loop with one worker)");
  if (config.pass_process && mode != CompareMode::lockstep)
    throw bad_input("--pass-process says where lockstep passes run: it needs --mode lockstep");
  if (!config.gates.empty() && mode != CompareMode::lockstep)
    throw bad_input(
        "--gate judges paired requests: it needs --mode lockstep (a closed loop with one worker); use 'inferprof "
        "diff' on saved runs of other modes");
  for (const GateSpec& g : config.gates)
    if (g.metric != "mean")
      throw bad_input(fmt::format(
          "--gate {}: compare gates on the mean per request (each request is paired across the configurations, "
          "which a percentile is not); write {}mean=..., or use 'inferprof diff' for percentiles and throughput",
          g.text, g.stage.empty() || g.stage == "*" ? "" : g.stage + (g.clock == "cpu" ? ".cpu." : ".")));
  return mode;
}

// Each configuration's row (its tiers resolved) and report folder; one named
// twice (an A/A check, none against none) gets "-2", "-3": two configurations
// never share a folder.
void make_rows(CompareRun& run) {
  for (const Configuration& config : run.configs) {
    CompareRow row;
    row.name = config.setup.name;
    const Profile& profile = config.setup.profile ? *config.setup.profile : run.config.base.profile;
    row.tiers = resolve_tiers(profile, config.setup.caches, run.config.overrides, run.config.redis_url, "");
    run.result.rows.push_back(row);
  }
  for (std::size_t c = 0; c < run.result.rows.size(); ++c) {
    const std::string base = folder_name(run.result.rows[c].name);
    const auto before = std::count_if(run.result.rows.begin(), run.result.rows.begin() + static_cast<std::ptrdiff_t>(c),
                                      [&](const CompareRow& r) { return folder_name(r.name) == base; });
    run.result.rows[c].folder = before == 0 ? base : fmt::format("{}-{}", base, before + 1);
  }
}

std::string op_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// A gate on a preprocessing op needs it in every configuration's profile: refused before any replay.
void check_gate_ops(const CompareRun& run) {
  for (const GateSpec& g : run.config.gates) {
    if (g.stage.find('.') == std::string::npos) continue;
    for (const Configuration& config : run.configs) {
      const Setup& setup = config.setup;
      const Profile& profile = setup.profile ? *setup.profile : run.config.base.profile;
      std::vector<std::string> names;
      for (const std::string& op : profile.preprocess_op_names())
        names.push_back("preprocess." + op);
      if (std::find(names.begin(), names.end(), g.stage) == names.end())
        throw bad_input(fmt::format("--gate {}: {} has no preprocessing op '{}' (its profile has {})", g.text,
                                    setup.name, g.stage, op_list(names)));
    }
  }
}

// One gate on one configuration and one stage ("total", a stage, or a preprocessing op).
CompareGate judge_gate(const CompareRun& run, std::size_t c, const GateSpec& spec, const std::string& stage,
                       const std::vector<double>& pace) {
  const bool cpu = spec.clock == "cpu";
  const std::vector<double>* base_series = run.configs[0].paired.named(stage, cpu);
  const std::vector<double>* other_series = run.configs[c].paired.named(stage, cpu);
  if (!base_series || !other_series)
    throw bad_input(fmt::format("--gate {}: {} has no preprocessing op '{}' (its profile has {})", spec.text,
                                run.result.rows[base_series ? c : 0].name, stage,
                                op_list(run.configs[base_series ? c : 0].paired.op_names)));
  const std::vector<double>& b = *base_series;
  const std::vector<double>& o = *other_series;
  CompareGate g;
  g.configuration = run.result.rows[c].name;
  g.gate = spec.text;
  g.stage = stage;
  g.clock = spec.clock;
  // The means over the pairs read in both (CPU time: the sampled requests).
  double sb = 0, so = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < b.size() && i < o.size(); ++i)
    if (std::isfinite(b[i]) && std::isfinite(o[i])) sb += b[i], so += o[i], ++n;
  g.change.base = n ? sb / static_cast<double>(n) : 0;
  g.change.now = n ? so / static_cast<double>(n) : 0;
  if (g.change.base > 0 && g.change.now > 0) {
    const Speedup s = run.speedup(c, b, o, cpu ? std::vector<double>{} : pace);
    g.change.now = g.change.base / s.value;
    g.change.interval = std::pair{g.change.base / s.high - g.change.base, g.change.base / s.low - g.change.base};
  }
  g.limit = gate_limit(spec, g.change.base);
  g.verdict = judge(g.change, g.limit);
  // Past the limit, but the interval reaches back inside it: more pairs would settle it.
  if (g.verdict == Verdict::noise) g.verdict = Verdict::unstable;
  return g;
}

// --gate: every gate on every configuration after the first ("*": every
// stage that took time, and the total), on the pairs so far.
std::vector<CompareGate> judge_gates(const CompareRun& run, const std::vector<double>& pace) {
  const CompareResult& result = run.result;
  std::vector<CompareGate> out;
  for (std::size_t c = 1; c < result.rows.size(); ++c)
    for (const GateSpec& spec : run.config.gates) {
      std::vector<std::string> stages;
      if (spec.stage == "*") {
        for (std::size_t s = 0; s < kStageCount; ++s)
          if (result.rows[0].last.stages[s].mean_us > 0 || result.rows[c].last.stages[s].mean_us > 0)
            stages.emplace_back(kStageNames[s]);
        stages.emplace_back("total");
      } else {
        stages.push_back(spec.stage);
      }
      for (const std::string& s : stages)
        out.push_back(judge_gate(run, c, spec, s, pace));
    }
  return out;
}
std::size_t undecided(const std::vector<CompareGate>& gates) {
  return static_cast<std::size_t>(
      std::count_if(gates.begin(), gates.end(), [](const CompareGate& g) { return g.verdict == Verdict::unstable; }));
}

bool adaptive(const CompareConfig& config) {
  return config.precision_pct || !config.gates.empty();
}

// Where the passes after the first run: --pass-process, else a process each
// when the passes go on until an interval is narrow enough.
PassProcess pass_process_of(const CompareConfig& config) {
  return config.pass_process.value_or(adaptive(config) ? PassProcess::fresh : PassProcess::same);
}

// Pass `rep`'s configurations: their own Redis namespaces, and the report
// folders when this pass writes the reports.
std::vector<detail::LockstepTarget> pass_targets(const CompareRun& run, int rep, bool reports) {
  std::vector<detail::LockstepTarget> targets;
  for (std::size_t c = 0; c < run.result.rows.size(); ++c)
    targets.push_back(detail::LockstepTarget{run.result.rows[c].tiers, run_namespace(c, rep),
                                             reports ? run.out_dir(c) : "", run.setup(c).model_path,
                                             run.setup(c).profile});
  return targets;
}

// Pass `rep`, kept; false when an interrupt stopped it before a request
// completed. In this process every pass writes its reports (each replaces
// the last: the passes are measured alike, and an interrupted pass leaves the
// reports of what it served); in processes of their own (`processes`), the
// passes after the first write none and the first pass's stay.
bool run_one_pass(CompareRun& run, const RunConfig& later, int rep, detail::PassProcesses* processes) {
  if (rep > 0 && processes) {
    std::optional<detail::PassFigures> figures = processes->run(rep);
    if (figures) run.keep(std::move(*figures));
    return figures.has_value();
  }
  detail::LockstepPass pass;
  try {
    pass = detail::run_lockstep_pass(rep == 0 ? run.config.base : later, pass_targets(run, rep, true));
  } catch (const Error&) {
    if (!lifecycle::interrupted()) throw;
    return false;  // interrupted before a request completed: the earlier repeats stand
  }
  // An interrupted pass covers the requests served under every configuration.
  run.keep(std::move(pass));
  return true;
}

// Adaptive passes: true when every interval is as narrow as --precision asks
// and every gate decided (`progress`: the widths so far, for the progress line).
bool narrow_enough(CompareRun& run, int passes, std::string& progress) {
  constexpr int kMinPrecisionPasses = 3;
  const CompareConfig& config = run.config;
  CompareResult& result = run.result;
  bool done = true;
  progress.clear();
  if (config.precision_pct) {
    const auto [half, c] = run.widest();
    result.widest_half_width = half;
    result.widest_config = result.rows[c].name;
    progress +=
        fmt::format(" · widest ±{:.1f}% ({}), target ±{:g}%", 100 * half, result.widest_config, *config.precision_pct);
    // Fewer than three passes cannot show what moves a whole pass
    // (this_trace_speedup's between-pass widening): no precision claimed yet.
    result.precision_reached = half * 100 <= *config.precision_pct && passes >= kMinPrecisionPasses;
    done = result.precision_reached;
  }
  if (!config.gates.empty()) {
    const std::size_t open = undecided(judge_gates(run, run.current_pace()));
    if (open > 0) progress += fmt::format(" · {} gate{} undecided", open, open == 1 ? "" : "s");
    done = done && open == 0;
  }
  return done;
}

// Lockstep passes: one, --repeat, or with --precision or --gate until every
// interval is narrow enough and every gate decided (at least --repeat, at
// most kMaxPasses, within --max-time).
void run_lockstep_passes(CompareRun& run, const RunConfig& later) {
  const CompareConfig& config = run.config;
  CompareResult& result = run.result;
  ReplayObserver* observer = config.base.output.observer.get();
  constexpr int kMaxPasses = 100;
  const bool adaptive_passes = adaptive(config);
  const int passes_max = adaptive_passes ? kMaxPasses : config.repeat;
  result.pass_process = pass_process_of(config);
  std::optional<detail::PassProcesses> processes;
  if (result.pass_process == PassProcess::fresh && passes_max > 1) processes.emplace(config.self, config.command_line);
  const auto started = std::chrono::steady_clock::now();
  int passes = 0;
  std::string progress;  // the widths so far, for the progress line
  for (int rep = 0; rep < passes_max && !lifecycle::interrupted(); ++rep) {
    if (observer)
      observer->context(fmt::format("lockstep over {} configurations{}{}", result.rows.size(),
                                    adaptive_passes     ? fmt::format(" · pass {}", rep + 1)
                                    : config.repeat > 1 ? fmt::format(" · repeat {}/{}", rep + 1, config.repeat)
                                                        : "",
                                    progress));
    if (!run_one_pass(run, later, rep, processes ? &*processes : nullptr)) break;
    ++passes;
    // Adaptive: more passes while an interval is wider than --precision asks,
    // or a gate's interval straddles its limit (more pairs settle it).
    if (adaptive_passes && !lifecycle::interrupted() && result.rows.size() > 1) {
      const bool done = narrow_enough(run, passes, progress);
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (passes >= config.repeat && (done || elapsed >= config.max_time_s)) break;
    }
  }
  result.repeat = std::max(passes, 1);
}

// Whole replays, interleaved: A B C A B C ..., so drift (thermal, other load)
// hits every configuration alike instead of biasing whichever ran last. An
// interrupt ends the loop: the replay it cut short is dropped (with its
// reports), the completed ones are kept.
void run_sequential(CompareRun& run, const RunConfig& later) {
  const CompareConfig& config = run.config;
  ReplayObserver* observer = config.base.output.observer.get();
  for (int rep = 0; rep < config.repeat && !lifecycle::interrupted(); ++rep) {
    for (std::size_t c = 0; c < run.result.rows.size() && !lifecycle::interrupted(); ++c) {
      CompareRow& row = run.result.rows[c];
      RunConfig replay = run.setup_config(c, rep == 0 && c == 0 ? config.base : later);
      replay.caches.tiers = row.tiers;
      replay.caches.key_namespace = run_namespace(c, rep);
      replay.output.out_dir = rep == config.repeat - 1 ? run.out_dir(c) : "";
      if (observer)
        observer->context(fmt::format("configuration {}/{} ({}){}", c + 1, run.result.rows.size(), row.name,
                                      config.repeat > 1 ? fmt::format(" · repeat {}/{}", rep + 1, config.repeat) : ""));
      RunOutcome outcome;
      bool cut_short = false;
      try {
        outcome = run_replay(replay);
        cut_short = outcome.summary.info.interrupted();
      } catch (const Error&) {
        if (!lifecycle::interrupted()) throw;
        cut_short = true;  // before a request completed
      }
      if (cut_short) {
        if (!replay.output.out_dir.empty()) output::remove_created(replay.output.out_dir);
        break;
      }
      run.keep(c, std::move(outcome));
    }
  }
}

// After an interrupt, only configurations with a completed replay stay; the others are named.
void drop_unfinished(CompareRun& run) {
  CompareResult& result = run.result;
  result.interrupted_by = lifecycle::interrupt_name();
  std::vector<std::size_t> kept;
  for (std::size_t c = 0; c < result.rows.size(); ++c) {
    if (!result.rows[c].means_us.empty()) {
      kept.push_back(c);
      continue;
    }
    result.not_run.push_back(result.rows[c].name);
    // A lockstep pass creates every configuration's folder before its
    // first request: one cut short before then leaves them empty.
    if (!run.config.out_dir.empty()) output::remove_created(run.out_dir(c));
  }
  keep_only(result.rows, kept), keep_only(run.configs, kept);
  if (result.rows.empty())
    throw Error(
        static_cast<ExitCode>(lifecycle::interrupted_exit_code()),
        fmt::format("interrupted by {} before any configuration completed: nothing to report", result.interrupted_by));
  std::string partial;
  for (const CompareRow& row : result.rows)
    if (static_cast<int>(row.means_us.size()) < run.config.repeat)
      partial +=
          fmt::format("{}{} ({} of {})", partial.empty() ? "" : ", ", row.name, row.means_us.size(), run.config.repeat);
  std::string not_run;
  for (const std::string& name : result.not_run)
    not_run += (not_run.empty() ? "" : ", ") + name;
  result.warnings.push_back(fmt::format("interrupted by {}: the figures cover the replays that completed{}{}",
                                        result.interrupted_by, partial.empty() ? "" : "; fewer repeats for " + partial,
                                        not_run.empty() ? "" : "; not run: " + not_run));
}

// The machine's pace over the whole compare (CompareRun::current_pace), for the speedups.
void measure_pace(CompareRun& run) {
  CompareResult& result = run.result;
  run.pace = run.current_pace();
  if (run.pace.empty()) return;
  result.paced = true;
  result.pace_window = std::min(kPaceWindow, run.base_latency().size());
  const auto [least, most] = std::minmax_element(run.pace.begin(), run.pace.end());
  result.pace_min = *least;
  result.pace_max = *most;
}

// Each configuration's figures and speedups against the first, and the warnings they call for.
void compute_rows(CompareRun& run) {
  CompareResult& result = run.result;
  const bool lockstep = run.mode == CompareMode::lockstep;
  const CompareRow& base = result.rows.front();
  for (std::size_t c = 0; c < result.rows.size(); ++c) {
    CompareRow& row = result.rows[c];
    row.mean_us = mean_of(row.means_us);
    row.wall_s = mean_of(row.walls_s);
    row.p50_us = row.last.total.p50_us;
    row.p99_us = row.last.total.p99_us;
    row.rps = row.wall_s > 0 ? static_cast<double>(row.last.requests) / row.wall_s : 0;
    const detail::RequestSeries& paired = run.configs[c].paired;
    row.outliers_dominate = outliers_dominate(run.configs[c].samples);
    row.outcome_costs = lockstep ? outcome_costs(paired.latency_us, paired.outcome) : outcome_costs(row.last.outcomes);
    result.verify_mismatches += row.last.verify.mismatches;
    if (c == 0) {
      row.mean_speedup = row.wall_speedup = row.traffic_speedup = row.cpu_speedup = row.rerun_speedup = Speedup{};
      continue;
    }
    // Mean latency. Lockstep: paired over (repeat, request), the same indices
    // for both; the verdict reads the this-trace interval. Sequential:
    // bootstrap over the pooled requests of all repeats.
    if (lockstep) {
      row.mean_speedup = run.latency_speedup(c, run.pace, &row.interval_facts);
      row.rerun_speedup = rerun_interval(row.mean_speedup, run.config.precision_pct.value_or(0));
      row.traffic_speedup = paired_bootstrap_speedup(run.base_latency(), paired.latency_us, 2000, run.pace);
      row.cpu_speedup = run.speedup(c, run.configs[0].paired.cpu_us, paired.cpu_us, {});
    } else {
      row.mean_speedup = row.traffic_speedup = bootstrap_speedup(run.configs[0].samples, run.configs[c].samples);
      if (row.last.total.cpu && base.last.total.cpu && row.last.total.cpu_mean_us > 0) {
        row.cpu_speedup.value = base.last.total.cpu_mean_us / row.last.total.cpu_mean_us;
        row.cpu_speedup.low = row.cpu_speedup.high = row.cpu_speedup.value;
      }
    }
    if (result.paced) row.unpaced_speedup = mean_of(run.base_latency()) / std::max(mean_of(paired.latency_us), 1e-9);
    // Replay time: over repeats when there are enough of them, else a point value.
    if (result.repeat >= 3) {
      row.wall_speedup = bootstrap_speedup(base.walls_s, row.walls_s);
    } else {
      row.wall_speedup.value = row.wall_s > 0 ? base.wall_s / row.wall_s : 1;
      row.wall_speedup.low = row.wall_speedup.high = row.wall_speedup.value;
    }
    if (row.mean_speedup.noise)
      result.warnings.push_back(fmt::format(
          "{} vs {}: the 95% interval of the speedup{} [{:.2f}, {:.2f}] includes 1.0 — no measurable difference",
          row.name, base.name, lockstep ? " on this trace" : "", row.mean_speedup.low, row.mean_speedup.high));
  }
  // row.outliers_dominate: the renderers' notes warn of it (notes_of).
}

void apply_gates(CompareRun& run) {
  CompareResult& result = run.result;
  result.gates = judge_gates(run, run.pace);
  for (const CompareGate& g : result.gates) {
    if (g.verdict == Verdict::regression) ++result.regressions;
    if (g.verdict == Verdict::unstable) ++result.unstable;
  }
}

void write_compare_files(CompareRun& run) {
  const CompareConfig& config = run.config;
  CompareResult& result = run.result;
  if (config.out_dir.empty()) return;
  if (config.flamegraph_diff) {
    for (std::size_t c = 1; c < result.rows.size(); ++c) {
      std::string name = fmt::format("diff-{}-vs-{}.svg", result.rows[c].folder, result.rows[0].folder);
      write_file_atomic(
          config.out_dir, name,
          render_diff_flamegraph_svg(
              run.configs[0].folded, result.rows[0].last.requests, run.configs[c].folded, result.rows[c].last.requests,
              fmt::format("inferprof compare · {} vs {}", result.rows[c].name, result.rows[0].name)));
      result.files.push_back((fs::path(config.out_dir) / name).string());
    }
  }
  write_file_atomic(config.out_dir, "compare.csv", render_compare_csv(result));
  write_file_atomic(config.out_dir, "compare.json", render_compare_json(result));
  write_file_atomic(config.out_dir, "report.html", render_compare_html(result));
  for (const char* f : {"compare.csv", "compare.json", "report.html"})
    result.files.push_back((fs::path(config.out_dir) / f).string());
}

}  // namespace

void run_compare_pass(const CompareConfig& config) {
  const CompareConfig::PassOnly& only = *config.pass_only;
  detail::join_as_pass_process(only.index);
  std::string varies;
  std::vector<Setup> setups = compare_setups(config, varies);
  CompareRun run(config, checked_mode(config), std::move(setups));
  if (run.mode != CompareMode::lockstep) throw bad_input("a pass process runs a lockstep pass: --mode lockstep");
  make_rows(run);
  // Never the first pass: no dumps, no reports.
  detail::LockstepPass pass =
      detail::run_lockstep_pass(detail::without_dumps(config.base), pass_targets(run, only.index, false));
  detail::PassFigures figures;
  figures.requests = pass.requests;
  figures.pid = ::getpid();
  figures.input = std::move(pass.input);
  figures.series = std::move(pass.series);
  for (const RunOutcome& o : pass.outcomes) {
    figures.mean_us.push_back(o.summary.total.mean_us);
    figures.wall_s.push_back(o.summary.info.wall_s);
  }
  const fs::path file(only.file);
  detail::write_pass_file(file.parent_path().string(), file.filename().string(), figures);
}

CompareResult run_compare(const CompareConfig& config) {
  std::string varies;
  std::vector<Setup> setups = compare_setups(config, varies);
  CompareRun run(config, checked_mode(config), std::move(setups));
  run.result.varies = varies;
  detail::check_outputs(config.base.output, config.out_dir);
  if (!config.out_dir.empty()) output::claim_dir(config.out_dir);
  detail::check_dump_dirs(config.base.output);
  // The tensors do not depend on the caches: the first pass (or replay) dumps them, once.
  const RunConfig later = detail::without_dumps(config.base);
  CompareResult& result = run.result;
  result.repeat = config.repeat;
  result.mode = run.mode;
  result.precision_pct = config.precision_pct;
  make_rows(run);
  check_gate_ops(run);
  // Each configuration's folder, claimed before any work: a name from a model or profile stays inside
  // --out, and a link or file already at that name is refused.
  if (!config.out_dir.empty())
    for (const CompareRow& row : run.result.rows)
      output::claim_child_dir(config.out_dir, row.folder);

  // A failed replay leaves no report behind, also none of the configurations already done:
  // what this process created in their folders goes (output::remove_created), nothing else.
  struct PartialReports {
    const CompareRun& run;
    bool keep = false;
    ~PartialReports() {
      if (keep || run.config.out_dir.empty()) return;
      for (std::size_t c = 0; c < run.result.rows.size(); ++c)
        output::remove_created(run.out_dir(c));
    }
  } partial{run};

  if (run.mode == CompareMode::lockstep)
    run_lockstep_passes(run, later);
  else
    run_sequential(run, later);
  if (ReplayObserver* observer = config.base.output.observer.get()) observer->context("");
  if (lifecycle::interrupted()) drop_unfinished(run);

  measure_pace(run);
  compute_rows(run);
  apply_gates(run);
  result.show_traffic = config.intervals == CompareIntervals::both;
  if (run.mode == CompareMode::lockstep) {
    result.paired = run.base_latency().size();
    describe_lockstep_intervals(result);
  } else {
    result.interval = fmt::format("bootstrap over pooled requests of {} repeat{} (traffic like this trace: no pairing)",
                                  config.repeat, config.repeat == 1 ? "" : "s");
  }
  if (run.mode == CompareMode::sequential && config.repeat < 3)
    result.warnings.push_back(
        "one replay per configuration: the intervals cover request-to-request variation only, not drift between "
        "replays (other load, thermal); use --repeat 5 to interleave configurations and bound it");
  write_compare_files(run);
  partial.keep = true;
  return std::move(run.result);
}

}  // namespace inferprof
