// A small SVG chart writer for the HTML reports (src/report/html_report.cpp): grouped or stacked bars
// (horizontal or vertical), lines (linear or log2 x), and a bucket timeline. Each chart is one self-contained
// <svg> element with a <title>, axis titles with units, ticks at round numbers and a legend; no scripts, no
// external fonts. Every text is XML-escaped. Bars carry class="bar" and line points class="point".
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sb {

// &, <, >, " and ' as entities: safe in element text and in attribute values.
std::string xml_escape(const std::string& text);
// Round tick values covering [lo, hi] with about `target` steps of 1, 2 or 5 times a power of ten.
std::vector<double> nice_ticks(double lo, double hi, int target);
// Bytes with binary prefixes as the bandwidth tables write sizes: 512 -> "512", 4096 -> "4K", 2^30 -> "1G".
std::string format_bytes(double bytes);
// Okabe-Ito colours (safe for the common colour-vision deficiencies); index wraps around.
const char* chart_colour(size_t index);

struct BarSeries {
  std::string name;                          // the legend entry
  std::vector<std::optional<double>> values;  // one per category; none: no bar
  int colour = -1;                            // chart_colour index; -1: the series' position
};

struct BarChart {
  std::string title, value_axis_title;  // the value axis title carries the unit, e.g. "tokens/s"
  std::vector<std::string> categories;  // groups (grouped) or bars (stacked)
  std::vector<BarSeries> series;        // bars within a group, or segments of a stack
  bool horizontal = true;
  bool stacked = false;
  bool value_labels = true;      // each bar's value (grouped) or each stack's total (stacked)
  int value_decimals = 2;
  std::optional<double> reference;  // a dashed line at this value (e.g. 1.0 for the baseline)
  std::string reference_label;
  int width = 1100;  // px in the SVG's own units; the page scales it to its width
  int height = 360;  // a minimum: grows so that every bar keeps about 16 px
};

struct LineSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in x order
  int colour = -1;                                // chart_colour index; -1: the series' position
  bool dashed = false;                            // a reference drawn dashed (ideal scaling), no points
};

struct LineChart {
  std::string title, x_title, y_title;
  std::vector<LineSeries> series;
  bool log2_x = false;    // x ticks at powers of two
  bool bytes_x = false;   // x tick labels as format_bytes
  bool x_at_points = false;  // x ticks exactly at the data's x values (GPU counts)
  bool y_from_zero = true;
  int width = 1100;  // px in the SVG's own units; the page scales it to its width
  int height = 360;
};

struct TimelineRow {
  std::string name;
  double ready = 0, start = 0, end = 0;  // ms: gradient ready (marker), all-reduce start and end (bar)
};

struct TimelineChart {
  std::string title, x_title;
  std::vector<TimelineRow> rows;
  std::optional<double> marker;  // a vertical line (the backward's end)
  bool from_zero = false;        // x axis from 0; else from a round number below the first ready
  std::string marker_label;
  int width = 1100;  // px in the SVG's own units; the page scales it to its width
  int height = 360;  // a minimum
};

std::string svg_bar_chart(const BarChart& chart);
std::string svg_line_chart(const LineChart& chart);
std::string svg_timeline_chart(const TimelineChart& chart);

}  // namespace sb
