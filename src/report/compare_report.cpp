// The reports of `inferprof compare`: the table for people (with hyperfine's
// `Relative` idea, but every speedup with its 95% interval and noise named as
// noise), the same as GitHub markdown, compare.csv and compare.json.
//
// The table also says where each configuration's time went (what share of
// requests each tier served and at what latency, against a miss), so that a
// tier's speedup is explained, not only shown.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>

#include "inferprof/compare.hpp"
#include "report/cache_report.hpp"
#include "report/json.hpp"
#include "report/text.hpp"

namespace inferprof {
namespace report {
namespace {

constexpr std::array<std::string_view, 3> kTiers = {"l1", "l2", "l3"};
constexpr std::string_view kNoiseNote = "within noise: the 95% interval includes 1.0";

const CacheTierReport* find_tier(const CompareRow& row, std::string_view tier) {
  for (const CacheTierReport& t : row.last.caches)
    if (t.spec.tier == tier) return &t;
  return nullptr;
}

// Tiers that some configuration uses: the table shows columns only for them.
std::vector<std::string_view> used_tiers(const CompareResult& r) {
  std::vector<std::string_view> used;
  for (std::string_view tier : kTiers)
    for (const CompareRow& row : r.rows)
      if (find_tier(row, tier)) {
        used.push_back(tier);
        break;
      }
  return used;
}

std::string hit_text(const CompareRow& row, std::string_view tier) {
  const CacheTierReport* t = find_tier(row, tier);
  if (!t) return "-";
  if (t->stats.lookups == 0) return "n/a";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(t->stats.hits) / static_cast<double>(t->stats.lookups));
}

std::string bytes_text(const CompareRow& row, std::string_view tier) {
  const CacheTierReport* t = find_tier(row, tier);
  return t ? human_bytes(static_cast<std::int64_t>(
                 std::min<std::uint64_t>(t->stats.bytes, std::numeric_limits<std::int64_t>::max())))
           : "-";
}

// Mean µs of the requests `outcome` served ("l1_hit", ..., "miss"); nullptr: none.
const OutcomeStats* outcome_cost(const CompareRow& row, std::string_view outcome) {
  for (const OutcomeStats& o : row.outcome_costs)
    if (o.outcome == outcome && o.count > 0) return &o;
  return nullptr;
}

bool any_caches(const CompareResult& r) {
  for (const CompareRow& row : r.rows)
    if (!row.tiers.empty() || !row.last.caches.empty()) return true;
  return false;
}

std::string cost_text(const CompareRow& row, std::string_view outcome) {
  const OutcomeStats* o = outcome_cost(row, outcome);
  return o ? human_duration_us(o->mean_us) : "-";
}

// "lockstep: paired bootstrap over 120 requests"
std::string interval_line(const CompareResult& r) {
  return fmt::format("speedup intervals: {} mode, {}", compare_mode_name(r.mode),
                     r.interval.empty() ? std::string("bootstrap over requests") : r.interval);
}

std::string single_wall_note(const CompareResult& r) {
  return r.mode == CompareMode::lockstep
             ? "wall speedup without an interval: one lockstep pass; --repeat 3 or more for one\n"
             : "wall speedup without an interval: one replay per configuration; repeat for one\n";
}

std::string times(double v) {
  return std::isfinite(v) ? fmt::format("{:.2f}\u00d7", v) : "n/a";
}

// "3.41× [3.30, 3.52]"; "~" first when the interval includes 1.0. The
// interval is left out when it is a single point (nothing to resample).
std::string speedup_text(const Speedup& s, std::string_view noise_mark) {
  std::string out = s.noise ? std::string(noise_mark) : std::string();
  out += times(s.value);
  if (std::isfinite(s.low) && std::isfinite(s.high) && s.low < s.high)
    out += fmt::format(" [{:.2f}, {:.2f}]", s.low, s.high);
  return out;
}

bool any_noise(const CompareResult& r) {
  for (std::size_t i = 1; i < r.rows.size(); ++i)
    if (r.rows[i].mean_speedup.noise || r.rows[i].wall_speedup.noise) return true;
  return false;
}

bool degenerate_wall_interval(const CompareResult& r) {
  for (std::size_t i = 1; i < r.rows.size(); ++i)
    if (!(r.rows[i].wall_speedup.low < r.rows[i].wall_speedup.high)) return true;
  return false;
}

std::string plural(std::uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", group_thousands(n), n == 1 ? one : many);
}

std::string headline(const CompareResult& r) {
  std::string out = "inferprof compare";
  if (r.rows.empty())
    return out + " · no configurations" + (r.interrupted_by.empty() ? "" : " completed (interrupted)");
  const RunSummary& s = r.rows[0].last;
  if (!s.info.model_path.empty()) out += fmt::format(" · {}", base_name(s.info.model_path));
  if (!s.info.trace_path.empty()) out += fmt::format(" · {}", base_name(s.info.trace_path));
  out += fmt::format(" · {}", plural(s.requests, "request", "requests"));
  const auto repeats = static_cast<std::uint64_t>(std::max(r.repeat, 1));
  if (r.mode == CompareMode::lockstep)
    out += repeats > 1 ? fmt::format(" · lockstep, {} repeats", repeats) : std::string(" · lockstep");
  else
    out += repeats > 1 ? fmt::format(" · {} repeats, interleaved", repeats) : std::string(" · 1 run each");
  if (!r.interrupted_by.empty()) out += fmt::format(" · interrupted ({}): completed replays only", r.interrupted_by);
  return out;
}

// A table as rows of cells; the first row is the header. Column 0 is text
// (left-aligned), the others are numbers (right-aligned).
using Cells = std::vector<std::vector<std::string>>;

Cells table_cells(const CompareResult& r, std::string_view noise_mark) {
  const std::vector<std::string_view> tiers = used_tiers(r);
  Cells cells;
  std::vector<std::string> header = {"caches",           "mean",         "p50",     "p99", "req/s",
                                     "speedup (95% CI)", "wall speedup", "cpu mean"};
  for (std::string_view t : tiers)
    header.push_back(fmt::format("{} hit", t));
  for (std::string_view t : tiers)
    header.push_back(fmt::format("{} bytes", t));
  // What a request costs by what served it: a tier's hit against a miss.
  const bool costs = any_caches(r);
  if (costs) {
    for (std::string_view t : tiers)
      header.push_back(fmt::format("{} hit cost", t));
    header.push_back("miss cost");
  }
  cells.push_back(std::move(header));
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const CompareRow& row = r.rows[i];
    std::vector<std::string> line = {row.name, human_duration_us(row.mean_us), human_duration_us(row.p50_us),
                                     human_duration_us(row.p99_us), grouped_fixed(row.rps, 1)};
    if (i == 0) {
      line.push_back(times(1) + " (baseline)");
      line.push_back(times(1));
    } else {
      line.push_back(speedup_text(row.mean_speedup, noise_mark));
      line.push_back(speedup_text(row.wall_speedup, noise_mark));
    }
    // Thread CPU time per request (last repeat): what the work cost, whatever the load.
    line.push_back(row.last.total.cpu ? human_duration_us(row.last.total.cpu_mean_us) : std::string("n/a"));
    for (std::string_view t : tiers)
      line.push_back(hit_text(row, t));
    for (std::string_view t : tiers)
      line.push_back(bytes_text(row, t));
    if (costs) {
      for (std::string_view t : tiers)
        line.push_back(cost_text(row, fmt::format("{}_hit", t)));
      line.push_back(cost_text(row, "miss"));
    }
    cells.push_back(std::move(line));
  }
  return cells;
}

std::string served_by_name(std::string_view outcome) {
  constexpr std::string_view kHit = "_hit";
  if (outcome.size() > kHit.size() && outcome.substr(outcome.size() - kHit.size()) == kHit) {
    std::string tier(outcome.substr(0, outcome.size() - kHit.size()));
    for (char& c : tier)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return tier;
  }
  return std::string(outcome);
}

std::string share_text(std::uint64_t part, std::uint64_t whole) {
  return fmt::format("{:.1f}%", whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
}

// "l1=lru:10,000; l2=lfu:1,000,000 redis://host:6379/0"
std::string tiers_text(const CompareRow& row) {
  std::vector<std::string> parts;
  for (const CacheTierReport& t : row.last.caches) {
    std::string part = fmt::format("{}={}", t.spec.tier, tier_spec_text(t.spec));
    if (t.spec.backend != "memory" && !t.where.empty()) part += " " + t.where;
    parts.push_back(std::move(part));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

// Where a configuration's time went, from what served its requests:
// "81.2% of requests served by L1 at 1.2 µs mean vs 45.3 ms for a miss
// (45.1 ms per request in none)".
std::string explanation(const CompareRow& row, const CompareRow& base) {
  const RunSummary& s = row.last;
  if (s.caches.empty()) return "no cache tiers: every request computed";
  std::vector<std::string> served;
  const OutcomeStats* miss = nullptr;
  for (const OutcomeStats& o : s.outcomes) {
    if (o.outcome == "miss") {
      miss = &o;
      continue;
    }
    if (o.count == 0) continue;
    const std::string tier = served_by_name(o.outcome);
    // L3 holds preprocessed inputs: its hits still run the model.
    const std::string what = tier == "L3" ? "L3 (preprocessing skipped)" : tier;
    served.push_back(served.empty() ? fmt::format("{} of requests served by {} at {} mean",
                                                  share_text(o.count, s.requests), what, human_duration_us(o.mean_us))
                                    : fmt::format("{} by {} at {} mean", share_text(o.count, s.requests), what,
                                                  human_duration_us(o.mean_us)));
  }
  std::string out;
  if (served.empty()) {
    out = "no hits: every request computed";
    if (miss && miss->count > 0) out += fmt::format(" at {} mean", human_duration_us(miss->mean_us));
  } else {
    out = fmt::format("{}", fmt::join(served, ", "));
    if (miss && miss->count > 0) out += fmt::format(" vs {} for a miss", human_duration_us(miss->mean_us));
  }
  if (miss && miss->count > 0)
    out += fmt::format(" ({} per request in {})", human_duration_us(base.mean_us), base.name);
  return out;
}

// Notes under the table: warnings, degraded tiers, verification. Each is one
// line of text; the caller adds "warning: " or the markdown quote.
struct Notes {
  std::vector<std::string> warnings;
  std::vector<std::string> verify;
};

Notes notes_of(const CompareResult& r) {
  Notes n;
  auto warn = [&](std::string w) {
    if (std::find(n.warnings.begin(), n.warnings.end(), w) == n.warnings.end()) n.warnings.push_back(std::move(w));
  };
  for (const std::string& w : r.warnings)
    warn(w);
  for (const CompareRow& row : r.rows) {
    // A configuration whose replay was descheduled (run's contention signal).
    for (const std::string& w : row.last.info.warnings)
      if (w.rfind("descheduled", 0) == 0) warn(fmt::format("{}: {}", row.name, w));
    for (const CacheTierReport& t : row.last.caches) {
      const std::string where = t.where.empty() ? t.spec.backend : t.where;
      if (t.stats.degraded)
        warn(fmt::format("{} on {} degraded in {}: {}, requests fell through to compute", t.spec.tier, where, row.name,
                         plural(t.stats.errors, "error", "errors")));
      else if (t.stats.errors > 0)
        warn(fmt::format("{} on {} in {}: {} (counted as misses)", t.spec.tier, where, row.name,
                         plural(t.stats.errors, "backend error", "backend errors")));
    }
    if (row.last.failed > 0)
      warn(fmt::format("{}: {} failed", row.name, plural(row.last.failed, "request", "requests")));
    if (row.outliers_dominate)
      warn(fmt::format("{}: the slowest 1% of requests hold over half the time; its mean follows them (see p50)",
                       row.name));
  }
  for (const CompareRow& row : r.rows) {
    const VerifyReport& v = row.last.verify;
    if (!v.enabled) continue;
    n.verify.push_back(fmt::format("{}: {} recomputed ({:.0f}% sampled): {}, max abs difference {:.3g}", row.name,
                                   plural(v.checked, "cache hit", "cache hits"), v.fraction * 100,
                                   plural(v.mismatches, "mismatch", "mismatches"), v.max_abs_diff));
    for (const std::string& e : v.examples)
      n.verify.push_back(fmt::format("  mismatch: {}", e));
  }
  if (r.verify_mismatches > 0)
    n.verify.push_back(fmt::format("{} in all: cached results differ from computed ones",
                                   plural(r.verify_mismatches, "mismatch", "mismatches")));
  return n;
}

void csv_number(fmt::memory_buffer& out, double v, int decimals) {
  out.push_back(',');
  if (std::isfinite(v)) fmt::format_to(std::back_inserter(out), "{:.{}f}", v, decimals);
}

void json_speedup(JsonWriter& w, std::string_view key, const Speedup& s) {
  w.key(key).begin_object();
  w.field_number("value", s.value, 4);
  w.field_number("low", s.low, 4);
  w.field_number("high", s.high, 4);
  w.field("noise", s.noise);
  w.end_object();
}

}  // namespace
}  // namespace report

std::string render_compare_table(const CompareResult& r) {
  using namespace report;
  std::string out = headline(r) + "\n";
  if (r.rows.empty()) return out;
  out += '\n';
  const Cells cells = table_cells(r, "~");
  std::vector<std::size_t> width(cells[0].size(), 0);
  for (const auto& line : cells)
    for (std::size_t c = 0; c < line.size(); ++c)
      width[c] = std::max(width[c], display_width(line[c]));
  for (const auto& line : cells) {
    std::string text;
    for (std::size_t c = 0; c < line.size(); ++c) {
      if (c == 0)
        text += pad_right(line[c], width[c]);
      else if (c == 5 || c == 6)  // the speedups read better left-aligned: "1.00× (baseline)" and "~1.02× [...]"
        text += "  " + pad_right(line[c], width[c]);
      else
        text += "  " + pad_left(line[c], width[c]);
    }
    while (!text.empty() && text.back() == ' ')
      text.pop_back();
    out += text + '\n';
  }

  if (r.rows.size() > 1) out += interval_line(r) + '\n';
  const bool noise = any_noise(r);
  const bool single_wall = r.rows.size() > 1 && degenerate_wall_interval(r);
  if (noise || single_wall) out += '\n';
  if (noise) out += fmt::format("~ {}\n", kNoiseNote);
  if (single_wall) out += single_wall_note(r);

  if (r.rows.size() > 1) {
    out += "\nwhere the time went:\n";
    for (std::size_t i = 1; i < r.rows.size(); ++i) {
      const CompareRow& row = r.rows[i];
      const std::string tiers = tiers_text(row);
      out +=
          fmt::format("  {}{}: {}\n", row.name, tiers.empty() ? "" : " (" + tiers + ")", explanation(row, r.rows[0]));
    }
  }

  const Notes n = notes_of(r);
  if (!n.warnings.empty() || !n.verify.empty()) out += '\n';
  for (const auto& w : n.warnings)
    out += fmt::format("warning: {}\n", w);
  for (const auto& v : n.verify)
    out += fmt::format("verify: {}\n", v);
  return out;
}

std::string render_compare_markdown(const CompareResult& r) {
  using namespace report;
  std::string out = fmt::format("### {}\n", markdown_cell(headline(r)));
  if (r.rows.empty()) return out;
  out += '\n';
  // A lone '~' can start strikethrough on GitHub: escape it.
  const Cells cells = table_cells(r, "\\~");
  for (std::size_t i = 0; i < cells.size(); ++i) {
    out += '|';
    for (const std::string& c : cells[i])
      out += ' ' + markdown_cell(c) + " |";
    out += '\n';
    if (i == 0) {
      out += "|:--|";
      for (std::size_t c = 1; c < cells[0].size(); ++c)
        out += (c == 5 || c == 6) ? ":--|" : "--:|";
      out += '\n';
    }
  }
  if (r.rows.size() > 1) out += '\n' + markdown_cell(interval_line(r)) + '\n';
  const bool noise = any_noise(r);
  const bool single_wall = r.rows.size() > 1 && degenerate_wall_interval(r);
  if (noise || single_wall) out += '\n';
  if (noise) out += fmt::format("\\~ {}\n", kNoiseNote);
  if (noise && single_wall) out += '\n';
  if (single_wall) out += single_wall_note(r);
  if (r.rows.size() > 1) {
    out += "\n**Where the time went**\n\n";
    for (std::size_t i = 1; i < r.rows.size(); ++i) {
      const CompareRow& row = r.rows[i];
      const std::string tiers = tiers_text(row);
      out += fmt::format("- **{}**{}: {}\n", markdown_cell(row.name),
                         tiers.empty() ? "" : " (" + markdown_cell(tiers) + ")",
                         markdown_cell(explanation(row, r.rows[0])));
    }
  }
  const Notes n = notes_of(r);
  std::vector<std::string> quoted;
  for (const auto& w : n.warnings)
    quoted.push_back(fmt::format("> **warning:** {}\n", markdown_cell(w)));
  for (const auto& v : n.verify)
    quoted.push_back(fmt::format("> **verify:** {}\n", markdown_cell(v)));
  if (!quoted.empty()) out += '\n';
  for (std::size_t i = 0; i < quoted.size(); ++i)
    out += (i ? ">\n" : "") + quoted[i];
  return out;
}

std::string render_compare_csv(const CompareResult& r) {
  using namespace report;
  fmt::memory_buffer out;
  out.append(std::string_view(
      "config,repeats,mean_us,p50_us,p99_us,rps,wall_s,speedup,speedup_low,speedup_high,wall_speedup,"
      "wall_speedup_low,wall_speedup_high,noise,l1_hit_ratio,l2_hit_ratio,l3_hit_ratio,l1_bytes,l2_bytes,l3_bytes,"
      "errors,mode,l1_hit_us,l2_hit_us,l3_hit_us,miss_us\n"));
  auto it = std::back_inserter(out);
  for (const CompareRow& row : r.rows) {
    append_csv_field(out, row.name);
    const std::size_t repeats =
        row.means_us.empty() ? static_cast<std::size_t>(std::max(r.repeat, 0)) : row.means_us.size();
    fmt::format_to(it, ",{}", repeats);
    csv_number(out, row.mean_us, 3);
    csv_number(out, row.p50_us, 3);
    csv_number(out, row.p99_us, 3);
    csv_number(out, row.rps, 3);
    csv_number(out, row.wall_s, 6);
    for (const Speedup* s : {&row.mean_speedup, &row.wall_speedup}) {
      csv_number(out, s->value, 4);
      csv_number(out, s->low, 4);
      csv_number(out, s->high, 4);
    }
    fmt::format_to(it, ",{}", row.mean_speedup.noise ? "true" : "false");
    // Empty cells for tiers the configuration does not have, and for a
    // ratio without lookups.
    for (std::string_view tier : kTiers) {
      out.push_back(',');
      const CacheTierReport* t = find_tier(row, tier);
      if (t && t->stats.lookups > 0)
        fmt::format_to(it, "{:.6f}", static_cast<double>(t->stats.hits) / static_cast<double>(t->stats.lookups));
    }
    for (std::string_view tier : kTiers) {
      out.push_back(',');
      if (const CacheTierReport* t = find_tier(row, tier)) fmt::format_to(it, "{}", t->stats.bytes);
    }
    // Backend errors of all tiers (each fell through to compute).
    std::uint64_t errors = 0;
    for (const CacheTierReport& t : row.last.caches)
      errors += t.stats.errors;
    fmt::format_to(it, ",{},{}", errors, compare_mode_name(r.mode));
    // Mean µs of the requests each outcome served; empty when it served none.
    for (std::string_view outcome : {"l1_hit", "l2_hit", "l3_hit", "miss"}) {
      if (const OutcomeStats* o = outcome_cost(row, outcome))
        csv_number(out, o->mean_us, 3);
      else
        out.push_back(',');
    }
    out.push_back('\n');
  }
  return fmt::to_string(out);
}

std::string render_compare_json(const CompareResult& r) {
  using namespace report;
  JsonWriter w;
  w.begin_object();
  w.field("schema", "inferprof.compare/1");
  w.field("repeat", r.repeat);
  w.field("mode", std::string(compare_mode_name(r.mode)));
  w.field("interval", r.interval);
  if (r.mode == CompareMode::lockstep) w.field("paired_requests", r.paired);
  w.field("baseline", r.rows.empty() ? std::string() : r.rows[0].name);
  w.key("configurations").begin_array();
  for (const CompareRow& row : r.rows) {
    w.begin_object();
    w.field("name", row.name);
    w.key("tiers").begin_array();
    for (const TierSpec& t : row.tiers) {
      // Never the location: a Redis URL may hold a password. caches[].where says where.
      w.begin_object();
      w.field("tier", t.tier);
      w.field("policy", std::string(policy_name(t.policy)));
      w.field("max_entries", t.max_entries);
      w.field("max_bytes", t.max_bytes);
      w.field_number("ttl_s", t.ttl_s);
      w.field("backend", t.backend);
      w.field("spec", tier_spec_text(t));
      w.end_object();
    }
    w.end_array();
    w.field("requests", row.last.requests);
    w.field("failed", row.last.failed);
    w.field_number("mean_us", row.mean_us, 3);
    if (row.last.total.cpu) w.field_number("cpu_mean_us", row.last.total.cpu_mean_us, 3);
    w.field_number("p50_us", row.p50_us, 3);
    w.field_number("p99_us", row.p99_us, 3);
    w.field_number("rps", row.rps, 3);
    w.field_number("wall_s", row.wall_s, 6);
    w.key("means_us").begin_array(true);
    for (double v : row.means_us)
      w.number(v, 3);
    w.end_array();
    w.key("walls_s").begin_array(true);
    for (double v : row.walls_s)
      w.number(v, 6);
    w.end_array();
    json_speedup(w, "speedup", row.mean_speedup);
    json_speedup(w, "wall_speedup", row.wall_speedup);
    w.field("outliers_dominate", row.outliers_dominate);
    // Mean µs of the requests each outcome served: a tier's hit cost against the miss cost.
    w.key("outcome_costs").begin_object();
    for (const OutcomeStats& o : row.outcome_costs) {
      w.key(o.outcome).begin_object();
      w.field("count", o.count);
      w.field_number("mean_us", o.mean_us, 3);
      w.end_object();
    }
    w.end_object();
    write_cache_json(w, row.last);  // "caches", "served_by", "verify"
    w.end_object();
  }
  w.end_array();
  w.key("warnings").begin_array();
  for (const std::string& warning : notes_of(r).warnings)
    w.value(warning);
  w.end_array();
  w.field("verify_mismatches", r.verify_mismatches);
  // An interrupt keeps the configurations that completed; the others are named.
  w.field("interrupted", !r.interrupted_by.empty());
  if (!r.interrupted_by.empty()) w.field("interrupted_by", r.interrupted_by);
  w.key("not_run").begin_array();
  for (const std::string& name : r.not_run)
    w.value(name);
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace inferprof
