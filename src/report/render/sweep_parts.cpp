// The shared cells and sentences of sweep's reporters (sweep_parts.hpp).
#include "report/render/sweep_parts.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/text.hpp"
#include "report/render/cache_section.hpp"

namespace inferprof::report::sweep_parts {

namespace {

std::string with_interval(const PercentileEstimate& p) {
  return fmt::format("{} [{}, {}]", human_duration_us(p.value_us), human_duration_us(p.low_us),
                     human_duration_us(p.high_us));
}

std::string tiers_text(const SweepCurve& c) {
  std::string out;
  for (const TierSpec& t : c.tiers)
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", enum_name(t.tier), tier_spec_text(t));
  return out.empty() ? "no cache" : out;
}

// " (149.0–202.6 at its steps' slowest and fastest service, 0.98–1.25×)":
// how far the service times' drift over the steps (the machine's, the
// load's) moves the model's capacity.
std::string pace_range_text(const SweepCurve& c) {
  if (!(c.model_pace_min < c.model_pace_max)) return {};
  const auto cap = [](double rps, bool at_least) {
    return rps > 0 ? (at_least ? "\u2265" : "") + grouped_fixed(rps, 1) : std::string("not met");
  };
  return fmt::format(" ({}\u2013{} at its steps' slowest and fastest service, {:.2f}\u2013{:.2f}\u00d7)",
                     cap(c.model_capacity_low_rps, c.model_capacity_low_at_edge),
                     cap(c.model_capacity_high_rps, c.model_capacity_high_at_edge), c.model_pace_min, c.model_pace_max);
}

}  // namespace

std::string load_label(const SweepResult& r, double load) {
  if (r.load == SweepLoad::speed) return fmt::format("{:g}×", load);
  if (r.load == SweepLoad::rate) return fmt::format("{:g}/s", load);
  return fmt::format("{:g}", load);
}

std::string headline(const SweepResult& r) {
  std::string steps = r.loads.empty() ? "" : load_label(r, r.loads.front()) + "–" + load_label(r, r.loads.back());
  std::vector<std::string> models;  // several swept: each curve names its own
  for (const SweepCurve& c : r.curves)
    if (!c.model_path.empty() && std::find(models.begin(), models.end(), c.model_path) == models.end())
      models.push_back(c.model_path);
  return fmt::format(
      "inferprof sweep · {} · {} · {} requests{} · {} {}{}{}",
      models.size() > 1 ? fmt::format("{} models", models.size()) : base_name(r.model_path), base_name(r.trace_path),
      group_thousands(r.trace_requests),
      r.measure_after > 0 ? fmt::format(" (the first {} unmeasured)", group_thousands(r.measure_after)) : "",
      sweep_load_name(r.load), steps, r.slo_ms > 0 ? fmt::format(" · p99 ≤ {:g} ms", r.slo_ms) : "",
      r.interrupted_by.empty() ? "" : " · interrupted by " + r.interrupted_by);
}

bool any_modelled(const SweepResult& r) {
  return std::any_of(r.curves.begin(), r.curves.end(), [](const SweepCurve& c) { return c.modelled; });
}

std::vector<std::vector<std::string>> step_cells(const SweepResult& r) {
  const bool modelled = any_modelled(r);
  std::vector<std::vector<std::string>> cells{{"caches",
                                               r.load == SweepLoad::speed  ? "speed"
                                               : r.load == SweepLoad::rate ? "rate"
                                                                           : "workers",
                                               "offered/s", "served/s", "p50 (95% CI)", "p90", "p99 (95% CI)", "queue",
                                               "cpu/req", "step"}};
  // The model's p99 and the step's service pace (its services over the
  // model's): a step far off its model with a pace far from 1 ran slow or fast.
  if (modelled) cells[0].insert(cells[0].begin() + 7, {"p99 model", "pace"});
  for (const SweepCurve& c : r.curves)
    for (std::size_t k = 0; k < c.steps.size(); ++k) {
      const SweepStep& s = c.steps[k];
      std::string verdict = s.over_slo ? "past SLO" : s.saturated ? "saturated" : "ok";
      if (s.refined) verdict += " (bisection)";
      if (s.tries_p99_us.size() > 1) verdict += fmt::format(" ({} tries)", s.tries_p99_us.size());
      if (static_cast<int>(k) == c.knee) verdict += ", knee";
      cells.push_back({k == 0 ? c.name : "", load_label(r, s.load),
                       s.offered_rps > 0 ? grouped_fixed(s.offered_rps, 1) : "-", grouped_fixed(s.achieved_rps, 1),
                       with_interval(s.p50), human_duration_us(s.p90.value_us), with_interval(s.p99),
                       share_text(s.queue_share), s.cpu ? human_duration_us(s.cpu_mean_us) : "n/a", verdict});
      if (modelled)
        cells.back().insert(cells.back().begin() + 7,
                            {c.modelled ? human_duration_us(s.model_p99_us) : "-",
                             s.service_pace > 0 ? fmt::format("{:.2f}×", s.service_pace) : "-"});
    }
  return cells;
}

std::vector<std::string> capacity_lines(const SweepResult& r) {
  std::vector<std::string> out;
  for (const SweepCurve& c : r.curves) {
    if (c.steps.empty()) {
      out.push_back(fmt::format("{} ({}): no step completed", c.name, tiers_text(c)));
      continue;
    }
    std::string line = fmt::format("{} ({}): ", c.name, tiers_text(c));
    const std::string objective = r.slo_ms > 0 ? fmt::format(" at p99 ≤ {:g} ms", r.slo_ms) : " (its most, saturated)";
    if (!c.capacity_found)
      line += fmt::format("no step met p99 ≤ {:g} ms, not even {}", r.slo_ms, load_label(r, c.steps.front().load));
    else
      line += fmt::format("{}{} req/s{}", c.capacity_at_edge ? "at least " : "", grouped_fixed(c.capacity_rps, 1),
                          objective);
    if (c.knee >= 0)
      line +=
          fmt::format("; knee at {} ({} req/s, p99 {})", load_label(r, c.steps[c.knee].load),
                      grouped_fixed(c.steps[c.knee].achieved_rps, 1), human_duration_us(c.steps[c.knee].p99.value_us));
    if (c.modelled)
      line += !c.model_capacity_found
                  ? "; queueing model: not met even at light load"
                  : fmt::format("; queueing model: {}{} req/s{}", c.model_capacity_at_edge ? "at least " : "",
                                grouped_fixed(c.model_capacity_rps, 1), pace_range_text(c));
    line += c.stopped.empty() ? "; every step ran" : "; stopped: " + c.stopped;
    out.push_back(line);
  }
  return out;
}

std::string method_note(const SweepResult& r) {
  std::string how;
  if (r.load == SweepLoad::speed)
    how = fmt::format(
        "Each step replays the trace's own arrivals sped up (open loop, {} worker{}); offered/s is its requests over "
        "its span at that speed; a step serving under 95% of it is saturated.",
        r.concurrency, r.concurrency == 1 ? "" : "s");
  else if (r.load == SweepLoad::rate)
    how = fmt::format(
        "Each step replays the trace's requests in order at Poisson arrivals of that rate (open loop, {} worker{}; "
        "the same seeded arrivals for every configuration and every sweep); a step serving under 95% of its rate is "
        "saturated.",
        r.concurrency, r.concurrency == 1 ? "" : "s");
  else
    how =
        "Each step replays the trace closed-loop with that many workers; a step serving under 5% more than the one "
        "before is saturated.";
  return how +
         " Every step is a whole replay from cold caches, the configurations taking turns step by step. A "
         "configuration stops at its first saturated step or its first past the objective. Percentile intervals "
         "are distribution-free (order statistics of the step's requests): the spread of traffic like this trace, "
         "not of one replay's timing. The capacity is interpolated on p99 between the last step within the objective "
         "and the first past it (--refine adds bisection steps between them first); the knee is the step after "
         "which p99 stays above twice the lightest step's." +
         (any_modelled(r)
              ? std::string(
                    " The queueing model feeds each request's service time (its median over the steps, at the "
                    "steps' mean pace) through a FIFO queue at the trace's arrivals scaled to any load: its p99 sits "
                    "beside each step's, and its capacity is where that p99 meets the objective. It holds the bursts "
                    "fixed and takes each request's typical service, so one unlucky step does not decide it; it "
                    "still moves with the machine's pace (a step's pace: its services over the model's). Where it "
                    "parts from the measured p99 at a step, something besides queueing (contention, the caches' "
                    "timing) moved the latency.")
              : std::string());
}

}  // namespace inferprof::report::sweep_parts
