#include "report/line_plot_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "base/text.hpp"
#include "report/flamegraph_svg.hpp"

namespace inferprof::report {

namespace {

constexpr double kWidth = 900, kHeight = 520;
constexpr double kLeft = 80, kRight = 90, kTop = 70, kBottom = 60;
constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

// Ticks at 1, 10, 100... inside [lo, hi]; at 1, 2, 5, 10, 20... when that
// leaves fewer than two (a range within a decade or two: a sweep's req/s).
std::vector<double> decade_ticks(double lo, double hi) {
  std::vector<double> t;
  for (const auto& steps : {std::vector<double>{1}, std::vector<double>{1, 2, 5}}) {
    t.clear();
    for (double d = std::pow(10.0, std::floor(std::log10(lo))); d <= hi * 1.0001; d *= 10)
      for (double m : steps)
        if (d * m >= lo * 0.9999 && d * m <= hi * 1.0001) t.push_back(d * m);
    if (t.size() >= 2) break;
  }
  return t;
}

std::string short_count(double v) {
  if (v >= 1e9) return fmt::format("{:g}G", v / 1e9);
  if (v >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", v);
}

// A decade tick as a duration: "100 µs", "10 ms", "1 s".
std::string short_duration_us(double us) {
  if (us < 1e3) return fmt::format("{:g} µs", us);
  if (us < 1e6) return fmt::format("{:g} ms", us / 1e3);
  return fmt::format("{:g} s", us / 1e6);
}

}  // namespace

std::string render_line_plot_svg(const LinePlot& plot) {
  double xlo = std::numeric_limits<double>::max(), xhi = 0, rlo = 0, rhi = 0;
  bool right = false;
  for (const auto& s : plot.series)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (s.x[i] <= 0) continue;
      xlo = std::min(xlo, s.x[i]);
      xhi = std::max(xhi, s.x[i]);
      if (s.right_axis) {
        rhi = std::max(rhi, s.y[i]);
        right = true;
      }
    }
  if (xhi <= 0) xlo = 1, xhi = 10;
  if (xhi <= xlo) xhi = xlo * 10;
  if (rhi <= rlo) rhi = rlo + 1;
  rhi *= 1.05;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto X = [&](double x) { return kLeft + pw * (std::log(x) - std::log(xlo)) / (std::log(xhi) - std::log(xlo)); };
  auto YL = [&](double y) { return kTop + ph * (1 - (y - plot.left_min) / (plot.left_max - plot.left_min)); };
  auto YR = [&](double y) { return kTop + ph * (1 - (y - rlo) / (rhi - rlo)); };

  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                 "<svg version=\"1.1\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                 "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"Verdana, sans-serif\" font-size=\"12\">\n"
                 "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
                 kWidth, kHeight);
  auto text = [&](double x, double y, std::string_view s, const char* anchor, const char* extra = "") {
    fmt::format_to(it, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\"{}>", x, y, anchor, extra);
    flame::append_xml(out, s);
    out.append(std::string_view("</text>\n"));
  };
  text(kWidth / 2, 24, plot.title, "middle", " font-size=\"16\"");
  if (!plot.subtitle.empty()) text(kWidth / 2, 44, plot.subtitle, "middle", " fill=\"#555\"");
  // Grid and axes.
  for (int i = 0; i <= 10; ++i) {
    const double v = plot.left_min + (plot.left_max - plot.left_min) * i / 10;
    fmt::format_to(it, "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n", kLeft,
                   YL(v), kLeft + pw, YL(v));
    text(kLeft - 6, YL(v) + 4, fmt::format("{:.1f}", v), "end");
    if (right)
      text(kLeft + pw + 6, YR(rlo + (rhi - rlo) * i / 10) + 4, human_duration_us(rlo + (rhi - rlo) * i / 10), "start");
  }
  for (double t : decade_ticks(xlo, xhi)) {
    fmt::format_to(it, "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n", X(t), kTop,
                   X(t), kTop + ph);
    text(X(t), kTop + ph + 18, plot.x_duration_us ? short_duration_us(t) : short_count(t), "middle");
  }
  fmt::format_to(it,
                 "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" stroke=\"#333\"/>\n",
                 kLeft, kTop, pw, ph);
  text(kLeft + pw / 2, kHeight - 16, plot.x_label, "middle");
  text(20, kTop + ph / 2, plot.left_label, "middle",
       fmt::format(" transform=\"rotate(-90 20 {:.1f})\"", kTop + ph / 2).c_str());
  if (right)
    text(kWidth - 14, kTop + ph / 2, plot.right_label, "middle",
         fmt::format(" transform=\"rotate(90 {:.1f} {:.1f})\"", kWidth - 14, kTop + ph / 2).c_str());
  // Series, with a point marker and a hover title per point.
  std::size_t k = 0;
  for (const auto& s : plot.series) {
    const char* colour = kColours[k++ % std::size(kColours)];
    fmt::format_to(it, "<g><title>");
    flame::append_xml(out, s.name);
    fmt::format_to(it, "</title><polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} points=\"", colour,
                   s.dashed ? " stroke-dasharray=\"6 4\"" : "");
    for (std::size_t i = 0; i < s.x.size(); ++i)
      if (s.x[i] > 0) fmt::format_to(it, "{:.1f},{:.1f} ", X(s.x[i]), s.right_axis ? YR(s.y[i]) : YL(s.y[i]));
    out.append(std::string_view("\"/>\n"));
    for (std::size_t i = 0; i < s.x.size() && plot.markers; ++i) {
      if (s.x[i] <= 0) continue;
      fmt::format_to(it, "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>", X(s.x[i]),
                     s.right_axis ? YR(s.y[i]) : YL(s.y[i]), colour);
      flame::append_xml(out, fmt::format("{}: {} -> {}", s.name,
                                         plot.x_duration_us ? human_duration_us(s.x[i])
                                                            : group_thousands(static_cast<std::uint64_t>(s.x[i])),
                                         s.right_axis ? human_duration_us(s.y[i]) : fmt::format("{:.4f}", s.y[i])));
      out.append(std::string_view("</title></circle>\n"));
    }
    out.append(std::string_view("</g>\n"));
    // Legend entry.
    const double ly = kTop + 14 + 16 * static_cast<double>(k - 1);
    fmt::format_to(
        it, "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"{}/>\n",
        kLeft + 10, ly - 4, kLeft + 34, ly - 4, colour, s.dashed ? " stroke-dasharray=\"6 4\"" : "");
    text(kLeft + 40, ly, s.name, "start");
  }
  out.append(std::string_view("</svg>\n"));
  return fmt::to_string(out);
}

}  // namespace inferprof::report
