#pragma once
// report.html: one self-contained page (no network, no external file) that a
// person opens in a browser. Plots are SVG written here and by the existing
// renderers (line plots, flame graphs): no plotting library to vendor, a page
// of tens of kilobytes, and the same pictures as the .svg files beside it.
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inferprof::report::html {

// One horizontal bar made of segments (µs of each stage), for stacked_bars_svg.
struct Bar {
  std::string label;
  std::vector<double> segments;  // one per segment name, same order
};

// Bars of stacked segments on one linear scale, with a legend; a segment's
// hover title gives its value and share of the bar.
std::string stacked_bars_svg(const std::string& title, const std::vector<std::string>& segment_names,
                             const std::vector<Bar>& bars, std::string_view unit);

// The empirical CDF of each named sample of latencies (µs), on a log-scaled
// axis in ms; each curve drawn through at most 200 of its quantiles.
std::string latency_cdf_svg(const std::string& title,
                            const std::vector<std::pair<std::string, std::vector<double>>>& samples_us);

// One estimate with its interval, for interval_plot_svg.
struct Estimate {
  std::string label;
  double value = 1, low = 1, high = 1;
};

// Each estimate as a dot on its interval, on a log-scaled axis with a line at
// `reference` (1×: no change); labels give the value and interval.
std::string interval_plot_svg(const std::string& title, const std::vector<Estimate>& rows, double reference);

// A page built section by section; every text argument is escaped here.
class Page {
 public:
  Page(std::string_view title, std::string_view subtitle);
  void section(std::string_view heading, std::string_view note = {});
  void paragraph(std::string_view text);
  // A table; cells are text. The first column is a label, the others right-aligned.
  void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
  // The same from the reporters' cells, whose first row is the header (nothing when empty).
  void table(const std::vector<std::vector<std::string>>& cells);
  // An SVG drawn inline (its XML declaration dropped).
  void svg(std::string_view svg);
  // A flame graph SVG in its own frame (its click-to-zoom script stays its
  // own), with a search box that highlights the frames whose name matches and
  // says what share of the time they hold.
  void flamegraph(std::string_view svg);
  // The whole document; the page marks <body data-ready="1"> once its script
  // ran, which the browser test reads.
  std::string finish();

 private:
  fmt::memory_buffer out_;
  int flames_ = 0;
};

}  // namespace inferprof::report::html
