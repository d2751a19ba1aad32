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

// Steps at loads 1, 2 and 3 (100, 200, 300 req/s offered), the last past any objective.
SweepCurve three_steps() {
  SweepCurve curve;
  curve.steps = {step(100, 5, 100), step(200, 5, 200), step(260, 90, 300)};
  curve.steps[0].load = 1, curve.steps[1].load = 2, curve.steps[2].load = 3;
  return curve;
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

  TEST_CASE("FIFO queue: one server waits in line, two take the first free, by hand") {
    // One server: arrivals 0, 1, 2 µs, 2 µs each: the second waits 1, the third 2.
    CHECK(fifo_latencies_us({0, 1, 2}, {2, 2, 2}, 1) == std::vector<double>{2, 3, 4});
    // Two servers: a long request holds one, the short ones share the other.
    CHECK(fifo_latencies_us({0, 0, 0}, {5, 1, 1}, 2) == std::vector<double>{5, 1, 2});
    // Gaps longer than the service: nobody waits.
    CHECK(fifo_latencies_us({0, 10, 20}, {3, 3, 3}, 1) == std::vector<double>{3, 3, 3});
    std::vector<double> v(100);
    std::iota(v.begin(), v.end(), 1.0);
    CHECK(nearest_rank_quantile(v, 0.99) == 99);
    CHECK(nearest_rank_quantile(v, 0.5) == 50);
  }

  TEST_CASE("queueing model at the steps' slowest and fastest pace, by hand") {
    // 100 requests 10 ms apart at unit load, one worker; the steps served
    // each in 5, 4 and 6 ms: medians 5, paces 0.8 to 1.2, mean 1. With service S
    // the 99th value (k = 98) is S + 98 (S - 10/x) = 7 ms at x = 10 / (S - (7 - S) / 98):
    // 200.82 req/s at 5 ms, 251.93 at 4, 166.95 at 6.
    SweepServiceTimes in;
    std::vector<QueueSample> samples(100);
    for (double load : {1.0, 2.0, 3.0}) {
      const double service = load == 1 ? 5'000 : load == 2 ? 4'000 : 6'000;
      for (std::size_t k = 0; k < samples.size(); ++k)
        samples[k] = QueueSample{10'000.0 * static_cast<double>(k) / load, service, true};
      in.add(samples, load, 100 * load);
    }
    SweepCurve curve = three_steps();
    model_curve(7, in, curve);
    REQUIRE(curve.modelled);
    CHECK(curve.model_pace_min == doctest::Approx(0.8));
    CHECK(curve.model_pace_max == doctest::Approx(1.2));
    CHECK(curve.model_capacity_rps == doctest::Approx(100 * 10 / (5 - 2.0 / 98)).epsilon(1e-6));
    CHECK(curve.model_capacity_high_rps == doctest::Approx(100 * 10 / (4 - 3.0 / 98)).epsilon(1e-6));
    CHECK(curve.model_capacity_low_rps == doctest::Approx(100 * 10 / (6 - 1.0 / 98)).epsilon(1e-6));
    CHECK_FALSE(curve.model_capacity_low_at_edge);
    CHECK_FALSE(curve.model_capacity_high_at_edge);
    // Each step's own pace, relative to the median step's: which ones were slow.
    CHECK(curve.steps[0].service_pace == doctest::Approx(1.0));
    CHECK(curve.steps[1].service_pace == doctest::Approx(0.8));
    CHECK(curve.steps[2].service_pace == doctest::Approx(1.2));
    // One step: one pace, and the range is the capacity itself at both ends.
    SweepServiceTimes one;
    for (std::size_t k = 0; k < samples.size(); ++k)
      samples[k] = QueueSample{10'000.0 * static_cast<double>(k), 5'000, true};
    one.add(samples, 1.0, 100);
    SweepCurve single;
    single.steps = {step(100, 5, 100)};
    single.steps[0].load = 1;
    model_curve(6, one, single);
    CHECK(single.model_pace_min == doctest::Approx(1.0));
    CHECK(single.model_pace_max == doctest::Approx(1.0));
    CHECK(single.model_capacity_low_rps == doctest::Approx(single.model_capacity_rps));
    CHECK(single.model_capacity_high_rps == doctest::Approx(single.model_capacity_rps));
  }

  TEST_CASE("queueing model: the capacity where a known queue's p99 meets the objective") {
    // 100 requests 10 ms apart at unit load (100 req/s), 5 ms of service each, one worker.
    // Up to load 2 nobody waits (p99 5 ms); past it request k waits k (5 - 10/x) ms, so
    // p99 (k = 98) is 6 ms at x = 10 / (5 - 1/98): 200.41 req/s.
    SweepServiceTimes in;
    std::vector<QueueSample> samples(100);
    for (std::size_t k = 0; k < samples.size(); ++k)
      samples[k] = QueueSample{10'000.0 * static_cast<double>(k), 5'000, true};
    in.add(samples, 1.0, 100);
    for (QueueSample& q : samples)  // the same requests at load 4: arrivals 4x closer, 7 ms each once
      q.arrival_us /= 4, q.service_us = 7'000;
    in.add(samples, 4.0, 400);
    for (QueueSample& q : samples)  // and 3 ms at load 2: the median of 5, 7, 3 is 5, the mean pace 1
      q.arrival_us *= 2, q.service_us = 3'000;
    in.add(samples, 2.0, 200);
    REQUIRE(in.service_us.size() == 3);
    CHECK(in.offered_per_load == doctest::Approx(100));
    SweepCurve curve;
    curve.steps = {step(100, 5, 100), step(200, 5, 200), step(260, 90, 400)};
    curve.steps[0].load = 1, curve.steps[1].load = 2, curve.steps[2].load = 4;
    model_curve(6, in, curve);
    REQUIRE(curve.modelled);
    CHECK(curve.model_capacity_found);
    CHECK_FALSE(curve.model_capacity_at_edge);
    CHECK(curve.model_capacity_rps == doctest::Approx(100 * 10 / (5 - 1.0 / 98)).epsilon(1e-6));
    CHECK(curve.steps[0].model_p99_us == doctest::Approx(5'000));
    CHECK(curve.steps[1].model_p99_us == doctest::Approx(5'000));
    CHECK(curve.steps[2].model_p99_us == doctest::Approx(5'000 + 98 * 2'500));  // 10/4 = 2.5 ms gaps
    // A looser objective than load 5 (1.25x the heaviest step) can reach: at least that.
    SweepCurve loose = curve;
    model_curve(1'000, in, loose);
    CHECK(loose.model_capacity_at_edge);
    CHECK(loose.model_capacity_rps == doctest::Approx(500));
    // Tighter than the service time itself: not met at any load.
    SweepCurve tight = curve;
    model_curve(4, in, tight);
    CHECK_FALSE(tight.model_capacity_found);
    // The steps' pace: 5, 7 and 3 ms against medians of 5: 0.6 to 1.4. At 1.4
    // every service is 7 ms, past the 6 ms objective: not met there; at 0.6, 3 ms.
    CHECK(curve.model_pace_min == doctest::Approx(0.6));
    CHECK(curve.model_pace_max == doctest::Approx(1.4));
    CHECK(curve.model_capacity_high_rps == doctest::Approx(100 * 10 / (3 - 3.0 / 98)).epsilon(1e-6));
    CHECK(curve.model_capacity_low_rps == 0);
    // Batched curves and sweeps without an objective have no model.
    SweepCurve batched = curve;
    batched.max_batch = 8;
    model_curve(6, in, batched);
    CHECK_FALSE(batched.modelled);
  }

  TEST_CASE("median_of_tries: the try with the median p99 stands, with every try's p99 in run order") {
    std::vector<SweepStep> tries = {step(100, 60), step(101, 40), step(102, 55)};
    tries[0].over_slo = true;
    tries[2].over_slo = true;
    const SweepStep m = median_of_tries(tries);
    CHECK(m.p99.value_us == 55000);
    CHECK(m.achieved_rps == 102);  // the whole try, not a mix of tries
    CHECK(m.over_slo);
    CHECK(m.tries_p99_us == std::vector<double>{60000, 40000, 55000});
    // A burst in one try of three: the two within the objective decide.
    std::vector<SweepStep> burst = {step(100, 90), step(100, 30), step(100, 35)};
    burst[0].over_slo = true;
    CHECK_FALSE(median_of_tries(burst).over_slo);
    CHECK(median_of_tries(burst).p99.value_us == 35000);
    // Cut short at two tries, both past it: the lower one.
    CHECK(median_of_tries({step(100, 70), step(100, 60)}).p99.value_us == 60000);
    // One try: itself, with no list.
    const SweepStep one = median_of_tries({step(100, 70)});
    CHECK(one.p99.value_us == 70000);
    CHECK(one.tries_p99_us.empty());
  }

  TEST_CASE("queueing model: the medians serve at the steps' mean pace, by hand") {
    // 100 requests 10 ms apart at unit load, one worker, 5 ms each, except
    // that one step served the first half in 8 ms and another the second
    // half: every request's median is 5 ms (500 ms in all), while the steps
    // took 650, 650 and 500 ms, paces 1.3, 1.3 and 1.0, mean 1.2. At that
    // pace each request takes 6 ms: p99 (k = 98) is S + 98 (S - 10/x) =
    // 7.5 ms at x = 10 / (6 - 1.5/98), 167.09 req/s; at the slowest step's,
    // 6.5 ms, x = 10 / (6.5 - 1/98); at the fastest step's, 5 ms, x = 10 / (5 - 2.5/98).
    SweepServiceTimes in;
    std::vector<QueueSample> samples(100);
    for (int which = 0; which < 3; ++which) {
      const double load = 1.0 + which;
      for (std::size_t k = 0; k < samples.size(); ++k) {
        const bool slow = (which == 0 && k < 50) || (which == 1 && k >= 50);
        samples[k] = QueueSample{10'000.0 * static_cast<double>(k) / load, slow ? 8'000.0 : 5'000.0, true};
      }
      in.add(samples, load, 100 * load);
    }
    SweepCurve curve = three_steps();
    model_curve(7.5, in, curve);
    REQUIRE(curve.modelled);
    CHECK(curve.model_pace_min == doctest::Approx(1.0 / 1.2));
    CHECK(curve.model_pace_max == doctest::Approx(1.3 / 1.2));
    CHECK(curve.model_capacity_rps == doctest::Approx(100 * 10 / (6 - 1.5 / 98)).epsilon(1e-6));
    CHECK(curve.model_capacity_low_rps == doctest::Approx(100 * 10 / (6.5 - 1.0 / 98)).epsilon(1e-6));
    CHECK(curve.model_capacity_high_rps == doctest::Approx(100 * 10 / (5 - 2.5 / 98)).epsilon(1e-6));
  }
}
