// A run's measured costs, read back from its summary.json (and requests.csv
// when it lies next to it), as the cost of serving a request by what served it.
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"
#include "inferprof/simulate.hpp"
#include "simulate/detail.hpp"

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
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// A missing field, or a field of something that is not an object, reads as
// `fallback` (simdjson would throw converting the error result).
double number_or(simdjson::simdjson_result<simdjson::dom::element> r, double fallback) {
  simdjson::dom::element e;
  if (r.get(e) != simdjson::SUCCESS) return fallback;
  double d;
  if (e.get(d) == simdjson::SUCCESS) return d;
  std::int64_t i;
  if (e.get(i) == simdjson::SUCCESS) return static_cast<double>(i);
  std::uint64_t u;
  if (e.get(u) == simdjson::SUCCESS) return static_cast<double>(u);
  return fallback;
}

void read_requests_csv(const std::string& path, SimCosts& c) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  std::string line;
  std::vector<std::string> f;
  if (!std::getline(in, line) || !detail::split_csv(line, f))
    throw bad_input(at_line(path, 1, "expected the requests.csv header row"));
  auto col = [&](const char* name) {
    for (std::size_t i = 0; i < f.size(); ++i)
      if (f[i] == name) return static_cast<int>(i);
    throw bad_input(at_line(path, 1, fmt::format("no '{}' column: expected a requests.csv written by inferprof run", name)));
  };
  const int total = col("total_us"), input = col("input_us"), pre = col("preprocess_us"), cache = col("cache"),
            ok = col("ok");
  const int need = std::max({total, input, pre, cache, ok});
  Reservoir miss{&c.miss_us}, l3{&c.l3_hit_us}, l1{&c.l1_hit_us}, l2{&c.l2_hit_us}, derived_l3{nullptr};
  std::vector<double> derived;
  derived_l3.out = &derived;
  std::uint64_t n = 1;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (!detail::split_csv(line, f) || static_cast<int>(f.size()) <= need)
      throw bad_input(at_line(path, n, fmt::format("expected {} fields as in the header", need + 1)));
    if (f[static_cast<std::size_t>(ok)] != "true") continue;
    // As `diff` reads the same file: the whole field a finite number.
    auto num = [&](int i) {
      const std::string& s = f[static_cast<std::size_t>(i)];
      if (s.empty()) return 0.0;
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (end != s.c_str() + s.size() || !std::isfinite(v))
        throw bad_input(at_line(path, n, fmt::format("'{}': expected a number of µs", printable(s))));
      return v;
    };
    const std::string& outcome = f[static_cast<std::size_t>(cache)];
    const double t = num(total);
    ++c.rows;
    if (outcome == "none" || outcome == "miss") {
      miss.add(t);
      derived_l3.add(t - num(input) - num(pre));
    } else if (outcome == "l3_hit") {
      l3.add(t);
    } else if (outcome == "l1_hit") {
      l1.add(t);
    } else if (outcome == "l2_hit") {
      l2.add(t);
    }
  }
  // A run without L3 hits still says what an L3 hit costs: its misses minus
  // the input and preprocessing they spent.
  if (c.l3_hit_us.empty()) c.l3_hit_us = std::move(derived);
  c.per_request = !c.miss_us.empty();
}

}  // namespace

SimCosts load_sim_costs(const std::string& path) {
  SimCosts c;
  c.source = path;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::padded_string text;
  if (simdjson::padded_string::load(path).get(text) != simdjson::SUCCESS)
    throw bad_input(fmt::format("--costs '{}': cannot read it (expected a run's summary.json)", path));
  if (auto err = parser.parse(text).get(doc); err != simdjson::SUCCESS)
    throw bad_input(fmt::format("--costs '{}': malformed JSON ({})", path, simdjson::error_message(err)));
  std::string_view schema;
  if (doc["schema"].get(schema) != simdjson::SUCCESS || schema != "inferprof.summary/1")
    throw bad_input(fmt::format("--costs '{}': expected an inferprof summary.json (schema inferprof.summary/1)", path));
  simdjson::dom::object stages, total;
  if (doc["stages"].get(stages) != simdjson::SUCCESS || doc["total"].get(total) != simdjson::SUCCESS)
    throw bad_input(fmt::format("--costs '{}': no 'stages' or 'total' object", path));
  const double input_us = number_or(stages["input"]["mean_us"], 0);
  const double pre_us = number_or(stages["preprocess"]["mean_us"], 0);
  const double total_us = number_or(total["mean_us"], -1);
  if (total_us < 0) throw bad_input(fmt::format("--costs '{}': 'total.mean_us' is missing", path));

  std::optional<double> served[4];  // miss, l3, l1, l2
  simdjson::dom::array by;
  if (doc["served_by"].get(by) == simdjson::SUCCESS)
    for (auto o : by) {
      std::string_view name;
      if (o["outcome"].get(name) != simdjson::SUCCESS) continue;
      const double m = number_or(o["mean_us"], -1);
      if (m < 0 || number_or(o["requests"], 0) <= 0) continue;
      if (name == "miss") served[0] = m;
      if (name == "l3_hit") served[1] = m;
      if (name == "l1_hit") served[2] = m;
      if (name == "l2_hit") served[3] = m;
    }
  simdjson::dom::array caches;
  if (doc["caches"].get(caches) == simdjson::SUCCESS)
    for (auto t : caches) {
      std::string_view tier;
      if (t["tier"].get(tier) != simdjson::SUCCESS) continue;
      const double entries = number_or(t["entries"], 0), bytes = number_or(t["bytes"], 0);
      if (entries <= 0 || bytes <= 0) continue;
      const auto mean = static_cast<std::uint64_t>(bytes / entries + 0.5);
      if (tier == "l3")
        c.preprocessed_bytes = mean;
      else if (c.result_bytes == 0)
        c.result_bytes = mean;
    }

  const std::string csv = (std::filesystem::path(path).parent_path() / "requests.csv").string();
  read_requests_csv(csv, c);

  const bool had_caches = served[0] || served[1] || served[2] || served[3];
  c.miss_mean_us = c.per_request ? mean_of(c.miss_us) : served[0] ? *served[0] : total_us;
  if (had_caches && !served[0] && !c.per_request)
    throw bad_input(fmt::format("--costs '{}': the run had no cache misses, so it does not say what computing a "
                                "request costs; use a run without caches",
                                path));
  c.l3_hit_mean_us = !c.l3_hit_us.empty() ? mean_of(c.l3_hit_us)
                     : served[1]           ? *served[1]
                                           : std::max(0.0, c.miss_mean_us - input_us - pre_us);
  auto hit_cost = [&](std::vector<double>& samples, const std::optional<double>& s, const char* tier) {
    if (!samples.empty()) return mean_of(samples);
    if (s) return *s;
    c.notes.push_back(fmt::format("{} hit cost not measured by the costs run (no {} hits): taken as 0 µs; give "
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
