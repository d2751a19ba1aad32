// The sweep's rules (inferprof/sweep.hpp) and the quantile interval it reads
// (inferprof/stats.hpp), without replays; test/e2e/test_cli_sweep.cpp runs them.
#include <doctest/doctest.h>

#include <numeric>

#include "inferprof/stats.hpp"
#include "inferprof/sweep.hpp"
#include "report/render/sweep_parts.hpp"

using namespace inferprof;

namespace {

SweepStep step(double achieved, double p99_ms, double offered = 0) {
  SweepStep s;
  s.achieved_rps = achieved;
  s.offered_rps = offered;
  s.p99.value_us = p99_ms * 1000;
  return s;
}

}  // namespace

TEST_SUITE("sweep") {
  TEST_CASE("quantile interval: the order statistics around the median of 1..100, by hand") {
    std::vector<double> v(100);
    std::iota(v.begin(), v.end(), 1.0);
    // n q = 50, 1.96 x sqrt(100 x 0.25) = 9.8: ranks floor(40.2) = 40 and ceil(59.8) + 1 = 61.
    const QuantileInterval m = quantile_interval(v, 0.5);
    CHECK(m.value == 50);
    CHECK(m.low == 40);
    CHECK(m.high == 61);
    // p99 of 100 values: its upper bound is the largest value.
    const QuantileInterval p99 = quantile_interval(v, 0.99);
    CHECK(p99.value == 99);
    CHECK(p99.high == 100);
    CHECK(p99.low < 99);
    CHECK(quantile_interval({}, 0.5).value == 0);
  }

  TEST_CASE("speed: a step that serves under 95% of what it is offered is saturated") {
    SweepStep a = step(96, 5, 100), b = step(94, 5, 100);
    judge_step(SweepLoad::speed, 0, nullptr, a);
    judge_step(SweepLoad::speed, 0, &a, b);
    CHECK_FALSE(a.saturated);
    CHECK(b.saturated);
    CHECK_FALSE(b.over_slo);  // no objective
  }

  TEST_CASE("concurrency: a step under 5% above the one before is saturated, the first never is") {
    SweepStep one = step(100, 5), two = step(190, 5), three = step(195, 6);
    judge_step(SweepLoad::concurrency, 10, nullptr, one);
    judge_step(SweepLoad::concurrency, 10, &one, two);
    judge_step(SweepLoad::concurrency, 10, &two, three);
    CHECK_FALSE(one.saturated);
    CHECK_FALSE(two.saturated);
    CHECK(three.saturated);
    SweepStep slow = step(300, 10.5);
    judge_step(SweepLoad::concurrency, 10, &three, slow);
    CHECK(slow.over_slo);
  }

  TEST_CASE("capacity: interpolated on p99 between the last step within the objective and the first past it") {
    SweepCurve c;
    c.steps = {step(100, 10), step(200, 20), step(300, 40)};
    for (std::size_t k = 0; k < c.steps.size(); ++k)
      judge_step(SweepLoad::concurrency, 30, k ? &c.steps[k - 1] : nullptr, c.steps[k]);
    summarize_curve(30, c);
    CHECK(c.capacity_found);
    CHECK_FALSE(c.capacity_at_edge);
    CHECK(c.capacity_rps == doctest::Approx(250));  // p99 crosses 30 ms halfway from 20 to 40
    CHECK(c.knee == 1);                             // 20 ms is within twice 10 ms, 40 is not
  }

  TEST_CASE("knee: none when a p99 past twice the lightest step's comes back under it") {
    SweepCurve c;
    c.steps = {step(100, 10), step(200, 25), step(300, 12)};
    summarize_curve(0, c);
    CHECK(c.knee == -1);
    c.steps.push_back(step(400, 30));
    summarize_curve(0, c);
    CHECK(c.knee == 2);
  }

  TEST_CASE("capacity: at least the last step when every step met the objective, none when the first missed it") {
    SweepCurve all;
    all.steps = {step(100, 1), step(200, 2)};
    summarize_curve(30, all);
    CHECK(all.capacity_at_edge);
    CHECK(all.capacity_rps == 200);
    SweepCurve none;
    none.steps = {step(100, 50)};
    judge_step(SweepLoad::speed, 30, nullptr, none.steps[0]);
    summarize_curve(30, none);
    CHECK_FALSE(none.capacity_found);
    SweepResult r;
    r.slo_ms = 30;
    r.curves = {none};
    r.curves[0].name = "l1";
    CHECK(report::sweep_parts::capacity_lines(r)[0].find("no step met p99 ≤ 30 ms") != std::string::npos);
  }

  TEST_CASE("bisection: halfway between the last good step and the first bad one, none without such a pair") {
    SweepCurve c;
    c.steps = {step(100, 10), step(200, 20), step(300, 40)};
    for (std::size_t k = 0; k < c.steps.size(); ++k) {
      c.steps[k].load = static_cast<double>(k + 1);
      judge_step(SweepLoad::speed, 30, nullptr, c.steps[k]);
    }
    CHECK(bisection_load(c) == 2.5);
    c.steps.insert(c.steps.begin() + 2, step(250, 35));  // the bisection step, past the objective
    c.steps[2].load = 2.5;
    judge_step(SweepLoad::speed, 30, nullptr, c.steps[2]);
    CHECK(bisection_load(c) == 2.25);
    summarize_curve(30, c);
    CHECK(c.capacity_rps == doctest::Approx(200 + 50 * (10.0 / 15)));  // now between 2x and 2.5x
    SweepCurve all_good;
    all_good.steps = {step(100, 1)};
    CHECK(bisection_load(all_good) == 0);
    SweepCurve first_bad;
    first_bad.steps = {step(100, 50)};
    judge_step(SweepLoad::speed, 30, nullptr, first_bad.steps[0]);
    CHECK(bisection_load(first_bad) == 0);
  }

  TEST_CASE("capacity without an objective: the most any step served, saturated or not") {
    SweepCurve c;
    c.steps = {step(100, 1, 100), step(150, 9, 200)};
    for (std::size_t k = 0; k < c.steps.size(); ++k)
      judge_step(SweepLoad::speed, 0, k ? &c.steps[k - 1] : nullptr, c.steps[k]);
    CHECK(c.steps[1].saturated);
    summarize_curve(0, c);
    CHECK(c.capacity_rps == 150);
  }
}
