#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/atomic_file.hpp"
#include "base/output_owner.hpp"
#include "base/read_file.hpp"
#include "base/text.hpp"
#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "inferprof/error.hpp"
#include "inferprof/report.hpp"
#include "inferprof/simulate.hpp"
#include "inferprof/trace.hpp"

namespace inferprof::cli {

namespace {

struct SimulateArgs {
  std::string trace, costs, out, csv_columns, value_bytes, policies, sizes, budget;
  report::Format format = report::Format::table;
  std::vector<std::string> tiers, caches, mrc;
  std::uint64_t warmup = 0;
  int mrc_points = 30;
  double sample = 1.0;
  bool sample_given = false;  // unset: the policy grid picks its rate
  unsigned threads = 0;
};

SimulateConfig make_config(const SimulateArgs& a) {
  SimulateConfig c;
  TraceReader::check_regular(a.trace);  // a FIFO would be waited on
  c.trace_path = a.trace;
  if (!a.csv_columns.empty()) c.csv = parse_csv_columns(a.csv_columns);
  // A later --tier for the same tier replaces the earlier one, as in `run`.
  for (TierSpec& t : parse_tier_options(a.tiers)) {
    auto same = std::find_if(c.tiers.begin(), c.tiers.end(), [&](const TierSpec& o) { return o.tier == t.tier; });
    if (same != c.tiers.end())
      *same = std::move(t);
    else
      c.tiers.push_back(std::move(t));
  }
  for (const auto& conf : a.caches) {
    if (conf == "none") {
      // An empty configuration, so that `--caches none` alone means no cached
      // configuration rather than the default (all tiers); the no-cache
      // baseline is always predicted.
      c.configurations.emplace_back();
      continue;
    }
    auto tiers = report::split(conf, ',');
    for (const auto& t : tiers)
      if (!parse_enum<CacheLevel>(t))
        throw bad_input(fmt::format("--caches {}: expected tiers l1, l2, l3 joined by commas, or none", conf));
    c.configurations.push_back(tiers);
  }
  c.costs_path = a.costs;
  if (!c.costs_path.empty()) {
    if (std::filesystem::is_directory(report::path_status(a.costs, "--costs " + a.costs)))
      c.costs_path = (std::filesystem::path(c.costs_path) / "summary.json").string();
    // A FIFO would be waited on for ever: a run's summary.json is a file.
    const std::filesystem::file_status st = report::path_status(c.costs_path, "--costs " + c.costs_path);
    if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
      throw bad_input(fmt::format("--costs {}: not a regular file (expected a run's summary.json or its --out folder)",
                                  c.costs_path));
  }
  c.warmup = a.warmup;
  if (!a.value_bytes.empty()) {
    auto b = parse_byte_size(a.value_bytes);
    if (!b) {
      std::uint64_t v = 0;
      auto [p, ec] = std::from_chars(a.value_bytes.data(), a.value_bytes.data() + a.value_bytes.size(), v);
      if (ec != std::errc() || p != a.value_bytes.data() + a.value_bytes.size() || v == 0)
        throw bad_input(fmt::format("--value-bytes {}: expected a positive size, e.g. 4096 or 4KB", a.value_bytes));
      b = v;
    }
    c.value_bytes = *b;
  }
  for (const auto& m : a.mrc)
    c.mrc.push_back(parse_mrc_spec(m, a.mrc_points));
  if (!a.policies.empty() || !a.sizes.empty()) {
    if (a.policies.empty() || a.sizes.empty())
      throw bad_input("--policies and --sizes go together, e.g. --policies lru,s3fifo --sizes 1k,10k");
    PolicyGridSpec g;
    g.policies = parse_policy_list(a.policies, "--policies");
    g.sizes = parse_size_list(a.sizes, "--sizes");
    if (!a.budget.empty()) g.budget = parse_grid_size(a.budget, "--budget");
    c.grid = std::move(g);
  } else if (!a.budget.empty()) {
    throw bad_input("--budget: needs --policies and --sizes");
  }
  if (a.sample_given) c.sample_rate = a.sample;
  c.threads = a.threads;
  return c;
}

}  // namespace

Runner add_simulate_command(CLI::App& app) {
  auto a = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Cache what-if without running the model: stream a trace through the tiers' own policy code; hit ratios, "
      "miss-ratio curves, and (with --costs) predicted latency and speedup");
  cmd->add_option("--trace", a->trace,
                  "The trace: JSON lines, .iptrace (inferprof convert), or a CSV with timestamp,key[,size] columns")
      ->required();
  cmd->add_option("--tier", a->tiers,
                  "Tier policy and size, as for run: l1=lru:10000, l2=lfu:1000000, l3=ttl:5000:10m (repeatable). "
                  "TTLs run on the trace's ts_ms (a trace without timestamps never expires anything)");
  cmd->add_option("--caches", a->caches,
                  "A configuration to simulate, e.g. l1 or l1,l2 (repeatable; default: all --tier tiers together)");
  cmd->add_option("--costs", a->costs,
                  "A run's summary.json (or its folder): measured stage costs for predicted mean/p99 latency and "
                  "speedup; its requests.csv and trace.json (each tier's lookup and insert costs) are read when next "
                  "to it");
  cmd->add_option("--warmup-requests", a->warmup, "The first N requests only fill the caches (not counted)")
      ->check(whole_at_least(0, a->warmup))
      ->capture_default_str();
  cmd->add_option("--value-bytes", a->value_bytes,
                  "Entry size for byte-limited tiers when the trace has none (default: the --costs run's mean)");
  cmd->add_option("--csv-columns", a->csv_columns,
                  "CSV column names, e.g. ts=time,key=obj_id,size=bytes (default ts=timestamp,key=key,size=size)");
  cmd->add_option("--mrc", a->mrc,
                  "Miss-ratio curve of one tier alone: l1=lru:100..1000000 (log-spaced) or l2=lfu:100,1000,5000 "
                  "[:TTL] (repeatable); LRU in one pass, others one simulation per capacity in parallel");
  cmd->add_option("--mrc-points", a->mrc_points, "Capacities in a MIN..MAX range")
      ->check(whole_at_least(2, a->mrc_points))
      ->capture_default_str();
  CLI::Option* sample = cmd->add_option(
      "--sample", a->sample,
      "SHARDS spatial sampling rate for one-pass LRU curves and --policies, e.g. 0.01; 1 = exact (default: curves "
      "exact, --policies sampled automatically above 1,000,000 distinct keys)");
  cmd->add_option("--policies", a->policies,
                  "Policies to compare, e.g. lru,s3fifo,sieve,arc,wtinylfu or s3fifo(small=0.2); each at every "
                  "--sizes size, as L1 alone in front of compute, with a recommendation");
  cmd->add_option("--sizes", a->sizes, "Sizes for --policies: entries (1k,5k,10k,25k) or bytes (64MB,1GB)");
  cmd->add_option("--budget", a->budget,
                  "The largest size the recommendation may pick, e.g. 10k or 64MB (default: the largest --sizes)");
  cmd->add_option("--curve-threads", a->threads,
                  "Threads for per-capacity miss-ratio curves and --policies (0 = one per core)")
      ->check(whole_at_least(0, a->threads))
      ->capture_default_str();
  add_format_option<SimulateResult>(cmd, a->format);
  cmd->add_option("--out", a->out,
                  "Write simulate.json, simulate.csv, report.html (and mrc.csv, mrc.svg) to this folder");
  return [a, sample] {
    a->sample_given = sample->count() > 0;
    SimulateConfig config = make_config(*a);
    if (!a->out.empty()) output::claim_dir(a->out);
    SimulateResult r = run_simulate(config);
    std::fputs(report::render(a->format, r, "a simulation").c_str(), stdout);
    if (!a->out.empty()) {
      std::vector<std::pair<std::string, std::string>> files = {{"simulate.json", render_simulate_json(r)},
                                                                {"simulate.csv", render_simulate_csv(r)},
                                                                {"report.html", render_simulate_html(r)}};
      if (!r.mrc.empty()) {
        files.emplace_back("mrc.csv", render_mrc_csv(r));
        files.emplace_back("mrc.svg", render_mrc_svg(r));
      }
      if (r.grid) files.emplace_back("policies.csv", render_policies_csv(r));
      // A reused --out folder must not pair an earlier run's curve or grid with this simulate.json.
      for (const auto& [stale, kept] : {std::pair{"mrc.csv", !r.mrc.empty()}, std::pair{"mrc.svg", !r.mrc.empty()},
                                        std::pair{"policies.csv", r.grid.has_value()}}) {
        std::error_code ec;
        if (!kept) std::filesystem::remove(std::filesystem::path(a->out) / stale, ec);
        if (ec)
          throw runtime_failure(
              fmt::format("{}/{}: cannot remove the previous run's file: {}", a->out, stale, ec.message()));
      }
      std::string names;
      for (const auto& [name, content] : files) {
        write_file_atomic(a->out, name, content);
        names += " " + name;
      }
      std::fprintf(a->format == report::Format::table ? stdout : stderr, "\nreports written to %s/:%s\n",
                   a->out.c_str(), names.c_str());
    }
    return 0;
  };
}

Runner add_convert_command(CLI::App& app) {
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto cols = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "convert", "Convert a trace (JSON lines or CSV) to the compact binary .iptrace form that simulate reads fastest");
  cmd->add_option("trace", *in, "The trace to convert")->required();
  cmd->add_option("-o,--output", *out, "Output file, e.g. requests.iptrace")->required();
  cmd->add_option("--csv-columns", *cols, "CSV column names, e.g. ts=time,key=obj_id,size=bytes");
  return [in, out, cols] {
    CsvColumns csv = cols->empty() ? CsvColumns{} : parse_csv_columns(*cols);
    TraceReader::check_regular(*in);  // a FIFO would be waited on
    ConvertStats s = convert_trace(*in, *out, csv);
    std::fprintf(stdout, "wrote %s: %s requests, %s model updates from %s (%s), %s bytes\n", out->c_str(),
                 fmt::format("{:L}", s.requests).c_str(), fmt::format("{:L}", s.model_updates).c_str(), in->c_str(),
                 s.format.c_str(), fmt::format("{:L}", s.bytes).c_str());
    return 0;
  };
}

}  // namespace inferprof::cli
