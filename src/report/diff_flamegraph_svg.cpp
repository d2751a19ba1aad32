// diff-<config>.svg: a differential flame graph (Brendan Gregg's idea) of two
// runs of the same trace, e.g. a cache configuration against the baseline.
//
// Layout: the union of both runs' stacks, each stack as wide as the larger of
// its BEFORE and AFTER time per request. Sizing by AFTER alone (difffolded.pl)
// would hide what AFTER no longer does at all (with a cache, most compute
// vanishes), and per-stack maxima keep every child inside its parent, which a
// per-frame max(before, after) would not. Hover titles carry the exact times.
//
// Colour: the change of a frame's inclusive time per request, so runs of
// different lengths compare: red where it grew, blue where it shrank, more
// saturated the larger the change (on a log scale, full at 4x either way),
// grey within ±1%.
#include <algorithm>
#include <cmath>

#include "base/text.hpp"
#include "inferprof/compare_result.hpp"
#include "report/flamegraph_svg.hpp"

namespace inferprof {
namespace report {
namespace {

constexpr double kUnchanged = 0.01;  // ±1%: grey
constexpr double kFloor = 0.15;      // the faintest tint of a real change

std::string tint(double before, double after) {
  if (!(before > 0) && !(after > 0)) return "rgb(220,220,220)";
  const double ratio = before > 0 ? after / before : HUGE_VAL;
  if (std::fabs(ratio - 1) <= kUnchanged) return "rgb(220,220,220)";
  const double t = std::isfinite(ratio) && ratio > 0 ? std::min(1.0, std::fabs(std::log2(ratio)) / 2) : 1.0;
  const auto c = static_cast<int>(std::lround(230 * (1 - (kFloor + (1 - kFloor) * t))));
  return ratio > 1 ? fmt::format("rgb(255,{0},{0})", c) : fmt::format("rgb({0},{0},255)", c);
}

std::string change_text(double before, double after) {
  if (!(before > 0)) return after > 0 ? "new" : "unchanged";
  const double pct = 100 * (after - before) / before;
  if (std::fabs(pct) < 0.05) return "±0.0%";
  // U+2212, the minus sign, as hyperfine and the tables print it.
  return fmt::format("{}{:.1f}%", pct > 0 ? "+" : "\u2212", std::fabs(pct));
}

}  // namespace
}  // namespace report

std::string render_diff_flamegraph_svg(const std::vector<std::pair<std::string, std::uint64_t>>& before,
                                       std::uint64_t before_requests,
                                       const std::vector<std::pair<std::string, std::uint64_t>>& after,
                                       std::uint64_t after_requests, const std::string& title) {
  using namespace report;
  flame::Tree tree(2);
  tree.add(0, before);
  tree.add(1, after);
  tree.finish();
  // A run without requests has no per-request time; its values (normally
  // none) are taken as they are rather than divided by zero.
  const double nb = static_cast<double>(std::max<std::uint64_t>(before_requests, 1));
  const double na = static_cast<double>(std::max<std::uint64_t>(after_requests, 1));
  auto per_request = [&](std::size_t node, std::size_t profile) {
    return static_cast<double>(tree[node].totals[profile]) / (profile == 0 ? nb : na);
  };

  // Children always come after their parent in the tree, so one backward
  // pass sees every child before its parent.
  std::vector<double> width(tree.size(), 0);
  for (std::size_t i = tree.size(); i-- > 0;) {
    double w = std::max(static_cast<double>(tree.self(i, 0)) / nb, static_cast<double>(tree.self(i, 1)) / na);
    for (std::size_t c : tree[i].children)
      w += width[c];
    width[i] = w;
  }

  flame::Canvas canvas;
  canvas.title = title;
  canvas.subtitle = fmt::format(
      "red: slower in AFTER, blue: faster, grey: within ±1% · width: per stack, max(BEFORE, AFTER) per request · "
      "{} vs {} requests",
      group_thousands(before_requests), group_thousands(after_requests));
  // Tooltips are "name: 12.3 µs → 4.5 µs per request (...)"; the times never hold ": ".
  canvas.name_from_tooltip = "t.substring(0, t.lastIndexOf(': '))";
  return flame::render_svg(
      tree, width,
      [&](std::size_t node) {
        const double b = per_request(node, 0);
        const double a = per_request(node, 1);
        return flame::Look{fmt::format("{}: {} \u2192 {} per request ({})", tree[node].name, human_duration_us(b),
                                       human_duration_us(a), change_text(b, a)),
                           tint(b, a)};
      },
      canvas);
}

}  // namespace inferprof
