// The cache section of the table, the markdown and summary.json: what each
// tier did (hits + misses == lookups), and latency by what served a request.
#include "report/render/cache_section.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/text.hpp"

namespace inferprof::report {

std::string tier_spec_text(const TierSpec& spec) {
  std::string limits;
  if (spec.max_entries) limits += group_thousands(spec.max_entries);
  if (spec.max_bytes) limits += (limits.empty() ? "" : ",") + human_bytes(spec.max_bytes);
  if (limits.empty()) limits = "unbounded";
  // The policy with the parameters it was given (those that differ from the defaults), as the spec spells them.
  std::string text = fmt::format("{}:{}", policy_label(spec.policy, spec.params), limits);
  if (spec.ttl_s > 0) text += fmt::format(":{}s", spec.ttl_s);
  return text;
}

namespace {
std::string ratio(std::uint64_t part, std::uint64_t whole) {
  return whole ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}
}  // namespace

std::string cache_table_lines(const RunSummary& s, bool markdown) {
  if (s.caches.empty()) return {};
  std::string out = "\n";
  std::vector<std::vector<std::string>> tiers{{"tier", "policy", "where", "lookups", "hits", "hit ratio", "inserts",
                                               "evictions", "entries", "bytes", "errors"}};
  const auto errors_cell = [](const TierStats& st) {
    return group_thousands(st.errors) + (st.degraded ? " (degraded)" : "");
  };
  // As wide as its widest cell: "603 (degraded)" would push `where` out of line.
  std::size_t errors_width = 7;
  for (const CacheTierReport& t : s.caches)
    errors_width = std::max(errors_width, display_width(errors_cell(t.stats)));
  if (!markdown) {
    out += pad_right("cache", 7) + pad_right("policy", 18) + pad_left("lookups", 10) + pad_left("hits", 10) +
           pad_left("hit %", 8) + pad_left("evicted", 10) + pad_left("entries", 10) + pad_left("bytes", 11) + ' ' +
           pad_left("errors", errors_width) + "  where\n";
  }
  for (const CacheTierReport& t : s.caches) {
    const TierStats& st = t.stats;
    std::string errors = errors_cell(st);
    if (markdown) {
      tiers.push_back({std::string(enum_name(t.spec.tier)), tier_spec_text(t.spec), t.where,
                       group_thousands(st.lookups), group_thousands(st.hits), ratio(st.hits, st.lookups),
                       group_thousands(st.inserts), group_thousands(st.evictions), group_thousands(st.entries),
                       human_bytes(st.bytes), errors});
    } else {
      out += pad_right(enum_name(t.spec.tier), 7) + pad_right(tier_spec_text(t.spec), 18) +
             pad_left(group_thousands(st.lookups), 10) + pad_left(group_thousands(st.hits), 10) +
             pad_left(ratio(st.hits, st.lookups), 8) + pad_left(group_thousands(st.evictions), 10) +
             pad_left(group_thousands(st.entries), 10) + pad_left(human_bytes(st.bytes), 11) + ' ' +
             pad_left(errors, errors_width) + "  " + t.where + '\n';
    }
  }
  if (markdown) out += markdown_table(tiers, {0, 1, 2});
  if (!s.outcomes.empty()) {
    out += "\n";
    std::vector<std::vector<std::string>> outcomes{{"served by", "requests", "share", "mean", "p50", "p99"}};
    if (!markdown) {
      out += pad_right("served by", 12) + pad_left("requests", 10) + pad_left("share", 8) + pad_left("mean", 11) +
             pad_left("p50", 11) + pad_left("p99", 11) + '\n';
    }
    for (const OutcomeStats& o : s.outcomes) {
      if (markdown) {
        outcomes.push_back({std::string(outcome_name(o.outcome)), group_thousands(o.count), ratio(o.count, s.requests),
                            human_duration_us(o.mean_us), human_duration_us(o.p50_us), human_duration_us(o.p99_us)});
      } else {
        out += pad_right(std::string(outcome_name(o.outcome)), 12) + pad_left(group_thousands(o.count), 10) +
               pad_left(ratio(o.count, s.requests), 8) + pad_left(human_duration_us(o.mean_us), 11) +
               pad_left(human_duration_us(o.p50_us), 11) + pad_left(human_duration_us(o.p99_us), 11) + '\n';
      }
    }
    if (markdown) out += markdown_table(outcomes, {0});
  }
  return out;
}

std::string verify_lines(const RunSummary& s, bool markdown) {
  if (!s.verify.enabled) return {};
  const char* what = s.caches.empty()     ? "batched results"
                     : s.batching.enabled ? "cache hits and batched results"
                                          : "cache hits";
  std::string out =
      fmt::format("\nverify: {} of the {} recomputed{} ({:.0f}% sampled): {} mismatches, max abs difference {:.3g}\n",
                  group_thousands(s.verify.checked), what, s.batching.enabled ? " one at a time" : "",
                  s.verify.fraction * 100, group_thousands(s.verify.mismatches), s.verify.max_abs_diff);
  for (const auto& e : s.verify.examples)
    out += fmt::format("  mismatch: {}\n", markdown ? markdown_cell(e) : e);
  return out;
}

void write_cache_json(JsonWriter& w, const RunSummary& s) {
  w.key("caches").begin_array();
  for (const CacheTierReport& t : s.caches) {
    const TierStats& st = t.stats;
    w.begin_object();
    w.field("tier", enum_name(t.spec.tier));
    w.field("policy", std::string(policy_name(t.spec.policy)));
    w.field("max_entries", t.spec.max_entries);
    w.field("max_bytes", t.spec.max_bytes);
    w.field_number("ttl_s", t.spec.ttl_s);
    w.field("backend", enum_name(t.spec.backend));
    w.field("where", t.where);
    w.field("lookups", st.lookups);
    w.field("hits", st.hits);
    w.field("misses", st.misses);
    w.field_number("hit_ratio", st.lookups ? static_cast<double>(st.hits) / static_cast<double>(st.lookups) : 0, 6);
    w.field("inserts", st.inserts);
    w.field("evictions", st.evictions);
    w.field("expirations", st.expirations);
    w.field("errors", st.errors);
    w.field("corrupt", st.corrupt);
    w.field("entries", st.entries);
    w.field("bytes", st.bytes);
    w.field("degraded", st.degraded);
    w.end_object();
  }
  w.end_array();
  w.key("served_by").begin_array();
  for (const OutcomeStats& o : s.outcomes) {
    w.begin_object();
    w.field("outcome", outcome_name(o.outcome));
    w.field("requests", o.count);
    w.field_number("mean_us", o.mean_us, 3);
    w.field_number("p50_us", o.p50_us, 3);
    w.field_number("p99_us", o.p99_us, 3);
    w.end_object();
  }
  w.end_array();
  w.key("verify").begin_object();
  w.field("enabled", s.verify.enabled);
  w.field_number("fraction", s.verify.fraction);
  w.field("checked", s.verify.checked);
  w.field("mismatches", s.verify.mismatches);
  w.field_number("max_abs_diff", s.verify.max_abs_diff);
  w.key("examples").begin_array();
  for (const auto& e : s.verify.examples)
    w.value(e);
  w.end_array();
  w.end_object();
}

}  // namespace inferprof::report
