#pragma once
// A self-contained SVG line plot: a log-scaled x axis, series on a left axis,
// and optionally series on a right axis in another unit (the miss-ratio
// curve of `simulate`: hit ratio left, predicted latency right).
#include <string>
#include <vector>

namespace inferprof::report {

struct PlotSeries {
  std::string name;
  std::vector<double> x, y;  // same length; x > 0
  bool right_axis = false;
  bool dashed = false;
};

struct LinePlot {
  std::string title, subtitle;
  std::string x_label, left_label, right_label;
  double left_min = 0, left_max = 1;  // fixed left range (hit ratio)
  bool x_duration_us = false;         // x is a duration in µs (ticks "1 ms"), not a count
  bool markers = true;                // a dot with a hover title at each point
  std::vector<PlotSeries> series;
};

std::string render_line_plot_svg(const LinePlot& plot);

}  // namespace inferprof::report
