// report.html's building blocks (src/report/html_page.cpp) and the run page
// from a constructed summary: escaping, the plots' numbers, the sections.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "inferprof/report.hpp"
#include "report/html_page.hpp"
#include "text_util.hpp"

using namespace inferprof;
using namespace inferprof::report::html;

namespace {

using inferprof::testing::count_of;
}  // namespace

TEST_SUITE("report.html") {
  TEST_CASE("every text that reaches the page is escaped: a hostile name stays text") {
    Page page("<script>alert(1)</script>", "a & b");
    page.section("x\"y", "<b>note</b>\nsecond line");
    page.table({"name"}, {{"<img src=x onerror=alert(1)>"}});
    const std::string html = page.finish();
    CHECK(html.find("<script>alert(1)") == std::string::npos);
    CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
    CHECK(html.find("<img") == std::string::npos);
    CHECK(html.find("a &amp; b") != std::string::npos);
    CHECK(html.find("&lt;b&gt;note&lt;/b&gt;<br>second line") != std::string::npos);  // not "?"
    CHECK(html.find("data-ready") != std::string::npos);                              // the page's script marks it ran
  }

  TEST_CASE("a flame graph sits in its own frame, its markup quoted into srcdoc") {
    Page page("t", "s");
    page.flamegraph("<svg a=\"1\"><script>var x = 1 && 2;\nvar y;</script></svg>");
    const std::string html = page.finish();
    CHECK(html.find("srcdoc=\"&lt;svg a=&quot;1&quot;&gt;&lt;script&gt;var x = 1 &amp;&amp; 2;") != std::string::npos);
    CHECK(html.find("type=\"search\"") != std::string::npos);
    // Its script's line breaks survive (as a character reference), not turned into '?'.
    CHECK(html.find("2;&#10;var y;") != std::string::npos);
  }

  TEST_CASE("stacked bars: one rectangle per segment that took time, its share in its title") {
    const std::string svg = stacked_bars_svg("t", {"a", "b", "c"}, {{"mean", {300, 0, 100}}}, "per request");
    CHECK(count_of(svg, "<rect") == 2 + 3);  // two segments, three legend keys
    CHECK(svg.find("mean · a: 300.0 µs per request (75.0%)") != std::string::npos);
    CHECK(svg.find("mean · c: 100.0 µs per request (25.0%)") != std::string::npos);
  }

  TEST_CASE("interval plot: the value and its interval in words, and a bound at or below 0 draws no dot") {
    const std::string svg = interval_plot_svg("t", {{"l1", 4.5, 4.4, 4.6}, {"broken", 1.0, 0.0, 2.0}}, 1.0);
    CHECK(svg.find("4.5× [4.4, 4.6]") != std::string::npos);
    CHECK(count_of(svg, "<circle") == 1);
    CHECK(svg.find("1× (no change)") != std::string::npos);
  }

  TEST_CASE("latency CDF: each curve ends at 1, on a duration axis") {
    std::vector<double> sample;
    for (int i = 1; i <= 1000; ++i)
      sample.push_back(i * 10.0);
    const std::string svg = latency_cdf_svg("cdf", {{"all", sample}});
    CHECK(svg.find("all (1,000 requests)") != std::string::npos);
    CHECK(svg.find("10 ms") != std::string::npos);  // a decade tick as a duration, not a count
    CHECK(svg.find("<circle") == std::string::npos);
  }

  TEST_CASE("the run page: its sections, the preprocessing ops as a second bar, no caches section without tiers") {
    RunSummary s;
    s.requests = 2;
    s.info.model_path = "/m/model.pt";
    s.latency_sample_us = {1000, 3000};
    s.total.mean_us = 2000;
    s.stages[static_cast<std::size_t>(Stage::preprocess)] = StageStats{2, 3000, 1500};
    s.stages[static_cast<std::size_t>(Stage::compute)] = StageStats{2, 1000, 500};
    s.preprocess_ops = {{"preprocess.decode", StageStats{2, 2000, 1000}},
                        {"preprocess.resize", StageStats{2, 1000, 500}}};
    const std::string html = render_run_html(s, {{"request;compute", 1000}}, "inferprof run · model.pt");
    CHECK(html.find("<h2>Latency</h2>") != std::string::npos);
    CHECK(html.find("preprocess by op") != std::string::npos);
    CHECK(html.find("<td>  preprocess.resize</td>") != std::string::npos);
    CHECK(html.find("<h2>Caches</h2>") == std::string::npos);
    CHECK(html.find("srcdoc=") != std::string::npos);
  }
}
