// SVG charts for the HTML reports (svg_chart.h). Text widths are estimated (0.6 em per character, the
// proportion of the sans-serif fonts browsers fall back to), so margins are sized from the longest label and
// the legend wraps into rows before it would leave the picture.
#include "src/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sb {
namespace {

constexpr double kCharWidth = 0.6;  // em per character, estimated
constexpr int kFont = 12;           // px: ticks, labels, legend
constexpr int kTitleFont = 15;
constexpr int kTop = 40;  // px above the plot: the title
// A white outline under value labels keeps them readable where they cross a grid or reference line.
const char* kHalo = " stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\"";

double text_width(const std::string& text, int font) { return kCharWidth * font * static_cast<double>(text.size()); }

std::string num(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", value);
  return buffer;
}

// Tick label: no decimals for whole numbers, else up to three, trailing zeros dropped.
std::string tick_label(double value) {
  if (std::fabs(value) < 1e-12) return "0";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", value);
  std::string text = buffer;
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

std::string fixed(double value, int decimals) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string text_element(double x, double y, const std::string& text, const std::string& anchor, int font,
                         const std::string& extra = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + std::to_string(font) +
         "\" text-anchor=\"" + anchor + "\"" + extra + ">" + xml_escape(text) + "</text>\n";
}

std::string rect(double x, double y, double w, double h, const std::string& fill, const std::string& extra = "") {
  return "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(std::max(w, 0.0)) + "\" height=\"" +
         num(std::max(h, 0.0)) + "\" fill=\"" + fill + "\"" + extra + "/>\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& stroke, const std::string& extra = "") {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) +
         "\" stroke=\"" + stroke + "\"" + extra + "/>\n";
}

std::string svg_open(int width, int height, const std::string& title) {
  // No xmlns: inline in HTML5 the parser puts <svg> in the SVG namespace, and the page names no URL at all.
  return "<svg width=\"" + std::to_string(width) + "\" height=\"" +
         std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(height) +
         "\" font-family=\"sans-serif\" role=\"img\">\n<title>" + xml_escape(title) + "</title>\n" +
         rect(0, 0, width, height, "#ffffff") +
         text_element(width / 2.0, 24, title, "middle", kTitleFont, " font-weight=\"bold\"");
}

struct LegendEntry {
  std::string name, colour;
  bool marker = false;  // a line with a dot instead of a swatch
  bool dashed = false;  // a dashed line, no dot (a reference line such as ideal scaling)
};

// Entries flow left to right and wrap; returns the height used (0 without entries) and appends the SVG.
double legend(const std::vector<LegendEntry>& entries, double left, double top, double width, std::string* svg) {
  if (entries.empty()) return 0;
  const double row_height = 18;
  double x = left, y = top;
  for (const LegendEntry& entry : entries) {
    const double entry_width = 18 + text_width(entry.name, kFont) + 16;
    if (x > left && x + entry_width > left + width) {
      x = left;
      y += row_height;
    }
    if (svg != nullptr) {
      *svg += "<g class=\"legend\">";
      if (entry.dashed) {
        *svg += line(x, y + 6, x + 14, y + 6, entry.colour, " stroke-width=\"2\" stroke-dasharray=\"4 2\"");
      } else if (entry.marker) {
        *svg += line(x, y + 6, x + 14, y + 6, entry.colour, " stroke-width=\"2\"");
        *svg += "<circle cx=\"" + num(x + 7) + "\" cy=\"" + num(y + 6) + "\" r=\"3\" fill=\"" + entry.colour + "\"/>";
      } else {
        *svg += rect(x, y, 12, 12, entry.colour);
      }
      *svg += text_element(x + 18, y + 10, entry.name, "start", kFont) + "</g>\n";
    }
    x += entry_width;
  }
  return y - top + row_height;
}

// Maps [lo, hi] onto [a, b] (pixels).
struct Scale {
  double lo, hi, a, b;
  double operator()(double v) const { return hi == lo ? a : a + (v - lo) / (hi - lo) * (b - a); }
};

template <typename Series>
const char* series_colour(const std::vector<Series>& series, size_t s) {
  return chart_colour(series[s].colour >= 0 ? static_cast<size_t>(series[s].colour) : s);
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(target, 1);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step) * step;
  for (int i = 0; i < 100; ++i) {
    const double tick = first + i * step;
    ticks.push_back(std::fabs(tick) < step * 1e-9 ? 0.0 : tick);
    if (tick >= hi - step * 1e-9) break;
  }
  return ticks;
}

std::string format_bytes(double bytes) {
  const char* suffixes[] = {"", "K", "M", "G", "T"};
  int index = 0;
  while (bytes >= 1024 && index < 4) {
    bytes /= 1024;
    ++index;
  }
  return tick_label(bytes) + suffixes[index];
}

const char* chart_colour(size_t index) {
  static const char* kColours[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                   "#CC79A7", "#56B4E9", "#F0E442", "#000000"};
  return kColours[index % 8];
}

std::string svg_bar_chart(const BarChart& chart) {
  const size_t ncat = chart.categories.size(), nser = chart.series.size();
  std::vector<LegendEntry> entries;
  for (size_t s = 0; s < nser; ++s) entries.push_back({chart.series[s].name, series_colour(chart.series, s)});
  // Value range: the largest bar or stack, and the reference line.
  double vmax = chart.reference.value_or(0);
  for (size_t c = 0; c < ncat; ++c) {
    double stack = 0;
    for (const BarSeries& series : chart.series) {
      const double v = c < series.values.size() ? series.values[c].value_or(0) : 0;
      stack += std::max(v, 0.0);
      vmax = std::max(vmax, chart.stacked ? stack : v);
    }
  }
  double label_room = 0;  // px beyond the longest bar for its value label
  if (chart.value_labels) label_room = text_width(fixed(vmax, chart.value_decimals), 10) + 8;

  double longest_category = 0;
  for (const std::string& category : chart.categories) {
    longest_category = std::max(longest_category, text_width(category, kFont));
  }
  const double bar = chart.stacked ? 36 : 16, gap = 12;
  const double per_group = chart.stacked ? bar : bar * static_cast<double>(nser);
  const double needed = static_cast<double>(ncat) * (per_group + gap) + gap;

  const double left = chart.horizontal ? std::min(longest_category + 16, chart.width * 0.4) : 64;
  const double right = 20 + (chart.horizontal ? label_room : 0);
  const double plot_width_guess = chart.width - left - right;
  const double legend_height = legend(entries, left, 0, chart.width - left - 10, nullptr);
  const double bottom = (chart.horizontal ? 48 : 48 + 16) + legend_height + 8;
  double plot_height = chart.height - kTop - bottom - (chart.horizontal ? 0 : 14);
  int width = chart.width;
  int height = chart.height;
  if (chart.horizontal && needed > plot_height) {
    plot_height = needed;
    height = static_cast<int>(std::ceil(kTop + plot_height + bottom));
  }
  const double top = kTop + (chart.horizontal ? 0 : 14);  // vertical: room for labels above the tallest bar
  const double plot_width = chart.horizontal ? plot_width_guess : width - left - right;

  const std::vector<double> ticks = nice_ticks(0, vmax > 0 ? vmax : 1, 5);
  const Scale value = chart.horizontal ? Scale{0, ticks.back(), left, left + plot_width}
                                       : Scale{0, ticks.back(), top + plot_height, top};
  std::string svg = svg_open(width, height, chart.title);

  // Grid, ticks and the value axis title.
  for (double tick : ticks) {
    const double p = value(tick);
    if (chart.horizontal) {
      svg += line(p, top, p, top + plot_height, "#dddddd");
      svg += text_element(p, top + plot_height + 16, tick_label(tick), "middle", kFont);
    } else {
      svg += line(left, p, left + plot_width, p, "#dddddd");
      svg += text_element(left - 6, p + 4, tick_label(tick), "end", kFont);
    }
  }
  if (chart.horizontal) {
    svg += line(left, top, left, top + plot_height, "#333333");
    svg += text_element(left + plot_width / 2, top + plot_height + 36, chart.value_axis_title, "middle", kFont);
  } else {
    svg += line(left, top + plot_height, left + plot_width, top + plot_height, "#333333");
    const double cy = top + plot_height / 2;
    svg += text_element(16, cy, chart.value_axis_title, "middle", kFont,
                        " transform=\"rotate(-90 16 " + num(cy) + ")\"");
  }

  // Bars: the category axis is split evenly (vertical) or at fixed pitch (horizontal).
  const double pitch = (chart.horizontal ? plot_height : plot_width) / std::max<double>(static_cast<double>(ncat), 1);
  const double band = std::min(per_group, pitch - gap);
  const double thickness = chart.stacked ? band : band / std::max<double>(static_cast<double>(nser), 1);
  for (size_t c = 0; c < ncat; ++c) {
    const double group_start = (chart.horizontal ? top : left) + pitch * static_cast<double>(c) + (pitch - band) / 2;
    if (chart.horizontal) {
      svg += text_element(left - 6, group_start + band / 2 + 4, chart.categories[c], "end", kFont);
    } else {
      svg += text_element(group_start + band / 2, top + plot_height + 32, chart.categories[c], "middle", kFont);
    }
    double stack = 0;
    for (size_t s = 0; s < nser; ++s) {
      const std::optional<double> v = c < chart.series[s].values.size() ? chart.series[s].values[c] : std::nullopt;
      if (!v) continue;
      const double from = chart.stacked ? stack : 0, to = from + std::max(*v, 0.0);
      if (chart.stacked) stack = to;
      const double offset = chart.stacked ? 0 : thickness * static_cast<double>(s);
      const std::string tip = "<title>" + xml_escape(chart.series[s].name + " / " + chart.categories[c] + ": " +
                                                     fixed(*v, chart.value_decimals)) + "</title>";
      const std::string attrs = " class=\"bar\"";
      const std::string colour = series_colour(chart.series, s);
      const double label_width = text_width(fixed(*v, chart.value_decimals), 10);
      if (chart.horizontal) {
        const double y = group_start + offset;
        svg += "<g>" + tip + rect(value(from), y, value(to) - value(from), thickness - 1, colour, attrs) + "</g>";
        if (chart.value_labels && !chart.stacked) {
          svg += text_element(value(to) + 4, y + thickness / 2 + 3.5, fixed(*v, chart.value_decimals), "start", 10,
                              kHalo);
        } else if (chart.value_labels && value(to) - value(from) > label_width + 8) {
          // A stack's segment is labelled inside when it is wide enough; the total sits at the end.
          svg += text_element((value(from) + value(to)) / 2, y + thickness / 2 + 3.5, fixed(*v, chart.value_decimals),
                              "middle", 10, " fill=\"#ffffff\"");
        }
      } else {
        const double x = group_start + offset;
        svg += "<g>" + tip + rect(x, value(to), thickness - 1, value(from) - value(to), colour, attrs) + "</g>";
        if (chart.value_labels && !chart.stacked) {
          svg += text_element(x + thickness / 2, value(to) - 4, fixed(*v, chart.value_decimals), "middle", 10, kHalo);
        }
      }
    }
    if (chart.value_labels && chart.stacked && stack > 0) {
      if (chart.horizontal) {
        svg += text_element(value(stack) + 4, group_start + band / 2 + 3.5, fixed(stack, chart.value_decimals),
                            "start", 10);
      } else {
        svg += text_element(group_start + band / 2, value(stack) - 4, fixed(stack, chart.value_decimals), "middle", 10);
      }
    }
  }
  if (chart.reference) {
    const double p = value(*chart.reference);
    if (chart.horizontal) {
      svg += line(p, top - 4, p, top + plot_height, "#333333", " stroke-dasharray=\"4 3\"");
      svg += text_element(p + 3, top - 6, chart.reference_label, "start", 10);
    } else {
      svg += line(left, p, left + plot_width, p, "#333333", " stroke-dasharray=\"4 3\"");
    }
  }
  legend(entries, left, height - legend_height - 6, width - left - 10, &svg);
  return svg + "</svg>\n";
}

std::string svg_line_chart(const LineChart& chart) {
  std::vector<LegendEntry> entries;
  double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
  std::vector<double> xs;
  auto xt = [&](double x) { return chart.log2_x ? std::log2(std::max(x, 1e-300)) : x; };
  for (size_t s = 0; s < chart.series.size(); ++s) {
    entries.push_back({chart.series[s].name, series_colour(chart.series, s), true, chart.series[s].dashed});
    for (const auto& [x, y] : chart.series[s].points) {
      xmin = std::min(xmin, xt(x));
      xmax = std::max(xmax, xt(x));
      ymin = std::min(ymin, y);
      ymax = std::max(ymax, y);
      xs.push_back(x);
    }
  }
  if (xs.empty()) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  const double left = 72, right = 24, top = kTop;
  const double legend_height = legend(entries, left, 0, chart.width - left - 10, nullptr);
  const double bottom = 48 + legend_height + 8;
  const double plot_width = chart.width - left - right, plot_height = chart.height - top - bottom;

  std::vector<double> yticks = nice_ticks(chart.y_from_zero ? std::min(0.0, ymin) : ymin, ymax, 5);
  std::vector<double> xticks;  // in transformed units
  if (chart.log2_x) {
    const int lo = static_cast<int>(std::floor(xmin)), hi = static_cast<int>(std::ceil(xmax));
    const int every = std::max(1, (hi - lo + 9) / 10);  // at most about ten labels
    for (int e = lo; e <= hi; e += every) xticks.push_back(e);
    xmin = lo;
    xmax = std::max(hi, lo + 1);
  } else if (chart.x_at_points) {
    std::sort(xs.begin(), xs.end());
    xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
    xticks = xs;
    const double pad = xmax > xmin ? 0.08 * (xmax - xmin) : 0.5;
    xmin -= pad;
    xmax += pad;
  } else {
    xticks = nice_ticks(xmin, xmax, 6);
    xmin = xticks.front();
    xmax = xticks.back();
  }
  const Scale sx{xmin, xmax, left, left + plot_width};
  const Scale sy{yticks.front(), yticks.back(), top + plot_height, top};
  std::string svg = svg_open(chart.width, chart.height, chart.title);
  for (double tick : yticks) {
    svg += line(left, sy(tick), left + plot_width, sy(tick), "#dddddd");
    svg += text_element(left - 6, sy(tick) + 4, tick_label(tick), "end", kFont);
  }
  for (double tick : xticks) {
    svg += line(sx(tick), top, sx(tick), top + plot_height, "#eeeeee");
    const double shown = chart.log2_x ? std::pow(2.0, tick) : tick;
    svg += text_element(sx(tick), top + plot_height + 16, chart.bytes_x ? format_bytes(shown) : tick_label(shown),
                        "middle", kFont);
  }
  svg += line(left, top + plot_height, left + plot_width, top + plot_height, "#333333");
  svg += line(left, top, left, top + plot_height, "#333333");
  svg += text_element(left + plot_width / 2, top + plot_height + 36, chart.x_title, "middle", kFont);
  const double cy = top + plot_height / 2;
  svg += text_element(16, cy, chart.y_title, "middle", kFont, " transform=\"rotate(-90 16 " + num(cy) + ")\"");
  for (size_t s = 0; s < chart.series.size(); ++s) {
    std::vector<std::pair<double, double>> points = chart.series[s].points;
    std::sort(points.begin(), points.end());
    std::string path;
    for (const auto& [x, y] : points) path += num(sx(xt(x))) + "," + num(sy(y)) + " ";
    svg += "<g class=\"series\"><title>" + xml_escape(chart.series[s].name) + "</title>";
    const bool dashed = chart.series[s].dashed;
    svg += "<polyline points=\"" + path + "\" fill=\"none\" stroke=\"" + series_colour(chart.series, s) +
           "\" stroke-width=\"2\"" + (dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
    for (const auto& [x, y] : points) {
      if (dashed) break;
      svg += "<circle class=\"point\" cx=\"" + num(sx(xt(x))) + "\" cy=\"" + num(sy(y)) + "\" r=\"3\" fill=\"" +
             series_colour(chart.series, s) + "\"/>";
    }
    svg += "</g>\n";
  }
  legend(entries, left, chart.height - legend_height - 6, chart.width - left - 10, &svg);
  return svg + "</svg>\n";
}

std::string svg_timeline_chart(const TimelineChart& chart) {
  const std::vector<LegendEntry> entries = {{"all-reduce (start to end)", chart_colour(0)},
                                            {"gradients ready", "#000000"},
                                            {chart.marker_label, chart_colour(3)}};
  double longest = 0, xmax = chart.marker.value_or(0), xmin = xmax;
  for (const TimelineRow& row : chart.rows) {
    longest = std::max(longest, text_width(row.name, 10));
    xmax = std::max({xmax, row.end, row.ready});
    xmin = std::min({xmin, row.start, row.ready});
  }
  if (chart.from_zero || chart.rows.empty()) xmin = 0;
  const double left = longest + 16, right = 24, top = kTop;
  const double legend_height = legend(entries, left, 0, chart.width - left - 10, nullptr);
  const double bottom = 48 + legend_height + 8;
  const double pitch = 14;  // px per bucket row
  double plot_height = chart.height - top - bottom;
  int height = chart.height;
  if (pitch * static_cast<double>(chart.rows.size()) > plot_height) {
    plot_height = pitch * static_cast<double>(chart.rows.size());
    height = static_cast<int>(std::ceil(top + plot_height + bottom));
  }
  const double plot_width = chart.width - left - right;
  // The buckets start late in the step (after most of the backward), so the axis starts at a round number below.
  const std::vector<double> ticks = nice_ticks(xmin, xmax > xmin ? xmax : xmin + 1, 8);
  const Scale sx{ticks.front(), ticks.back(), left, left + plot_width};
  const double row_pitch = plot_height / std::max<double>(static_cast<double>(chart.rows.size()), 1);
  std::string svg = svg_open(chart.width, height, chart.title);
  for (double tick : ticks) {
    svg += line(sx(tick), top, sx(tick), top + plot_height, "#dddddd");
    svg += text_element(sx(tick), top + plot_height + 16, tick_label(tick), "middle", kFont);
  }
  svg += line(left, top, left, top + plot_height, "#333333");
  svg += text_element(left + plot_width / 2, top + plot_height + 36, chart.x_title, "middle", kFont);
  for (size_t r = 0; r < chart.rows.size(); ++r) {
    const TimelineRow& row = chart.rows[r];
    const double y = top + row_pitch * static_cast<double>(r);
    const double h = std::max(row_pitch - 3, 2.0);
    svg += text_element(left - 6, y + row_pitch / 2 + 3.5, row.name, "end", 10);
    svg += "<g><title>" + xml_escape(row.name + ": ready " + fixed(row.ready, 3) + " ms, all-reduce " +
                                     fixed(row.start, 3) + " to " + fixed(row.end, 3) + " ms") + "</title>";
    svg += rect(sx(row.start), y + 1, std::max(sx(row.end) - sx(row.start), 1.0), h, chart_colour(0),
                " class=\"bar\"");
    svg += line(sx(row.ready), y, sx(row.ready), y + row_pitch - 1, "#000000", " stroke-width=\"2\"") + "</g>\n";
  }
  if (chart.marker) {
    const double p = sx(*chart.marker);
    svg += line(p, top - 4, p, top + plot_height, chart_colour(3), " stroke-width=\"2\" stroke-dasharray=\"5 3\"");
    svg += text_element(p - 4, top - 6, chart.marker_label + " " + fixed(*chart.marker, 2) + " ms", "end", 11);
  }
  legend(entries, left, height - legend_height - 6, chart.width - left - 10, &svg);
  return svg + "</svg>\n";
}

}  // namespace sb
