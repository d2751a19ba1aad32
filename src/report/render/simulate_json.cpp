// A simulation as JSON (--format json, and simulate.json).
#include "base/json.hpp"
#include "report/render/cache_section.hpp"
#include "report/render/simulate_parts.hpp"

namespace inferprof {
namespace report {
namespace {

using simulate_parts::ratio_value;

// A number, or null when unset.
void optional_number(JsonWriter& w, std::string_view key, const std::optional<double>& v, int digits) {
  w.key(key);
  if (v)
    w.number(*v, digits);
  else
    w.null();
}

void write_tier_json(JsonWriter& w, const SimTierResult& t) {
  w.begin_object();
  w.field("tier", enum_name(t.spec.tier));
  w.field("spec", tier_spec_text(t.spec));
  w.field("policy", std::string(policy_name(t.spec.policy)));
  w.field("max_entries", t.spec.max_entries);
  w.field("max_bytes", t.spec.max_bytes);
  w.field_number("ttl_s", t.spec.ttl_s);
  w.field("lookups", t.lookups);
  w.field("hits", t.hits);
  w.field("misses", t.misses);
  w.field_number("hit_ratio", ratio_value(t.hits, t.lookups), 6);
  w.field_number("miss_ratio", ratio_value(t.misses, t.lookups), 6);
  w.field("inserts", t.inserts);
  w.field("evictions", t.evictions);
  w.field("expirations", t.expirations);
  w.field("rejected", t.rejected);
  w.field("entries", t.entries);
  w.field("bytes", t.bytes);
  w.end_object();
}

void write_prediction_json(JsonWriter& w, const SimPrediction& p) {
  w.key("predicted");
  if (!p.available) {
    w.null();
    return;
  }
  w.begin_object();
  w.field_number("mean_us", p.mean_us, 3);
  w.field_number("cache_us", p.cache_us, 3);
  w.key("by_outcome_us").begin_object();
  static const char* kOutcome[4] = {"l1", "l2", "l3", "compute"};
  for (int o = 0; o < 4; ++o)
    w.field_number(kOutcome[o], p.outcome_us[o], 3);
  w.end_object();
  w.key("p99_us");
  if (p.p99_us)
    w.number(*p.p99_us, 3);
  else
    w.null();
  w.field_number("speedup", p.speedup, 4);
  w.end_object();
}

void write_mrc_json(JsonWriter& w, const MrcResult& m) {
  w.begin_object();
  w.field("tier", enum_name(m.spec.tier));
  w.field("policy", std::string(policy_name(m.spec.policy)));
  w.field_number("ttl_s", m.spec.ttl_s);
  w.field("method", m.method);
  w.field_number("sample_rate", m.sample_rate);
  w.field("sampled_requests", m.sampled_requests);
  w.field("distinct_keys", m.distinct_keys);
  optional_number(w, "error_bound", m.error_bound, 6);
  w.key("points").begin_array();
  for (const auto& p : m.points) {
    w.begin_object();
    w.field("capacity", p.capacity);
    w.field_number("hit_ratio", p.hit_ratio, 6);
    w.field_number("miss_ratio", 1 - p.hit_ratio, 6);
    optional_number(w, "predicted_mean_us", p.predicted_mean_us, 3);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void write_cell_json(JsonWriter& w, const PolicyGridResult& g, const GridCell& c) {
  const GridSize& s = g.spec.sizes[c.size];
  w.begin_object();
  w.field("policy", g.spec.policies[c.policy].label);
  w.field("size", s.label);
  w.field("max_entries", s.entries);
  w.field("max_bytes", s.bytes);
  w.field("lookups", c.lookups);
  w.field("hits", c.hits);
  w.field_number("miss_ratio", c.miss_ratio, 6);
  optional_number(w, "miss_ratio_error", c.miss_ratio_error, 6);
  w.field("simulated_entries", c.simulated_entries);
  w.field("simulated_bytes", c.simulated_bytes);
  w.field("requested_bytes", c.requested_bytes);
  w.field("missed_bytes", c.missed_bytes);
  optional_number(w, "byte_miss_ratio", c.byte_miss_ratio, 6);
  w.field("evictions", c.evictions);
  write_prediction_json(w, c.predicted);
  w.end_object();
}

void write_grid_json(JsonWriter& w, const PolicyGridResult& g) {
  w.begin_object();
  w.field("tier", enum_name(g.spec.tier));
  w.field("threads", static_cast<std::uint64_t>(g.threads));
  w.field_number("seconds", g.seconds, 3);
  w.key("sampling").begin_object();
  w.field_number("rate", g.sampling.rate);
  w.field("automatic", g.sampling.automatic);
  w.field_number("estimated_keys", g.sampling.estimated_keys, 0);
  w.field("requests", g.sampling.requests);
  w.field("sampled_requests", g.sampling.sampled);
  w.field_number("max_miss_ratio_error", g.sampling.max_error, 6);
  w.end_object();
  w.key("cells").begin_array();
  for (const auto& c : g.cells)
    write_cell_json(w, g, c);
  w.end_array();
  w.key("recommendation");
  if (!g.recommendation) {
    w.null();
  } else {
    const GridRecommendation& r = *g.recommendation;
    w.begin_object();
    w.field("by", std::string(r.by_latency ? "predicted_mean_us" : "miss_ratio"));
    w.field("budget", g.spec.budget ? g.spec.budget->label : std::string("largest size"));
    w.field("policy", g.spec.policies[g.cells[r.best].policy].label);
    w.field("size", g.spec.sizes[g.cells[r.best].size].label);
    w.key("runner_up");
    if (r.runner_up) {
      w.begin_object();
      w.field("policy", g.spec.policies[g.cells[*r.runner_up].policy].label);
      w.field("size", g.spec.sizes[g.cells[*r.runner_up].size].label);
      w.end_object();
    } else {
      w.null();
    }
    w.field_number("margin", r.margin, 6);
    w.field_number("margin_pct", r.margin_pct, 3);
    w.field("line", simulate_parts::recommendation_line(g));
    w.end_object();
  }
  w.end_object();
}

}  // namespace
}  // namespace report

std::string render_simulate_json(const SimulateResult& r) {
  using namespace report;
  using namespace report::simulate_parts;
  JsonWriter w;
  w.begin_object();
  w.field("schema", "inferprof.simulate/1");
  w.key("trace").begin_object();
  w.field("path", r.trace_path);
  w.field("format", r.trace_format);
  w.field("requests", r.requests);
  w.field("measured", r.measured);
  w.field("warmup", r.warmup);
  w.field("model_updates", r.model_updates);
  w.field("timestamps", r.timestamps);
  w.field("entry_sizes", r.sizes);
  w.field_number("seconds", r.seconds, 6);
  w.end_object();
  w.key("costs");
  if (r.costs) {
    const SimCosts& c = *r.costs;
    w.begin_object();
    w.field("source", c.source);
    w.field("per_request", c.per_request);
    w.field("rows", c.rows);
    w.field_number("compute_us", c.miss_mean_us, 3);
    w.field_number("l3_hit_us", c.l3_hit_mean_us, 3);
    w.field_number("hit_us", c.hit_mean_us, 3);
    w.key("spans_source");
    if (c.spans_source.empty())
      w.null();
    else
      w.value(c.spans_source);
    w.field("span_requests", c.span_requests);
    w.key("tiers").begin_object();
    for (int t = 0; t < 3; ++t) {
      const SimTierCosts& k = c.tiers[t];
      w.key(fmt::format("l{}", t + 1)).begin_object();
      auto opt = [&](const char* name, const std::optional<double>& v) {
        w.key(name);
        if (v)
          w.number(*v, 3);
        else
          w.null();
      };
      opt("lookup_hit_us", k.lookup_hit_us);
      opt("lookup_miss_us", k.lookup_miss_us);
      opt("insert_us", k.insert_us);
      opt("store_us", k.store_us);
      w.field("lookups", k.lookups);
      w.field("inserts", k.inserts);
      w.field("stores", k.stores);
      w.end_object();
    }
    w.end_object();
    w.key("notes").begin_array();
    for (const auto& n : c.notes)
      w.value(n);
    w.end_array();
    w.end_object();
  } else {
    w.null();
  }
  w.key("baseline");
  w.begin_object();
  write_prediction_json(w, r.baseline);
  w.end_object();
  w.key("configurations").begin_array();
  for (const auto& c : r.configurations) {
    w.begin_object();
    w.field("name", c.name);
    w.key("tiers").begin_array();
    for (const auto& t : c.tiers)
      write_tier_json(w, t);
    w.end_array();
    w.key("served_by").begin_object();
    w.field("l1", c.served_l1);
    w.field("l2", c.served_l2);
    w.field("l3", c.served_l3);
    w.field("compute", c.served_compute);
    w.end_object();
    write_prediction_json(w, c.predicted);
    w.end_object();
  }
  w.end_array();
  w.key("mrc").begin_array();
  for (const auto& m : r.mrc)
    write_mrc_json(w, m);
  w.end_array();
  w.key("policies");
  if (r.grid)
    write_grid_json(w, *r.grid);
  else
    w.null();
  w.key("warnings").begin_array();
  for (const auto& s : r.warnings)
    w.value(s);
  w.end_array();
  w.end_object();
  return w.str();
}

}  // namespace inferprof
