// The gate grammar and the gate decision (inferprof/gate.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "inferprof/error.hpp"
#include "inferprof/gate.hpp"
#include "inferprof/timing.hpp"

namespace inferprof {
namespace {

constexpr std::string_view kGrammar =
    "expected [STAGE.][cpu.|wall.]METRIC=PCT%[+FLOOR(ms|us)], e.g. total.cpu.p50=5%,compute.mean=5%+0.05ms";
constexpr std::array<std::string_view, 6> kMetrics = {"mean", "p50", "p90", "p99", "max", "throughput"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

Error gate_error(std::string_view option, std::string_view item, const std::string& what) {
  return bad_input(fmt::format("{}: {} in '{}'; {}", option, what, item, kGrammar));
}

// The whole of `s` as a finite number, or nothing.
std::optional<double> number(std::string_view s) {
  if (s.empty() || s.front() == '+' || s.front() == '-' || std::isspace(static_cast<unsigned char>(s.front())))
    return std::nullopt;
  std::string text(s);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string stage_list() {
  std::string out;
  for (auto name : kStageNames)
    out += fmt::format("{}, ", name);
  return out + "total";
}

GateSpec parse_gate(std::string_view item, std::string_view option) {
  GateSpec g;
  g.text = std::string(item);
  const auto eq = item.find('=');
  if (eq == std::string_view::npos) throw gate_error(option, item, "no '='");
  std::string_view lhs = trim(item.substr(0, eq)), rhs = trim(item.substr(eq + 1));

  // [STAGE.][CLOCK.]METRIC: no stage is called cpu or wall, so two parts read either way.
  std::vector<std::string_view> parts;
  for (std::size_t from = 0;;) {
    const auto dot = lhs.find('.', from);
    parts.push_back(lhs.substr(from, dot == std::string_view::npos ? std::string_view::npos : dot - from));
    if (dot == std::string_view::npos) break;
    from = dot + 1;
  }
  if (parts.size() > 4) throw gate_error(option, item, fmt::format("'{}' has more than four parts", lhs));
  const bool is_clock = parts.size() > 1 && (parts[parts.size() - 2] == "cpu" || parts[parts.size() - 2] == "wall");
  const std::size_t stage_parts = parts.size() - 1 - (is_clock ? 1 : 0);
  // A stage has at most one part of its own: preprocess.OP, a preprocessing op.
  if (stage_parts == 2 && parts[0] != "preprocess")
    throw gate_error(option, item, fmt::format("unknown clock '{}' (expected cpu or wall)", parts[parts.size() - 2]));
  if (stage_parts > 2)
    throw gate_error(option, item, fmt::format("unknown clock '{}' (expected cpu or wall)", parts[2]));
  const std::string_view metric = parts.back();
  g.stage = "*";
  if (stage_parts >= 1) {
    std::string_view stage = parts[0];
    const bool known =
        stage == "total" || std::find(kStageNames.begin(), kStageNames.end(), stage) != kStageNames.end();
    if (!known)
      throw gate_error(option, item, fmt::format("unknown stage '{}' (expected one of {})", stage, stage_list()));
    g.stage = std::string(stage);
  }
  if (stage_parts == 2) {
    // Which ops the runs have is known only when they are read: there an unknown one is named.
    const std::string_view op = parts[1];
    const bool name = !op.empty() && std::all_of(op.begin(), op.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
    if (!name)
      throw gate_error(option, item, fmt::format("'{}' is not a preprocessing op's name (e.g. preprocess.resize)", op));
    g.stage = fmt::format("preprocess.{}", op);
  }
  if (is_clock) g.clock = std::string(parts[parts.size() - 2]);
  if (std::find(kMetrics.begin(), kMetrics.end(), metric) == kMetrics.end())
    throw gate_error(option, item,
                     fmt::format("unknown metric '{}' (expected one of mean, p50, p90, p99, max, throughput)", metric));
  g.metric = std::string(metric);
  if (g.metric == "throughput") {
    if ((g.stage != "*" && g.stage != "total") || is_clock)
      throw gate_error(option, item,
                       "throughput belongs to the whole run, not to a stage or a clock (write throughput=PCT%)");
    g.stage = "";
  }
  if (g.clock == "cpu") {
    // What summary.json records of thread CPU time.
    if (g.metric != "mean" && g.metric != "p50" && g.metric != "p99")
      throw gate_error(option, item,
                       fmt::format("cpu time has no {} (expected cpu.mean, cpu.p50 or cpu.p99)", g.metric));
    if (g.stage == "queue") throw gate_error(option, item, "queue is waiting, it has no cpu time");
  }

  std::string_view pct = rhs, floor;
  if (auto plus = rhs.find('+'); plus != std::string_view::npos) {
    pct = trim(rhs.substr(0, plus));
    floor = trim(rhs.substr(plus + 1));
    if (g.metric == "throughput")
      throw gate_error(option, item, "an absolute floor applies to latencies, not to throughput");
  }
  if (pct.empty() || pct.back() != '%')
    throw gate_error(option, item,
                     fmt::format("'{}' is not a percentage (expected a number followed by %, e.g. 10%)", pct));
  auto p = number(trim(pct.substr(0, pct.size() - 1)));
  if (!p)
    throw gate_error(option, item,
                     fmt::format("'{}' is not a percentage (expected a number followed by %, e.g. 10%)", pct));
  g.pct = *p;
  if (g.metric == "throughput") g.floor_us = 0;
  if (!floor.empty() || rhs.find('+') != std::string_view::npos) {
    double scale = 0;
    std::string_view digits;
    if (floor.size() > 2 && floor.substr(floor.size() - 2) == "ms") {
      scale = 1000, digits = floor.substr(0, floor.size() - 2);
    } else if (floor.size() > 2 && floor.substr(floor.size() - 2) == "us") {
      scale = 1, digits = floor.substr(0, floor.size() - 2);
    } else if (floor.size() > 3 && floor.substr(floor.size() - 3) == "\xC2\xB5s") {  // µs
      scale = 1, digits = floor.substr(0, floor.size() - 3);
    }
    auto f = scale > 0 ? number(trim(digits)) : std::nullopt;
    if (!f)
      throw gate_error(
          option, item,
          fmt::format("'{}' is not a duration (expected a number followed by ms or us, e.g. +0.05ms)", floor));
    g.floor_us = *f * scale;
    g.floor_given = true;
  }
  return g;
}

}  // namespace

std::vector<GateSpec> parse_gates(std::string_view text, std::string_view option) {
  std::vector<GateSpec> gates;
  if (trim(text).empty()) throw bad_input(fmt::format("{}: no gates given; {}", option, kGrammar));
  std::size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    std::string_view item =
        trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (item.empty()) throw bad_input(fmt::format("{}: an empty item in '{}'; {}", option, text, kGrammar));
    GateSpec g = parse_gate(item, option);
    for (const GateSpec& other : gates)
      if (other.stage == g.stage && other.clock == g.clock && other.metric == g.metric)
        throw gate_error(option, item, fmt::format("a second gate for the same metric (first: '{}')", other.text));
    gates.push_back(std::move(g));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return gates;
}

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::ok:
      return "ok";
    case Verdict::regression:
      return "REGRESSION";
    case Verdict::improved:
      return "improved";
    case Verdict::noise:
      return "noise";
    case Verdict::unstable:
      return "unstable";
    case Verdict::none:
      break;
  }
  return "-";
}

double gate_limit(const GateSpec& spec, double base) {
  return std::abs(base) * spec.pct / 100.0 + spec.floor_us;
}

Verdict judge(const Change& c, double limit, bool higher_is_better) {
  // Orient so that a positive delta is always the bad direction.
  const double sign = higher_is_better ? -1.0 : 1.0;
  const double worse = sign * c.delta();
  if (std::abs(worse) <= limit) return Verdict::ok;
  // Past the threshold: clear only if the whole interval lies past it too.
  // An interval that merely excludes 0 is not enough: a change of 1% known
  // precisely is not a 5% regression.
  bool clear = true;
  if (c.interval) {
    const double a = sign * c.interval->first, b = sign * c.interval->second;
    const double lo = std::min(a, b), hi = std::max(a, b);
    clear = worse > 0 ? lo > limit : hi < -limit;
  }
  if (!clear) return Verdict::noise;
  return worse > 0 ? Verdict::regression : Verdict::improved;
}

}  // namespace inferprof
