// The model-update section of the table, the markdown and summary.json: per
// update, what the switch cost (stalls, stale results, the load itself) and
// latency before, while it was pending, and after it went live.
#include "report/render/update_section.hpp"

#include <fmt/format.h>

#include "base/text.hpp"

namespace inferprof::report {

namespace {

std::string ms(double v) {
  return v < 0 ? "-" : fmt::format("{:.1f} ms", v);
}

std::string phase(const LatencyStats& l) {
  if (l.count == 0) return "-";
  return fmt::format("{} / {} ({})", human_duration_us(l.p50_us), human_duration_us(l.p99_us),
                     group_thousands(l.count));
}

void write_phase(JsonWriter& w, std::string_view name, const LatencyStats& l) {
  w.key(name).begin_object();
  w.field("requests", l.count);
  w.field_number("mean_us", l.mean_us, 3);
  w.field_number("p50_us", l.p50_us, 3);
  w.field_number("p99_us", l.p99_us, 3);
  w.field_number("max_us", l.max_us, 3);
  w.end_object();
}

}  // namespace

std::string update_table_lines(const RunSummary& s, bool markdown) {
  if (s.updates.empty()) return {};
  std::string out = "\n";
  std::vector<std::vector<std::string>> cells{{"update", "mode", "announced", "live after", "load", "from", "stalled",
                                               "stall", "stale served", "p50 / p99 before", "during", "after"}};
  if (!markdown) {
    out += "model updates (p50 / p99 (requests) before the announcement, while pending, after it went live)\n";
    out += pad_right("update", 22) + pad_right("mode", 8) + pad_left("at", 10) + pad_left("live after", 11) +
           pad_left("load", 10) + pad_left("from", 8) + pad_left("stalled", 9) + pad_left("stall", 11) +
           pad_left("stale", 7) + "  " + pad_right("before", 26) + pad_right("during", 26) + "after\n";
  }
  for (const UpdateReport& u : s.updates) {
    const std::string name = fmt::format("{} -> {}", u.from_version, u.to_version);
    const double live_after = u.live_ms >= 0 ? u.live_ms - u.announced_ms : -1;
    const std::string load = u.error.empty() ? ms(u.fetch_ms + u.deserialize_ms) : "failed";
    if (markdown) {
      cells.push_back({name, u.mode, ms(u.announced_ms), ms(live_after), load, u.served_by.empty() ? "-" : u.served_by,
                       group_thousands(u.stalled), ms(u.stall_ms), group_thousands(u.stale_served), phase(u.before),
                       phase(u.during), phase(u.after)});
    } else {
      out += pad_right(name, 22) + pad_right(u.mode, 8) + pad_left(ms(u.announced_ms), 10) +
             pad_left(ms(live_after), 11) + pad_left(load, 10) + pad_left(u.served_by.empty() ? "-" : u.served_by, 8) +
             pad_left(group_thousands(u.stalled), 9) + pad_left(ms(u.stall_ms), 11) +
             pad_left(group_thousands(u.stale_served), 7) + "  " + pad_right(phase(u.before), 26) +
             pad_right(phase(u.during), 26) + phase(u.after) + '\n';
    }
  }
  if (markdown) out += markdown_table(cells, {0, 1, 5});
  return out;
}

void write_updates_json(JsonWriter& w, const RunSummary& s) {
  w.key("updates").begin_array();
  for (const UpdateReport& u : s.updates) {
    w.begin_object();
    w.field("model", u.model);
    w.field("from_version", u.from_version);
    w.field("to_version", u.to_version);
    w.field("mode", u.mode);
    w.field_number("announced_ms", u.announced_ms, 3);
    if (u.live_ms >= 0) {
      w.field_number("live_ms", u.live_ms, 3);
      w.field_number("live_unix_ms", u.live_unix_ms, 3);
    } else {
      w.key("live_ms").null();
      w.key("live_unix_ms").null();
    }
    w.field_number("fetch_ms", u.fetch_ms, 3);
    w.field_number("deserialize_ms", u.deserialize_ms, 3);
    w.field("served_by", u.served_by);
    w.field("stalled", u.stalled);
    w.field_number("stall_ms", u.stall_ms, 3);
    w.field("stale_served", u.stale_served);
    w.field("invalidated", u.invalidated);
    write_phase(w, "before", u.before);
    write_phase(w, "during", u.during);
    write_phase(w, "after", u.after);
    w.field("error", u.error);
    w.end_object();
  }
  w.end_array();
}

}  // namespace inferprof::report
