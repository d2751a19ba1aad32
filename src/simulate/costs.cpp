// A run's measured costs, read back from its summary.json (and requests.csv
// when it lies next to it; report/saved_run.hpp reads both), as the cost of
// serving a request by what served it without its cache work, and from its
// trace.json the cost of each tier's lookups and inserts, which a prediction
// adds back for the tiers of each configuration.
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "cache/hierarchy.hpp"
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
  Reservoir miss{&c.miss_us}, l3{&c.l3_hit_us}, hit{&c.hit_us}, derived_l3{nullptr};
  std::vector<double> derived;
  derived_l3.out = &derived;
  constexpr auto kInput = static_cast<std::size_t>(Stage::input), kPre = static_cast<std::size_t>(Stage::preprocess),
                 kCache = static_cast<std::size_t>(Stage::cache);
  report::read_requests_csv(path, {"input_us", "preprocess_us", "cache"}, [&](const report::RequestRow& r) {
    if (!r.ok) return;
    // The run's own cache work is left out: each configuration adds its own.
    const double t = r.us[kStageCount] - r.us[kCache];
    ++c.rows;
    // "none": the run had no cache, so every request took the miss path.
    const std::optional<CacheOutcome> served = r.cache == CacheOutcome::none ? CacheOutcome::miss : r.cache;
    if (served == CacheOutcome::miss) {
      miss.add(t);
      derived_l3.add(t - r.us[kInput] - r.us[kPre]);
    } else if (served == CacheOutcome::l3_hit) {
      l3.add(t);
    } else if (served) {
      hit.add(t);
    }
  });
  // A run without L3 hits still says what an L3 hit costs: its misses minus
  // the input and preprocessing they spent.
  if (c.l3_hit_us.empty()) c.l3_hit_us = std::move(derived);
  c.per_request = !c.miss_us.empty();
}

// Sums and counts of one kind of tier span.
struct Acc {
  double sum = 0;
  std::uint64_t n = 0;
  void add(double v) {
    sum += v;
    ++n;
  }
  std::optional<double> mean() const { return n ? std::optional<double>(sum / static_cast<double>(n)) : std::nullopt; }
};

// The l1/l2/l3 spans of trace.json, by what each did. A request's events
// follow its "request" event; Pipeline::serve_traced opens a tier's span
// first for its lookup and again for each insert, and the first result tier
// of a miss encodes the output inside its insert span (a store).
void read_tier_spans(const std::string& path, SimCosts& c) {
  simdjson::padded_string text;
  if (auto err = simdjson::padded_string::load(path).get(text))
    throw bad_input(fmt::format("{}: cannot read ({})", path, simdjson::error_message(err)));
  simdjson::ondemand::parser parser;
  Acc hit[3], miss[3], insert[3], store[3];
  std::optional<CacheOutcome> outcome;
  bool in_cache_stage = false;  // the spans that follow are inside the request's cache stage
  bool seen[3] = {false, false, false};
  int last_tier = -1;
  std::uint64_t requests = 0;
  auto fail = [&](simdjson::error_code err) {
    return bad_input(fmt::format("{}: not an inferprof trace.json ({})", path, simdjson::error_message(err)));
  };
  try {
    simdjson::ondemand::document doc = parser.iterate(text);
    for (auto event : doc.find_field_unordered("traceEvents").get_array()) {
      simdjson::ondemand::object o = event.get_object();
      std::string_view name, cat;
      if (o.find_field_unordered("name").get(name) || o.find_field_unordered("cat").get(cat)) continue;  // metadata
      if (cat == "request") {
        std::string_view served;
        if (o.find_field_unordered("args").find_field_unordered("cache").get(served)) served = "";
        outcome = parse_outcome(served);
        std::fill(std::begin(seen), std::end(seen), false);
        last_tier = -1;
        ++requests;
        continue;
      }
      if (cat == "stage") {
        in_cache_stage = name == "cache";
        continue;
      }
      const std::optional<CacheLevel> level = parse_enum<CacheLevel>(name);
      if (!level || !in_cache_stage) continue;
      const auto t = static_cast<int>(*level);
      double dur = 0;
      if (auto err = o.find_field_unordered("dur").get(dur)) throw fail(err);
      const bool miss_path = outcome == CacheOutcome::miss || outcome == CacheOutcome::l3_hit;
      if (!seen[t]) {
        seen[t] = true;
        const bool found = outcome == static_cast<CacheOutcome>(t);  // l1_hit, l2_hit, l3_hit in level order
        (found ? hit : miss)[t].add(dur);
      } else if (t < 2 && miss_path && (t == 0 || last_tier != 0)) {
        store[t].add(dur);  // the first result tier after compute: encode + put
      } else {
        insert[t].add(dur);
      }
      last_tier = t;
    }
  } catch (const simdjson::simdjson_error& e) {
    throw fail(e.error());
  }
  c.spans_source = path;
  c.span_requests = requests;
  for (int t = 0; t < 3; ++t) {
    SimTierCosts& k = c.tiers[t];
    k.lookup_hit_us = hit[t].mean();
    k.lookup_miss_us = miss[t].mean();
    k.insert_us = insert[t].mean();
    k.store_us = store[t].mean();
    k.lookups = hit[t].n + miss[t].n;
    k.inserts = insert[t].n;
    k.stores = store[t].n;
  }
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
    constexpr int kSlot[kCacheOutcomes] = {2, 3, 1, 0};  // served[] index of l1_hit, l2_hit, l3_hit, miss
    if (o.outcome != CacheOutcome::none) served[kSlot[static_cast<int>(o.outcome)]] = o.mean_us;
  }
  bool had[3] = {false, false, false};  // the run's tiers
  for (const auto& t : run.caches) {
    had[static_cast<int>(t.tier)] = true;
    if (t.entries <= 0 || t.bytes <= 0) continue;
    const auto mean = static_cast<std::uint64_t>(t.bytes / t.entries + 0.5);
    if (t.tier == CacheLevel::l3)
      c.preprocessed_bytes = mean;
    else if (c.result_bytes == 0)
      c.result_bytes = mean;
  }

  const std::filesystem::path trace_json = std::filesystem::path(run.summary_path).parent_path() / "trace.json";
  std::error_code ec;
  if (std::filesystem::is_regular_file(trace_json, ec)) read_tier_spans(trace_json.string(), c);
  if (!run.csv_path.empty()) read_requests(run.csv_path, c);

  const bool had_caches = served[0] || served[1] || served[2] || served[3];
  if (had_caches && !served[0] && !c.per_request)
    throw bad_input(
        fmt::format("--costs '{}': the run had no cache misses, so it does not say what computing a "
                    "request costs; use a run without caches",
                    path));
  // Without requests.csv the per-outcome means of summary.json hold the
  // run's cache work: take out what its spans say that work cost.
  const SimCacheCosts own = cache_costs(c, had[0], had[1], had[2]);
  const double overhead_us = run.stages[static_cast<std::size_t>(Stage::overhead)].mean_us;
  c.miss_mean_us = c.per_request ? mean_of(c.miss_us) : served[0] ? *served[0] - own.total(3) : total_us;
  c.l3_hit_mean_us = !c.l3_hit_us.empty() ? mean_of(c.l3_hit_us)
                     : served[1]          ? *served[1] - own.total(2)
                                          : std::max(0.0, c.miss_mean_us - input_us - pre_us);
  if (!c.hit_us.empty())
    c.hit_mean_us = mean_of(c.hit_us);
  else if (!c.per_request && (served[2] || served[3]))
    c.hit_mean_us = served[2] ? *served[2] - own.total(0) : *served[3] - own.total(1);
  else
    c.hit_mean_us = overhead_us;  // a hit outside its cache work is the request's bookkeeping
  c.hit_mean_us = std::max(0.0, c.hit_mean_us);
  if (c.spans_source.empty())
    c.notes.push_back(
        fmt::format("no trace.json next to {}: the tiers' lookup and insert costs are not known and are taken as "
                    "0 µs; give --costs the --out folder of a run with the tiers",
                    path));
  if (!c.per_request)
    c.notes.push_back(fmt::format("no requests.csv next to {}: predicted p99 needs per-request costs", path));
  return c;
}

SimCacheCosts cache_costs(const SimCosts& c, bool l1, bool l2, bool l3) {
  SimCacheCosts out;
  auto assume = [&](int t, const char* what, const std::string& how) {
    out.assumed.push_back(fmt::format("{} {}: {}", enum_name(static_cast<CacheLevel>(t)), what, how));
  };
  // An unmeasured cost falls back to the nearest measured one, else 0.
  auto lookup = [&](int t, bool found) {
    const SimTierCosts& k = c.tiers[t];
    const auto& want = found ? k.lookup_hit_us : k.lookup_miss_us;
    const auto& other = found ? k.lookup_miss_us : k.lookup_hit_us;
    const char* what = found ? "lookup (hit)" : "lookup (miss)";
    if (want) return *want;
    if (other) {
      assume(t, what, found ? "not measured, taken as its miss's" : "not measured, taken as its hit's");
      return *other;
    }
    assume(t, what, "not measured, taken as 0 µs");
    return 0.0;
  };
  auto insert = [&](int t) {
    if (c.tiers[t].insert_us) return *c.tiers[t].insert_us;
    assume(t, "insert", "not measured, taken as 0 µs");
    return 0.0;
  };
  // Encoding the output and putting it into the first result tier `t`.
  auto store = [&](int t) {
    const SimTierCosts& k = c.tiers[t];
    if (k.store_us) return *k.store_us;
    const SimTierCosts& o = c.tiers[1 - t];
    if (o.store_us) {
      if (o.insert_us && k.insert_us) {
        assume(t, "store",
               fmt::format("not measured, taken as {}'s store with its insert swapped for this tier's",
                           enum_name(static_cast<CacheLevel>(1 - t))));
        return std::max(0.0, *o.store_us - *o.insert_us + *k.insert_us);
      }
      assume(t, "store", fmt::format("not measured, taken as {}'s", enum_name(static_cast<CacheLevel>(1 - t))));
      return *o.store_us;
    }
    assume(t, "store (encoding the output)", "not measured, taken as 0 µs");
    return 0.0;
  };
  // The walk `run` takes (cache/hierarchy.hpp), steered to each outcome, adds
  // up the work it does: each lookup, and each insert, the first put after
  // encoding the output being the store.
  struct CostSteps {
    const bool on[3];
    const int want;  // the outcome to steer to
    double lookups = 0, inserts = 0;
    bool encoded = false;
    decltype(lookup)& lookup_cost;
    decltype(insert)& insert_cost;
    decltype(store)& store_cost;
    static int tier(CacheLevel l) { return static_cast<int>(l); }
    bool has(CacheLevel l) const { return on[tier(l)]; }
    int phase() { return 0; }
    int at(CacheLevel) { return 0; }
    bool get_result(CacheLevel l) {
      const bool hit = want == tier(l);
      lookups += lookup_cost(tier(l), hit);
      return hit;
    }
    void put_result(CacheLevel l, bool) {
      inserts += encoded ? store_cost(tier(l)) : insert_cost(tier(l));
      encoded = false;
    }
    bool get_input() { return get_result(CacheLevel::l3); }
    bool prepare() { return true; }
    void put_input(bool) { inserts += insert_cost(2); }
    bool compute(bool) { return true; }
    bool cacheable(bool) { return true; }
    bool wants_result() { return false; }
    bool encode(bool) { return encoded = true; }
    void serve(bool) {}
  };
  const bool on[3] = {l1, l2, l3};
  for (int o = 0; o < 4; ++o) {
    if (o < 3 && !on[o]) continue;  // an outcome this configuration cannot have
    CostSteps steps{{l1, l2, l3}, o, 0, 0, false, lookup, insert, store};
    walk_hierarchy(steps);
    out.lookup_us[o] = steps.lookups;
    out.insert_us[o] = steps.inserts;
  }
  std::sort(out.assumed.begin(), out.assumed.end());
  out.assumed.erase(std::unique(out.assumed.begin(), out.assumed.end()), out.assumed.end());
  return out;
}

}  // namespace inferprof
