// The reports of `inferprof simulate`: the table for people, markdown,
// simulate.csv / simulate.json, and the miss-ratio curve as mrc.csv and mrc.svg.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "inferprof/simulate.hpp"
#include "report/cache_report.hpp"
#include "report/json.hpp"
#include "report/line_plot_svg.hpp"
#include "report/text.hpp"

namespace inferprof {
namespace report {
namespace {

using Cells = std::vector<std::vector<std::string>>;

std::string ratio(std::uint64_t part, std::uint64_t whole) {
  return whole ? fmt::format("{:.2f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "n/a";
}
double ratio_value(std::uint64_t part, std::uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0;
}
std::string bytes(std::uint64_t b) {
  return human_bytes(static_cast<std::int64_t>(std::min<std::uint64_t>(b, std::numeric_limits<std::int64_t>::max())));
}
std::string speedup(double v) {
  return fmt::format("{:.2f}×", v);
}
std::string mrc_name(const MrcResult& m) {
  return fmt::format("{}={}{}", m.spec.tier, policy_name(m.spec.policy),
                     m.spec.ttl_s > 0 ? fmt::format(" ttl {:g}s", m.spec.ttl_s) : std::string());
}

std::string headline(const SimulateResult& r) {
  const double rps = r.seconds > 0 ? static_cast<double>(r.requests) / r.seconds : 0;
  std::string s = fmt::format(
      "inferprof simulate · {} ({}) · {} requests, {} measured after {} warm-up · {} model "
      "updates · simulated in {:.3f} s ({:.2f} M req/s)\n",
      r.trace_path, r.trace_format, group_thousands(r.requests), group_thousands(r.measured), group_thousands(r.warmup),
      group_thousands(r.model_updates), r.seconds, rps / 1e6);
  s += fmt::format("time for TTLs: {} · entry sizes: {}\n",
                   r.timestamps ? "the trace's ts_ms" : "none (no timestamps in the trace)", r.sizes);
  if (r.costs) {
    const SimCosts& c = *r.costs;
    s += fmt::format("costs from {}, outside cache work: miss {} · l3 hit {} · l1/l2 hit {}{}\n", c.source,
                     human_duration_us(c.miss_mean_us), human_duration_us(c.l3_hit_mean_us),
                     human_duration_us(c.hit_mean_us),
                     c.per_request ? fmt::format(" (per-request: {} rows of requests.csv)", group_thousands(c.rows))
                                   : std::string());
    if (!c.spans_source.empty())
      s += fmt::format("tier costs from {} ({} requests), mean per span:\n", c.spans_source,
                       group_thousands(c.span_requests));
  }
  return s;
}

std::string cost_cell(const std::optional<double>& us) {
  return us ? human_duration_us(*us) : std::string("n/a");
}

// What each tier's lookups and inserts cost in the costs run.
Cells tier_cost_cells(const SimCosts& c) {
  Cells cells = {{"tier", "lookup hit", "lookup miss", "insert", "store (encode+insert)", "spans"}};
  for (int t = 0; t < 3; ++t) {
    const SimTierCosts& k = c.tiers[t];
    cells.push_back({fmt::format("l{}", t + 1), cost_cell(k.lookup_hit_us), cost_cell(k.lookup_miss_us),
                     cost_cell(k.insert_us), t < 2 ? cost_cell(k.store_us) : "-",
                     group_thousands(k.lookups + k.inserts + k.stores)});
  }
  return cells;
}

Cells tier_cells(const SimulateResult& r) {
  Cells cells = {{"config", "tier", "spec", "lookups", "hits", "misses", "hit ratio", "miss ratio", "evictions",
                  "expired", "entries", "bytes"}};
  for (const auto& c : r.configurations)
    for (std::size_t i = 0; i < c.tiers.size(); ++i) {
      const SimTierResult& t = c.tiers[i];
      cells.push_back({i == 0 ? c.name : "", t.spec.tier, tier_spec_text(t.spec), group_thousands(t.lookups),
                       group_thousands(t.hits), group_thousands(t.misses), ratio(t.hits, t.lookups),
                       ratio(t.misses, t.lookups), group_thousands(t.evictions), group_thousands(t.expirations),
                       group_thousands(t.entries), bytes(t.bytes)});
    }
  return cells;
}

Cells prediction_cells(const SimulateResult& r) {
  Cells cells = {{"config", "l1 hit", "l2 hit", "l3 hit", "compute", "mean", "of which cache", "p99", "speedup"}};
  auto p99 = [](const SimPrediction& p) { return p.p99_us ? human_duration_us(*p.p99_us) : std::string("n/a"); };
  cells.push_back({"none", "-", "-", "-", "100.00%", human_duration_us(r.baseline.mean_us), "-", p99(r.baseline),
                   speedup(1) + " (baseline)"});
  for (const auto& c : r.configurations) {
    const std::uint64_t n = c.served_l1 + c.served_l2 + c.served_l3 + c.served_compute;
    cells.push_back({c.name, ratio(c.served_l1, n), ratio(c.served_l2, n), ratio(c.served_l3, n),
                     ratio(c.served_compute, n), human_duration_us(c.predicted.mean_us),
                     human_duration_us(c.predicted.cache_us), p99(c.predicted), speedup(c.predicted.speedup)});
  }
  return cells;
}

// A request's predicted latency by what served it: its costs outside the
// cache plus the lookups and inserts of the configuration's tiers.
Cells outcome_cells(const SimulateResult& r) {
  Cells cells = {{"config", "served by l1", "by l2", "by l3", "computed"}};
  for (const auto& c : r.configurations) {
    auto has = [&](int t) {
      const std::string name = fmt::format("l{}", t + 1);
      return std::any_of(c.tiers.begin(), c.tiers.end(), [&](const SimTierResult& x) { return x.spec.tier == name; });
    };
    std::vector<std::string> row = {c.name};
    for (int o = 0; o < 4; ++o)
      row.push_back(o < 3 && !has(o) ? "-" : human_duration_us(c.predicted.outcome_us[o]));
    cells.push_back(std::move(row));
  }
  return cells;
}

Cells mrc_cells(const MrcResult& m, bool costs) {
  Cells cells = {{"capacity", "hit ratio", "miss ratio"}};
  if (costs) cells[0].push_back("predicted mean");
  for (const auto& p : m.points) {
    cells.push_back(
        {group_thousands(p.capacity), fmt::format("{:.4f}", p.hit_ratio), fmt::format("{:.4f}", 1 - p.hit_ratio)});
    if (costs) cells.back().push_back(p.predicted_mean_us ? human_duration_us(*p.predicted_mean_us) : "n/a");
  }
  return cells;
}

std::string mrc_note(const MrcResult& m) {
  std::string s = fmt::format("miss-ratio curve {} ({}", mrc_name(m), m.method);
  if (m.distinct_keys)
    s += fmt::format("; {} distinct keys{}", group_thousands(m.distinct_keys), m.sample_rate < 1 ? " sampled" : "");
  s += ")";
  if (m.sample_rate < 1)
    s += fmt::format(
        "\n  sampled {} requests at rate {:g}; hit ratios within ±{:.4f} (95%, from the spread of 8 "
        "disjoint sub-samples)",
        group_thousands(m.sampled_requests), m.sample_rate, m.error_bound.value_or(0));
  return s;
}

std::string markdown_table(const Cells& cells) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    out += "|";
    for (const auto& c : cells[i])
      out += " " + markdown_cell(c) + " |";
    out += "\n";
    if (i == 0) {
      out += "|";
      for (std::size_t k = 0; k < cells[i].size(); ++k)
        out += k == 0 ? "---|" : "---:|";
      out += "\n";
    }
  }
  return out;
}

void write_tier_json(JsonWriter& w, const SimTierResult& t) {
  w.begin_object();
  w.field("tier", t.spec.tier);
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

}  // namespace
}  // namespace report

std::string render_simulate_table(const SimulateResult& r) {
  using namespace report;
  std::string out = headline(r);
  if (r.costs && !r.costs->spans_source.empty()) out += render_grid(tier_cost_cells(*r.costs), {0});
  if (!r.configurations.empty()) out += "\n" + render_grid(tier_cells(r), {0, 1, 2});
  if (r.costs && !r.configurations.empty()) {
    out += "\npredicted latency (share of measured requests served by each tier):\n" +
           render_grid(prediction_cells(r), {0, 8});
    out += "\npredicted latency of a request by what served it (lookups and inserts included):\n" +
           render_grid(outcome_cells(r), {0});
  }
  for (const auto& m : r.mrc)
    out += "\n" + mrc_note(m) + "\n" + render_grid(mrc_cells(m, r.costs.has_value()), {});
  if (r.costs)
    for (const auto& n : r.costs->notes)
      out += "\nnote: " + n;
  for (const auto& w : r.warnings)
    out += "\nwarning: " + w;
  if ((r.costs && !r.costs->notes.empty()) || !r.warnings.empty()) out += "\n";
  return out;
}

std::string render_simulate_markdown(const SimulateResult& r) {
  using namespace report;
  std::string out = "### inferprof simulate\n\n";
  std::string head = headline(r);
  for (std::size_t start = 0, end; start < head.size(); start = end + 1) {
    end = head.find('\n', start);
    out += markdown_cell(head.substr(start, end - start)) + "  \n";
  }
  if (!r.configurations.empty()) out += "\n" + markdown_table(tier_cells(r));
  if (r.costs && !r.costs->spans_source.empty())
    out += "\n**Tier costs**\n\n" + markdown_table(tier_cost_cells(*r.costs));
  if (r.costs && !r.configurations.empty()) {
    out += "\n**Predicted latency**\n\n" + markdown_table(prediction_cells(r));
    out += "\n**Predicted latency by what served the request**\n\n" + markdown_table(outcome_cells(r));
  }
  for (const auto& m : r.mrc)
    out += "\n**" + markdown_cell(mrc_note(m)) + "**\n\n" + markdown_table(mrc_cells(m, r.costs.has_value()));
  for (const auto& w : r.warnings)
    out += "\n> warning: " + markdown_cell(w) + "\n";
  return out;
}

std::string render_simulate_csv(const SimulateResult& r) {
  using namespace report;
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  out.append(
      std::string_view("config,tier,spec,lookups,hits,misses,hit_ratio,miss_ratio,inserts,evictions,expirations,"
                       "rejected,entries,bytes,predicted_mean_us,predicted_p99_us,predicted_speedup\n"));
  for (const auto& c : r.configurations)
    for (const auto& t : c.tiers) {
      append_csv_field(out, c.name);
      fmt::format_to(it, ",{},", t.spec.tier);
      append_csv_field(out, tier_spec_text(t.spec));
      fmt::format_to(it, ",{},{},{},{:.6f},{:.6f},{},{},{},{},{},{},", t.lookups, t.hits, t.misses,
                     ratio_value(t.hits, t.lookups), ratio_value(t.misses, t.lookups), t.inserts, t.evictions,
                     t.expirations, t.rejected, t.entries, t.bytes);
      if (c.predicted.available) {
        fmt::format_to(it, "{:.3f},", c.predicted.mean_us);
        if (c.predicted.p99_us) fmt::format_to(it, "{:.3f}", *c.predicted.p99_us);
        fmt::format_to(it, ",{:.4f}", c.predicted.speedup);
      } else {
        out.append(std::string_view(",,"));
      }
      out.push_back('\n');
    }
  return fmt::to_string(out);
}

std::string render_simulate_json(const SimulateResult& r) {
  using namespace report;
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
  for (const auto& m : r.mrc) {
    w.begin_object();
    w.field("tier", m.spec.tier);
    w.field("policy", std::string(policy_name(m.spec.policy)));
    w.field_number("ttl_s", m.spec.ttl_s);
    w.field("method", m.method);
    w.field_number("sample_rate", m.sample_rate);
    w.field("sampled_requests", m.sampled_requests);
    w.field("distinct_keys", m.distinct_keys);
    w.key("error_bound");
    if (m.error_bound)
      w.number(*m.error_bound, 6);
    else
      w.null();
    w.key("points").begin_array();
    for (const auto& p : m.points) {
      w.begin_object();
      w.field("capacity", p.capacity);
      w.field_number("hit_ratio", p.hit_ratio, 6);
      w.field_number("miss_ratio", 1 - p.hit_ratio, 6);
      w.key("predicted_mean_us");
      if (p.predicted_mean_us)
        w.number(*p.predicted_mean_us, 3);
      else
        w.null();
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("warnings").begin_array();
  for (const auto& s : r.warnings)
    w.value(s);
  w.end_array();
  w.end_object();
  return w.str();
}

std::string render_mrc_csv(const SimulateResult& r) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  out.append(std::string_view("tier,policy,ttl_s,capacity,hit_ratio,miss_ratio,predicted_mean_us,sample_rate\n"));
  for (const auto& m : r.mrc)
    for (const auto& p : m.points) {
      fmt::format_to(it, "{},{},{:g},{},{:.6f},{:.6f},", m.spec.tier, policy_name(m.spec.policy), m.spec.ttl_s,
                     p.capacity, p.hit_ratio, 1 - p.hit_ratio);
      if (p.predicted_mean_us) fmt::format_to(it, "{:.3f}", *p.predicted_mean_us);
      fmt::format_to(it, ",{:g}\n", m.sample_rate);
    }
  return fmt::to_string(out);
}

std::string render_mrc_svg(const SimulateResult& r) {
  using namespace report;
  LinePlot plot;
  plot.title = "Miss-ratio curve: hit ratio by cache capacity";
  plot.subtitle = fmt::format("{} · {} requests measured{}", base_name(r.trace_path), group_thousands(r.measured),
                              r.costs ? " · dashed: predicted mean latency (right axis)" : "");
  plot.x_label = "capacity (entries, log scale)";
  plot.left_label = "hit ratio";
  plot.right_label = "predicted mean latency";
  for (const auto& m : r.mrc) {
    PlotSeries hit, lat;
    hit.name = mrc_name(m) + " hit ratio";
    lat.name = mrc_name(m) + " predicted mean";
    lat.right_axis = lat.dashed = true;
    for (const auto& p : m.points) {
      hit.x.push_back(static_cast<double>(p.capacity));
      hit.y.push_back(p.hit_ratio);
      if (p.predicted_mean_us) {
        lat.x.push_back(static_cast<double>(p.capacity));
        lat.y.push_back(*p.predicted_mean_us);
      }
    }
    plot.series.push_back(std::move(hit));
    if (!lat.x.empty()) plot.series.push_back(std::move(lat));
  }
  return render_line_plot_svg(plot);
}

}  // namespace inferprof
