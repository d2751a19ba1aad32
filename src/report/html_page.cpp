#include "report/html_page.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>

#include "base/text.hpp"
#include "report/flamegraph_svg.hpp"
#include "report/line_plot_svg.hpp"

namespace inferprof::report::html {
namespace {

using flame::append_xml;

constexpr const char* kSegmentColours[] = {"#9e9e9e", "#8dd3c7", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
                                           "#b3de69", "#fccde5", "#bc80bd", "#ccebc5", "#ffed6f"};

constexpr std::string_view kStyle = R"(<style>
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px auto; max-width: 1240px;
       color: #222; padding: 0 12px; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin-top: 32px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.subtitle, .note { color: #555; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { background: #f5f5f5; }
svg { max-width: 100%; height: auto; }
.flame iframe { width: 100%; border: 1px solid #ddd; }
.flame input { width: 320px; }
</style>
)";

// The flame graphs' search: frames whose name matches the pattern turn
// magenta, and the share of the root they cover (overlaps merged) is shown.
// The frames live in same-origin srcdoc frames, so the page reaches them.
constexpr std::string_view kScript = R"(<script>
(function () {
  document.querySelectorAll('.flame').forEach(function (box) {
    var frame = box.querySelector('iframe'), input = box.querySelector('input'), out = box.querySelector('.matched');
    function search() {
      var doc = frame.contentDocument, re = null;
      if (!doc) return;
      try { re = input.value ? new RegExp(input.value, 'i') : null; } catch (e) { out.textContent = 'not a valid pattern'; return; }
      var spans = [], root = 0;
      doc.querySelectorAll('g.frame').forEach(function (g) {
        var r = g.querySelector('rect'), t = g.querySelector('title').textContent;
        var name = t.lastIndexOf(' (') > 0 ? t.substring(0, t.lastIndexOf(' (')) : t;
        if (!r.hasAttribute('data-fill')) r.setAttribute('data-fill', r.getAttribute('fill'));
        var hit = re !== null && re.test(name), x = +r.getAttribute('x'), w = +r.getAttribute('width');
        r.setAttribute('fill', hit ? 'rgb(230,0,230)' : r.getAttribute('data-fill'));
        if (g.style.display !== 'none') root = Math.max(root, w);
        if (hit && g.style.display !== 'none') spans.push([x, x + w]);
      });
      spans.sort(function (a, b) { return a[0] - b[0]; });
      var covered = 0, end = -Infinity;
      spans.forEach(function (s) {
        if (s[0] >= end) { covered += s[1] - s[0]; end = s[1]; }
        else if (s[1] > end) { covered += s[1] - end; end = s[1]; }
      });
      out.textContent = re === null ? '' : spans.length + ' frames, ' + (root > 0 ? (100 * covered / root).toFixed(1) : '0') + '% of the time shown';
    }
    input.addEventListener('input', search);
    frame.addEventListener('load', function () {
      var doc = frame.contentDocument;
      if (doc && doc.documentElement) frame.style.height = (doc.documentElement.getBoundingClientRect().height + 8) + 'px';
      search();
    });
  });
  document.body.setAttribute('data-ready', '1');
  // How long the page took to open, frames included (bench/html_report.sh reads it).
  window.addEventListener('load', function () {
    document.body.setAttribute('data-load-ms', Math.round(performance.now()));
  });
})();
</script>
)";

// Text as HTML: escaped, its line breaks kept as <br> (append_xml would turn them into '?').
void append_text(fmt::memory_buffer& out, std::string_view s) {
  for (std::size_t start = 0; start <= s.size();) {
    const std::size_t end = std::min(s.find('\n', start), s.size());
    append_xml(out, s.substr(start, end - start));
    if (end + 1 < s.size()) out.append(std::string_view("<br>"));
    start = end + 1;
  }
}

std::string_view without_xml_declaration(std::string_view svg) {
  if (svg.substr(0, 5) == "<?xml") {
    const auto end = svg.find("?>");
    if (end != std::string_view::npos) svg.remove_prefix(end + 2);
  }
  while (!svg.empty() && (svg.front() == '\n' || svg.front() == ' '))
    svg.remove_prefix(1);
  return svg;
}

// The opening of a chart's SVG, its title at x = `title_x`.
void open_svg(fmt::memory_buffer& out, double width, double height, double title_x, std::string_view title) {
  fmt::format_to(std::back_inserter(out),
                 "<svg version=\"1.1\" width=\"{0}\" height=\"{1:.0f}\" viewBox=\"0 0 {0} {1:.0f}\" "
                 "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"Verdana, sans-serif\" font-size=\"12\">\n"
                 "<text x=\"{2}\" y=\"22\" font-size=\"15\">",
                 width, height, title_x);
  append_xml(out, title);
  out.append(std::string_view("</text>\n"));
}

}  // namespace

std::string stacked_bars_svg(const std::string& title, const std::vector<std::string>& segment_names,
                             const std::vector<Bar>& bars, std::string_view unit) {
  constexpr double kWidth = 1000, kLabel = 160, kRight = 90, kBarHeight = 26, kGap = 10, kTop = 40;
  double longest = 0;
  for (const Bar& b : bars)
    longest = std::max(longest, std::accumulate(b.segments.begin(), b.segments.end(), 0.0));
  if (!(longest > 0)) longest = 1;
  const double plot = kWidth - kLabel - kRight;
  const double legend_y = kTop + static_cast<double>(bars.size()) * (kBarHeight + kGap) + 16;
  const double height = legend_y + 20 * std::ceil(static_cast<double>(segment_names.size()) / 5.0) + 10;
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  open_svg(out, kWidth, height, kLabel, title);
  for (std::size_t b = 0; b < bars.size(); ++b) {
    const Bar& bar = bars[b];
    const double y = kTop + static_cast<double>(b) * (kBarHeight + kGap);
    const double sum = std::accumulate(bar.segments.begin(), bar.segments.end(), 0.0);
    fmt::format_to(it, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">", kLabel - 8, y + kBarHeight / 2 + 4);
    append_xml(out, bar.label);
    out.append(std::string_view("</text>\n"));
    double x = kLabel;
    for (std::size_t s = 0; s < bar.segments.size() && s < segment_names.size(); ++s) {
      const double w = plot * bar.segments[s] / longest;
      if (!(w > 0)) continue;
      fmt::format_to(it, "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"><title>", x, y, w,
                     kBarHeight, kSegmentColours[s % std::size(kSegmentColours)]);
      append_xml(out, fmt::format("{} · {}: {} {} ({:.1f}%)", bar.label, segment_names[s],
                                  human_duration_us(bar.segments[s]), unit, sum > 0 ? 100 * bar.segments[s] / sum : 0));
      out.append(std::string_view("</title></rect>\n"));
      x += w;
    }
    fmt::format_to(it, "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#555\">", x + 6, y + kBarHeight / 2 + 4);
    append_xml(out, human_duration_us(sum));
    out.append(std::string_view("</text>\n"));
  }
  for (std::size_t s = 0; s < segment_names.size(); ++s) {
    const double lx = kLabel + static_cast<double>(s % 5) * 160, ly = legend_y + 20 * static_cast<double>(s / 5);
    fmt::format_to(
        it, "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{:.0f}\" y=\"{:.0f}\">",
        lx, ly - 10, kSegmentColours[s % std::size(kSegmentColours)], lx + 16, ly);
    append_xml(out, segment_names[s]);
    out.append(std::string_view("</text>\n"));
  }
  out.append(std::string_view("</svg>\n"));
  return fmt::to_string(out);
}

std::string interval_plot_svg(const std::string& title, const std::vector<Estimate>& rows, double reference) {
  constexpr double kWidth = 1000, kLabel = 160, kRight = 230, kRow = 30, kTop = 44;
  double lo = reference, hi = reference;
  for (const Estimate& e : rows)
    if (e.low > 0 && e.high > 0) {
      lo = std::min({lo, e.low, e.value});
      hi = std::max({hi, e.high, e.value});
    }
  lo /= 1.15;
  hi *= 1.15;
  const double plot = kWidth - kLabel - kRight, height = kTop + kRow * static_cast<double>(rows.size()) + 36;
  auto X = [&](double v) { return kLabel + plot * (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo)); };
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  open_svg(out, kWidth, height, kLabel, title);
  const double bottom = kTop + kRow * static_cast<double>(rows.size());
  fmt::format_to(it,
                 "<line x1=\"{0:.1f}\" y1=\"{1:.0f}\" x2=\"{0:.1f}\" y2=\"{2:.0f}\" stroke=\"#888\" "
                 "stroke-dasharray=\"4 3\"/>\n<text x=\"{0:.1f}\" y=\"{3:.0f}\" text-anchor=\"middle\" "
                 "fill=\"#555\">{4:g}× (no change)</text>\n",
                 X(reference), kTop - 10, bottom, bottom + 18, reference);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Estimate& e = rows[r];
    const double y = kTop + kRow * (static_cast<double>(r) + 0.5);
    fmt::format_to(it, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">", kLabel - 8, y + 4);
    append_xml(out, e.label);
    out.append(std::string_view("</text>\n"));
    if (!(e.low > 0 && e.high > 0 && e.value > 0)) continue;
    out.append(std::string_view("<g><title>"));
    append_xml(out, fmt::format("{}: {:.3g}× [{:.3g}, {:.3g}]", e.label, e.value, e.low, e.high));
    fmt::format_to(it,
                   "</title><line x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"#1f77b4\" "
                   "stroke-width=\"3\"/><circle cx=\"{3:.1f}\" cy=\"{2:.1f}\" r=\"5\" fill=\"#1f77b4\"/></g>\n",
                   X(e.low), X(e.high), y, X(e.value));
    fmt::format_to(it, "<text x=\"{:.1f}\" y=\"{:.1f}\">{:.3g}× [{:.3g}, {:.3g}]</text>\n", kWidth - kRight + 12, y + 4,
                   e.value, e.low, e.high);
  }
  out.append(std::string_view("</svg>\n"));
  return fmt::to_string(out);
}

std::string latency_cdf_svg(const std::string& title,
                            const std::vector<std::pair<std::string, std::vector<double>>>& samples_us) {
  LinePlot plot;
  plot.title = title;
  plot.x_label = "latency (log scale)";
  plot.left_label = "fraction of requests at or below";
  plot.x_duration_us = true;
  plot.markers = false;
  for (const auto& [name, sample] : samples_us) {
    std::vector<double> v;
    for (double x : sample)
      if (x > 0 && std::isfinite(x)) v.push_back(x);
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    PlotSeries s;
    s.name = fmt::format("{} ({} requests)", name, group_thousands(v.size()));
    constexpr std::size_t kPoints = 200;
    const std::size_t step = std::max<std::size_t>(1, v.size() / kPoints);
    for (std::size_t i = 0; i < v.size(); i += step) {
      s.x.push_back(v[i]);
      s.y.push_back(static_cast<double>(i + 1) / static_cast<double>(v.size()));
    }
    if (s.x.back() != v.back()) {
      s.x.push_back(v.back());
      s.y.push_back(1.0);
    }
    plot.series.push_back(std::move(s));
  }
  return render_line_plot_svg(plot);
}

Page::Page(std::string_view title, std::string_view subtitle) {
  out_.append(std::string_view("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"));
  append_xml(out_, title);
  out_.append(std::string_view("</title>\n"));
  out_.append(kStyle);
  out_.append(std::string_view("</head>\n<body>\n<h1>"));
  append_xml(out_, title);
  out_.append(std::string_view("</h1>\n<p class=\"subtitle\">"));
  append_text(out_, subtitle);
  out_.append(std::string_view("</p>\n"));
}

void Page::section(std::string_view heading, std::string_view note) {
  out_.append(std::string_view("<h2>"));
  append_xml(out_, heading);
  out_.append(std::string_view("</h2>\n"));
  if (!note.empty()) {
    out_.append(std::string_view("<p class=\"note\">"));
    append_text(out_, note);
    out_.append(std::string_view("</p>\n"));
  }
}

void Page::paragraph(std::string_view text) {
  out_.append(std::string_view("<p>"));
  append_text(out_, text);
  out_.append(std::string_view("</p>\n"));
}

void Page::table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  out_.append(std::string_view("<table>\n<tr>"));
  for (const std::string& h : header) {
    out_.append(std::string_view("<th>"));
    append_xml(out_, h);
    out_.append(std::string_view("</th>"));
  }
  out_.append(std::string_view("</tr>\n"));
  for (const auto& row : rows) {
    out_.append(std::string_view("<tr>"));
    for (const std::string& cell : row) {
      out_.append(std::string_view("<td>"));
      append_text(out_, cell);
      out_.append(std::string_view("</td>"));
    }
    out_.append(std::string_view("</tr>\n"));
  }
  out_.append(std::string_view("</table>\n"));
}

void Page::table(const std::vector<std::vector<std::string>>& cells) {
  if (cells.empty()) return;
  table(cells.front(), std::vector<std::vector<std::string>>(cells.begin() + 1, cells.end()));
}

void Page::svg(std::string_view svg) {
  out_.append(std::string_view("<figure>\n"));
  out_.append(without_xml_declaration(svg));
  out_.append(std::string_view("</figure>\n"));
}

void Page::flamegraph(std::string_view svg) {
  ++flames_;
  fmt::format_to(std::back_inserter(out_),
                 "<div class=\"flame\"><p><label>search frames (regular expression): <input type=\"search\" "
                 "id=\"flame-search-{}\" placeholder=\"e.g. conv|linear\"></label> <span class=\"matched\"></span> "
                 "· click a frame to zoom, the bottom one to zoom out</p>\n<iframe title=\"flame graph\" "
                 "height=\"400\" srcdoc=\"",
                 flames_);
  // append_xml turns control characters into '?'; the script's line breaks must stay.
  for (std::size_t start = 0; start <= svg.size();) {
    const std::size_t end = std::min(svg.find('\n', start), svg.size());
    append_xml(out_, svg.substr(start, end - start));
    if (end < svg.size()) out_.append(std::string_view("&#10;"));
    start = end + 1;
  }
  out_.append(std::string_view("\"></iframe></div>\n"));
}

std::string Page::finish() {
  out_.append(kScript);
  out_.append(std::string_view("</body>\n</html>\n"));
  return fmt::to_string(out_);
}

}  // namespace inferprof::report::html
