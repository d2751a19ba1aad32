// End-to-end: report.html of run, compare, simulate and sweep, as a person opens it.
// The file is checked for being self-contained (no network), and when
// Debian's chromium is installed (scripts/install-deps.sh --test) it is
// loaded headless: its script runs to the end with no console error, and a
// screenshot is kept in the build's test-artifacts/ folder.
#include <doctest/doctest.h>

#include <regex>

#include "cli_harness.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

struct HtmlFixture {
  TempDir dir;
  std::string model = dir.file("m.pt"), trace = dir.file("t.jsonl");
  HtmlFixture() { make_model_and_trace(model, trace, {"--requests", "60", "--keys", "20"}); }
};
HtmlFixture& html_fixture() {
  static HtmlFixture f;
  return f;
}

// Nothing in the page may reach the network: no external script, style,
// image, frame or font (the SVG namespace attribute is a name, not a fetch).
void check_self_contained(const std::string& html) {
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("</html>") != std::string::npos);
  const std::regex external(R"((src|href|action)\s*=\s*["']?(https?:)?//|<link|@import|url\(\s*["']?https?:)",
                            std::regex::icase);
  CHECK_FALSE(std::regex_search(html, external));
}

std::string chromium() {
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(c)) return c;
  return {};
}

// Loads `page` in headless chromium: the DOM after its scripts ran, and its
// console errors; a screenshot goes to test-artifacts/`shot`.
struct Loaded {
  std::string dom, errors;
  bool screenshot = false;
};
Loaded load_in_browser(const std::string& browser, const std::string& page, const std::string& shot) {
  TempDir tmp;
  const std::string dom = tmp.file("dom.html"), log = tmp.file("log");
  const std::string flags =
      "--headless --no-sandbox --disable-gpu --no-first-run --disable-extensions "
      "--allow-file-access-from-files --user-data-dir=" +
      shell_quote(tmp.file("profile")) + " --virtual-time-budget=3000 ";
  const std::string url = shell_quote("file://" + page);
  std::system((shell_quote(browser) + " " + flags + "--enable-logging=stderr --v=0 --dump-dom " + url + " >" +
               shell_quote(dom) + " 2>" + shell_quote(log))
                  .c_str());
  Loaded out;
  out.dom = slurp(dom);
  for (const std::string& line : [&] {
         std::vector<std::string> lines;
         std::istringstream in(slurp(log));
         for (std::string l; std::getline(in, l);)
           lines.push_back(l);
         return lines;
       }())
    if (line.find("CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos)
      out.errors += line + '\n';
  fs::create_directories(INFERPROF_TEST_ARTIFACTS_DIR);
  const std::string png = (fs::path(INFERPROF_TEST_ARTIFACTS_DIR) / shot).string();
  fs::remove(png);
  std::system((shell_quote(browser) + " " + flags + "--window-size=1280,2400 --screenshot=" + shell_quote(png) + " " +
               url + " >/dev/null 2>&1")
                  .c_str());
  out.screenshot = fs::exists(png) && fs::file_size(png) > 10'000;
  return out;
}

void check_in_browser(const std::string& page, const std::string& shot, std::size_t svgs) {
  const std::string browser = chromium();
  if (browser.empty()) {
    MESSAGE("chromium is not installed (scripts/install-deps.sh --test): the page was not loaded in a browser");
    return;
  }
  const Loaded l = load_in_browser(browser, page, shot);
  CHECK_MESSAGE(l.dom.find("data-ready=\"1\"") != std::string::npos, "the page's script did not run to the end");
  CHECK_MESSAGE(l.errors.empty(), l.errors);
  CHECK(count_of(l.dom, "<svg") >= svgs);
  const std::string missing = "no screenshot at test-artifacts/" + shot;
  CHECK_MESSAGE(l.screenshot, missing);
}

}  // namespace

TEST_SUITE("e2e html") {
  TEST_CASE("run writes report.html: latency CDF, stages, caches, a searchable flame graph, no network") {
    auto& f = html_fixture();
    TempDir out;
    auto r = run_cli({"run", f.model, "--trace", f.trace, "--caches", "l1", "--out", out.path(), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const std::string page = (fs::path(out.path()) / "report.html").string();
    REQUIRE(fs::exists(page));
    const std::string html = slurp(page);
    check_self_contained(html);
    for (const char* heading :
         {"<h2>Latency</h2>", "<h2>Where the time went</h2>", "<h2>Caches</h2>", "<h2>Flame graph</h2>", "Latency CDF",
          "Stages of a mean request", "Mean latency by what served the request", "l1_hit", "miss"})
      CHECK_MESSAGE(html.find(heading) != std::string::npos, std::string(heading));
    CHECK(count_of(html, "<svg") == 3);  // CDF, stages, hit/miss cost; the flame graph is in its frame
    CHECK(html.find("<iframe title=\"flame graph\"") != std::string::npos);
    CHECK(html.find("type=\"search\"") != std::string::npos);
    CHECK(r.out.find("report.html") != std::string::npos);  // listed with the other reports
    check_in_browser(page, "report-run.png", 3);
  }

  TEST_CASE("compare writes report.html: speedups with their intervals, a CDF per configuration") {
    auto& f = html_fixture();
    TempDir out;
    auto r = run_cli({"compare", f.model, "--trace", f.trace, "--caches", "none", "--caches", "l1", "--limit", "40",
                      "--out", out.path(), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const std::string page = (fs::path(out.path()) / "report.html").string();
    REQUIRE(fs::exists(page));
    const std::string html = slurp(page);
    check_self_contained(html);
    for (const char* part : {"Speedup against none", "95% interval (this trace)", "Latency CDF per configuration",
                             "Stages of a mean request", "What served the requests",
                             "l1 ("})  // its verdict in brackets (which one depends on the machine)
      CHECK_MESSAGE(html.find(part) != std::string::npos, std::string(part));
    CHECK(count_of(html, "<svg") == 3);
    // Each configuration's own run folder has its page too.
    CHECK(fs::exists(fs::path(out.path()) / "l1" / "report.html"));
    check_in_browser(page, "report-compare.png", 3);
  }

  TEST_CASE("simulate writes report.html: predictions and the miss-ratio curve") {
    auto& f = html_fixture();
    TempDir out;
    auto r =
        run_cli({"simulate", "--trace", f.trace, "--tier", "l1=lru:10", "--mrc", "l1=lru:2..50", "--out", out.path()});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const std::string page = (fs::path(out.path()) / "report.html").string();
    REQUIRE(fs::exists(page));
    const std::string html = slurp(page);
    check_self_contained(html);
    for (const char* part : {"Predicted latency", "Miss-ratio curves", "hit ratio"})
      CHECK_MESSAGE(html.find(part) != std::string::npos, std::string(part));
    check_in_browser(page, "report-simulate.png", 1);
  }

  TEST_CASE("sweep writes report.html: the latency-throughput curves with the objective, stages per step") {
    auto& f = html_fixture();
    TempDir out;
    auto r = run_cli({"sweep", f.model, "--trace", f.trace, "--speeds", "1,4", "--caches", "none", "--caches", "l1",
                      "--slo-ms", "50", "--out", out.path(), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const std::string page = (fs::path(out.path()) / "report.html").string();
    REQUIRE(fs::exists(page));
    const std::string html = slurp(page);
    check_self_contained(html);
    for (const char* part : {"Latency against served traffic", "objective 50 ms", "none p99", "l1 p50",
                             "Mean time per request by stage", "<h2>Steps</h2>"})
      CHECK_MESSAGE(html.find(part) != std::string::npos, std::string(part));
    CHECK(count_of(html, "<svg") == 2);
    check_in_browser(page, "report-sweep.png", 2);
  }
}
