// A run's measured costs, read back from its summary.json (and requests.csv
// when it lies next to it; report/saved_run.hpp reads both), as the cost of
// serving a request by what served it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "inferprof/error.hpp"
#include "inferprof/simulate.hpp"
#include "report/saved_run.hpp"

namespace inferprof {

namespace {

constexpr std::size_t kMaxSamples = 200000;  // per outcome: bounded memory on long runs

// Reservoir sampling (deterministic), so a long requests.csv keeps a uniform sample.
struct Reservoir {
  std::vector<double>* out;
  std::uint64_t seen = 0;
  std::mt19937_64 rng{0x5eed};
  void add(double v) {
    ++seen;
    if (out->size() < kMaxSamples) {
      out->push_back(v);
      return;
    }
    const std::uint64_t j = rng() % seen;
    if (j < kMaxSamples) (*out)[j] = v;
  }
};

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v)
    s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

void read_requests(const std::string& path, SimCosts& c) {
  Reservoir miss{&c.miss_us}, l3{&c.l3_hit_us}, l1{&c.l1_hit_us}, l2{&c.l2_hit_us}, derived_l3{nullptr};
  std::vector<double> derived;
  derived_l3.out = &derived;
  constexpr auto kInput = static_cast<std::size_t>(Stage::input), kPre = static_cast<std::size_t>(Stage::preprocess);
  report::read_requests_csv(path, {"input_us", "preprocess_us", "cache"}, [&](const report::RequestRow& r) {
    if (!r.ok) return;
    const double t = r.us[kStageCount];
    ++c.rows;
    if (r.cache == "none" || r.cache == "miss") {
      miss.add(t);
      derived_l3.add(t - r.us[kInput] - r.us[kPre]);
    } else if (r.cache == "l3_hit") {
      l3.add(t);
    } else if (r.cache == "l1_hit") {
      l1.add(t);
    } else if (r.cache == "l2_hit") {
      l2.add(t);
    }
  });
  // A run without L3 hits still says what an L3 hit costs: its misses minus
  // the input and preprocessing they spent.
  if (c.l3_hit_us.empty()) c.l3_hit_us = std::move(derived);
  c.per_request = !c.miss_us.empty();
}

}  // namespace

SimCosts load_sim_costs(const std::string& path) {
  SimCosts c;
  c.source = path;
  report::SavedRun run;
  try {
    run = report::read_saved_run(path, report::SummaryCheck::partial);
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("--costs: {}", e.what()));
  }
  if (!run.has_stage[kStageCount]) throw bad_input(fmt::format("--costs '{}': 'total.mean_us' is missing", path));
  const double input_us = run.stages[static_cast<std::size_t>(Stage::input)].mean_us;
  const double pre_us = run.stages[static_cast<std::size_t>(Stage::preprocess)].mean_us;
  const double total_us = run.stages[kStageCount].mean_us;

  std::optional<double> served[4];  // miss, l3, l1, l2
  for (const auto& o : run.served_by) {
    if (o.mean_us < 0 || o.requests <= 0) continue;
    if (o.outcome == "miss") served[0] = o.mean_us;
    if (o.outcome == "l3_hit") served[1] = o.mean_us;
    if (o.outcome == "l1_hit") served[2] = o.mean_us;
    if (o.outcome == "l2_hit") served[3] = o.mean_us;
  }
  for (const auto& t : run.caches) {
    if (t.entries <= 0 || t.bytes <= 0) continue;
    const auto mean = static_cast<std::uint64_t>(t.bytes / t.entries + 0.5);
    if (t.tier == "l3")
      c.preprocessed_bytes = mean;
    else if (c.result_bytes == 0)
      c.result_bytes = mean;
  }

  if (!run.csv_path.empty()) read_requests(run.csv_path, c);

  const bool had_caches = served[0] || served[1] || served[2] || served[3];
  c.miss_mean_us = c.per_request ? mean_of(c.miss_us) : served[0] ? *served[0] : total_us;
  if (had_caches && !served[0] && !c.per_request)
    throw bad_input(
        fmt::format("--costs '{}': the run had no cache misses, so it does not say what computing a "
                    "request costs; use a run without caches",
                    path));
  c.l3_hit_mean_us = !c.l3_hit_us.empty() ? mean_of(c.l3_hit_us)
                     : served[1]          ? *served[1]
                                          : std::max(0.0, c.miss_mean_us - input_us - pre_us);
  auto hit_cost = [&](std::vector<double>& samples, const std::optional<double>& s, const char* tier) {
    if (!samples.empty()) return mean_of(samples);
    if (s) return *s;
    c.notes.push_back(
        fmt::format("{} hit cost not measured by the costs run (no {} hits): taken as 0 µs; give "
                    "--costs a run with --cache {} to measure it",
                    tier, tier, tier));
    return 0.0;
  };
  c.l1_hit_mean_us = hit_cost(c.l1_hit_us, served[2], "l1");
  c.l2_hit_mean_us = hit_cost(c.l2_hit_us, served[3], "l2");
  if (!c.per_request)
    c.notes.push_back(fmt::format("no requests.csv next to {}: predicted p99 needs per-request costs", path));
  return c;
}

}  // namespace inferprof
