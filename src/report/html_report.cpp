// HTML pages of compare and report (html_report.h). The page is assembled from strings: a fixed head with
// inline CSS, then one <section> per chart (an SVG from svg_chart.cpp and a sentence on how to read it).
#include "src/report/html_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "src/report/guide_throughput.h"
#include "src/report/svg_chart.h"

namespace sb {
namespace {

const char* kStyle =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1600px}"
    "figure svg{width:100%;height:auto}"  // charts follow the page's width (their viewBox keeps the aspect)
    "h1{font-size:22px}h2{font-size:17px;margin-top:28px}p.note{color:#555;font-size:13px;max-width:720px}"
    "figure{margin:8px 0}.tables{overflow-x:auto}"
    "table{border-collapse:collapse;font-size:13px;margin:8px 0 20px}"
    "th,td{border:1px solid #ccc;padding:3px 8px}th{background:#f2f2f2}td.num{text-align:right}"
    "caption{text-align:left;font-weight:bold;padding:4px 0}";

std::string page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + xml_escape(title) +
         "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<h1>" + xml_escape(title) + "</h1>\n" + body +
         "</body>\n</html>\n";
}

std::string section(const std::string& heading, const std::string& svg, const std::string& note) {
  return "<section>\n<h2>" + xml_escape(heading) + "</h2>\n<figure>\n" + svg + "</figure>\n<p class=\"note\">" +
         xml_escape(note) + "</p>\n</section>\n";
}

const ResultFile* run_cell(const ComparisonModel& model, const std::string& workload, const std::string& label) {
  const auto found = model.run_cells.find({workload, label});
  return found == model.run_cells.end() ? nullptr : &model.files[found->second];
}

// One colour per label on the whole page: run labels in column order, then bandwidth labels not among them.
int label_colour(const ComparisonModel& model, const std::string& label) {
  const auto run = std::find(model.run_labels.begin(), model.run_labels.end(), label);
  if (run != model.run_labels.end()) return static_cast<int>(run - model.run_labels.begin());
  int index = static_cast<int>(model.run_labels.size());
  for (const std::string& other : model.bandwidth_labels) {
    if (other == label) return index;
    if (std::find(model.run_labels.begin(), model.run_labels.end(), other) == model.run_labels.end()) ++index;
  }
  return index;
}

// The GPUs, transport and gradient settings of a run, all but its count and --strategy.
std::string interconnect_name(const ResultFile& file) {
  std::string name = file.device_name + (file.transport.empty() ? "" : " " + file.transport);
  if (file.run.grad_dtype == "bf16") name += " bf16-wire";
  if (!file.run.overlap) name += " no-overlap";
  return name;
}

// A line's name in the per-workload GPU-count charts: what stays the same as the GPU count changes.
std::string scaling_series_name(const ResultFile& file) {
  return interconnect_name(file) + (file.run.strategy == "ddp" ? "" : " " + file.run.strategy);
}

std::string normalized_chart(const ComparisonModel& model) {
  BarChart chart;
  chart.title = "Throughput relative to " + model.baseline;
  chart.value_axis_title = "throughput / baseline (x)";
  chart.categories = model.rows;
  chart.reference = 1.0;
  chart.reference_label = "baseline";
  for (const std::string& label : model.run_labels) {
    BarSeries series{label, {}, label_colour(model, label)};
    for (const std::string& workload : model.rows) {
      const ResultFile* file = run_cell(model, workload, label);
      const ResultFile* base = run_cell(model, workload, model.baseline);
      series.values.push_back(file == nullptr || base == nullptr
                                  ? std::nullopt
                                  : ratio_to(headline_throughput(file->run), headline_throughput(base->run)));
    }
    chart.series.push_back(series);
  }
  return svg_bar_chart(chart);
}

// Each label's per-GPU throughput alone (the solo phase) over the guide's Quadro RTX 8000 figure: the guide's
// normalised column, a unitless ratio every workload can share one axis in. Empty when no bar has a value (tiny
// runs have none).
std::string guide_chart(const ComparisonModel& model) {
  BarChart chart;
  chart.title = "Per-GPU throughput relative to the Quadro RTX 8000 of the guide";
  chart.value_axis_title = "units/s per GPU alone / the guide's RTX 8000 units/s (x)";
  chart.categories = model.rows;
  chart.reference = 1.0;
  chart.reference_label = "RTX 8000";
  bool any = false;
  for (const std::string& label : model.run_labels) {
    BarSeries series{label, {}, label_colour(model, label)};
    for (const std::string& workload : model.rows) {
      const ResultFile* file = run_cell(model, workload, label);
      // Only the full-scale model is the guide's workload; a tiny run's units are not comparable.
      const std::optional<double> alone = file != nullptr && file->run.solo.ran && file->run.scale == "full"
                                              ? file->run.solo.units_per_s_per_gpu
                                              : std::nullopt;
      series.values.push_back(ratio_to(alone, guide_rtx8000_units_per_s(workload)));
      any |= series.values.back().has_value();
    }
    chart.series.push_back(series);
  }
  return any ? svg_bar_chart(chart) : "";
}

// 1 − E decomposed (docs/RESULTS.md, efficiency_decomposition): one stacked bar per run, in points of E. A negative
// term draws no segment (a stack cannot hold it), so every bar's name carries 1 − E and the residual.
std::string decomposition_chart(const std::vector<std::pair<std::string, RunSummary::Decomposition>>& runs) {
  BarChart chart;
  chart.title = "1 - E(N) decomposed: dilation + tail + skew + residual";
  chart.value_axis_title = "points of E (1 - E = 100 - E%)";
  chart.stacked = true;
  chart.value_decimals = 1;
  BarSeries dilation{"dilation: slower backward beside the all-reduces", {}},
      tail{"tail: all-reduces and update after the backward", {}}, skew{"skew: waiting for the slowest rank", {}},
      residual{"residual: not measured by the three", {}};
  for (const auto& [name, d] : runs) {
    char text[160];
    std::snprintf(text, sizeof text, " (1 - E %.1f, residual %.1f%s)", 100 * d.loss, 100 * d.residual,
                  d.adds_up ? "" : ": do not add up");
    chart.categories.push_back(name + text);
    dilation.values.push_back(100 * d.dilation);
    tail.values.push_back(100 * d.tail);
    skew.values.push_back(100 * d.skew);
    residual.values.push_back(100 * d.residual);
  }
  chart.series = {dilation, tail, skew, residual};
  return svg_bar_chart(chart);
}
constexpr const char* kDecompositionNote =
    "Why E(N) is below 100%, each term measured per rank and step (docs/RESULTS.md): dilation, the backward pass "
    "slower beside the all-reduces than alone; tail, the all-reduces and the update left after the backward; skew, "
    "waiting for the slowest rank; residual, what the three do not measure. A negative term draws no segment: "
    "its value is in the tooltip, 1 - E and the residual in the bar's name.";

std::string efficiency_chart(const ComparisonModel& model, bool* any) {
  BarChart chart;
  chart.title = "Scaling efficiency E(N)";
  chart.value_axis_title = "E(N) = dp throughput / (N x one GPU's) (%)";
  chart.categories = model.rows;
  chart.value_decimals = 1;
  chart.reference = 100.0;
  chart.reference_label = "100%";
  *any = false;
  for (size_t l = 0; l < model.run_labels.size(); ++l) {
    const std::string& label = model.run_labels[l];
    BarSeries series{label, {}, label_colour(model, label)};
    bool has = false;
    for (const std::string& workload : model.rows) {
      const ResultFile* file = run_cell(model, workload, label);
      std::optional<double> value;
      if (file != nullptr && file->run.scaling_efficiency) value = 100.0 * *file->run.scaling_efficiency;
      has |= value.has_value();
      series.values.push_back(value);
    }
    if (has) chart.series.push_back(series);
    *any |= has;
  }
  return svg_bar_chart(chart);
}

// E vs GPU count for one workload: a series per GPU, transport and wire/overlap setting; a one-GPU file of the
// same GPU adds E(1) = 100% to each. Empty when no series has two GPU counts.
std::string efficiency_lines(const ComparisonModel& model, const std::string& workload) {
  std::map<std::string, LineSeries> series;
  std::map<std::string, bool> has_one;  // device -> a one-GPU file of this workload exists
  for (const ResultFile& file : model.files) {
    if (file.kind != ResultKind::kRun || file.run.workload != workload) continue;
    if (file.nranks == 1) {
      has_one[file.device_name] = true;
      continue;
    }
    if (!file.run.scaling_efficiency) continue;
    const std::string name = scaling_series_name(file);
    LineSeries& line = series[name];
    line.name = name;
    if (line.colour < 0) line.colour = label_colour(model, file.label);  // its label's colour in the bar charts
    line.points.emplace_back(file.nranks, 100.0 * *file.run.scaling_efficiency);
  }
  LineChart chart;
  chart.title = workload + ": scaling efficiency vs GPU count";
  chart.x_title = "GPUs (N)";
  chart.y_title = "E(N) (%)";
  chart.x_at_points = true;
  bool worth = false;
  for (auto& [name, line] : series) {
    for (const auto& [device_name, one] : has_one) {
      if (one && (name == device_name || name.rfind(device_name + " ", 0) == 0)) line.points.emplace_back(1, 100.0);
    }
    std::set<double> counts;
    for (const auto& point : line.points) counts.insert(point.first);
    if (counts.size() >= 2) {
      worth = true;
      chart.series.push_back(line);
    }
  }
  return worth ? svg_line_chart(chart) : std::string();
}

// Issue 31: E(N) of each data-parallel strategy (a series: ddp, zero1, zero2, zero3) on each interconnect (a category:
// the GPUs, their count, transport, emulation and gradient settings, all but the strategy). Empty unless some
// interconnect ran two strategies of the workload.
std::string strategy_chart(const ComparisonModel& model, const std::string& workload) {
  const std::vector<std::string> order{"ddp", "zero1", "zero2", "zero3"};
  std::vector<std::string> interconnects;
  std::map<std::string, std::map<std::string, double>> efficiency;  // interconnect -> strategy -> E (%)
  for (const ResultFile& file : model.files) {
    if (file.kind != ResultKind::kRun || file.run.workload != workload || file.nranks < 2) continue;
    if (!file.run.scaling_efficiency) continue;
    std::string where = interconnect_name(file) + " x" + std::to_string(file.nranks);
    if (file.emulate != "none") where += " emulated-" + file.emulate;
    if (efficiency.count(where) == 0) interconnects.push_back(where);
    efficiency[where][file.run.strategy] = 100.0 * *file.run.scaling_efficiency;
  }
  bool worth = false;
  for (const auto& [where, by_strategy] : efficiency) worth = worth || by_strategy.size() >= 2;
  if (!worth) return "";
  BarChart chart;
  chart.title = workload + ": scaling efficiency by strategy and interconnect";
  chart.value_axis_title = "E(N) (%)";
  chart.categories = interconnects;
  chart.value_decimals = 1;
  chart.reference = 100.0;
  chart.reference_label = "100%";
  for (size_t s = 0; s < order.size(); ++s) {
    BarSeries series{order[s], {}, static_cast<int>(s)};
    bool has = false;
    for (const std::string& where : interconnects) {
      const auto found = efficiency[where].find(order[s]);
      series.values.push_back(found == efficiency[where].end() ? std::nullopt : std::optional<double>(found->second));
      has = has || found != efficiency[where].end();
    }
    if (has) chart.series.push_back(series);
  }
  return svg_bar_chart(chart);
}

// Throughput on all GPUs vs GPU count for one workload, each series beside its ideal (dashed): N times one GPU's
// throughput. One GPU's comes from a one-GPU file of the same device, else from the series' own solo phase.
// Empty when no series has a run on two or more GPUs.
std::string throughput_lines(const ComparisonModel& model, const std::string& workload) {
  std::map<std::string, std::optional<double>> one_gpu;  // device -> a one-GPU file's throughput
  for (const ResultFile& file : model.files) {
    if (file.kind == ResultKind::kRun && file.run.workload == workload && file.nranks == 1) {
      one_gpu[file.device_name] = headline_throughput(file.run);
    }
  }
  std::map<std::string, LineSeries> series;
  std::map<std::string, double> alone;  // series -> one GPU's units/s
  std::string unit;
  for (const ResultFile& file : model.files) {
    if (file.kind != ResultKind::kRun || file.run.workload != workload || file.nranks < 2 || !file.run.dp.ran) continue;
    unit = file.run.unit;
    const std::string name = scaling_series_name(file);
    LineSeries& line = series[name];
    line.name = name;
    if (line.colour < 0) line.colour = label_colour(model, file.label);
    line.points.emplace_back(file.nranks, *file.run.dp.units_per_s_total);
    if (alone.count(name) == 0) {
      const std::optional<double> one = one_gpu.count(file.device_name) ? one_gpu[file.device_name]
                                                                         : file.run.solo.units_per_s_per_gpu;
      if (one) alone[name] = *one;
    }
  }
  LineChart chart;
  chart.title = workload + ": throughput vs GPU count";
  chart.x_title = "GPUs (N)";
  chart.y_title = "throughput on all GPUs (" + unit + "/s)";
  chart.x_at_points = true;
  for (auto& [name, line] : series) {
    double most = 1;
    for (const auto& point : line.points) most = std::max(most, point.first);
    if (alone.count(name) != 0) {
      line.points.emplace_back(1, alone[name]);
      chart.series.push_back(line);
      chart.series.push_back({"ideal: N x one GPU (" + name + ")", {{1, alone[name]}, {most, most * alone[name]}},
                              line.colour, true});
    } else {
      chart.series.push_back(line);
    }
  }
  return chart.series.empty() ? std::string() : svg_line_chart(chart);
}

// A --gpus-sweep's curve (issue 29): throughput on all k GPUs against k beside the ideal k·X(1), and E(k) against
// k. The measured points are drawn as one series per link class in order of k (k = 1 joins the first), so the
// legend and the colour change mark where the job left NVLink, a PCIe switch or the node. Empty without a sweep.
std::string sweep_sections(const ResultFile& file, const std::string& heading) {
  const RunSummary& run = file.run;
  std::vector<RunSummary::SweepFigures> points;
  for (const RunSummary::SweepFigures& p : run.sweep) {
    if (p.measured && p.units_per_s_total && p.efficiency) points.push_back(p);
  }
  if (points.size() < 2) return "";
  std::vector<LineSeries> throughput, efficiency;
  std::vector<std::string> changes;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string link = points[i].link.empty() && i + 1 < points.size() ? points[i + 1].link : points[i].link;
    if (throughput.empty() || throughput.back().name != "measured, " + link) {
      if (!throughput.empty()) {
        changes.push_back(points[i - 1].link + " to " + link + " between k = " + std::to_string(points[i - 1].gpus) +
                          " and " + std::to_string(points[i].gpus));
      }
      const int colour = static_cast<int>(throughput.size());
      throughput.push_back({"measured, " + link, {}, colour, false});
      efficiency.push_back({"measured, " + link, {}, colour, false});
      if (i > 0) {  // joined to the previous point, so the curve stays one line
        throughput.back().points.emplace_back(points[i - 1].gpus, *points[i - 1].units_per_s_total);
        efficiency.back().points.emplace_back(points[i - 1].gpus, 100 * *points[i - 1].efficiency);
      }
    }
    throughput.back().points.emplace_back(points[i].gpus, *points[i].units_per_s_total);
    efficiency.back().points.emplace_back(points[i].gpus, 100 * *points[i].efficiency);
  }
  const double x1 = points.front().gpus == 1 ? *points.front().units_per_s_per_gpu : 0;
  LineChart flow;
  flow.title = heading + ": throughput vs GPUs in one job";
  flow.x_title = "GPUs (k)";
  flow.y_title = "throughput on k GPUs (" + run.unit + "/s)";
  flow.x_at_points = true;
  flow.series = throughput;
  if (x1 > 0) {
    const double most = points.back().gpus * points.back().groups_at_once;
    flow.series.push_back({"ideal: k x one GPU", {{1, x1}, {most, most * x1}}, 7, true});
  }
  LineChart eff;
  eff.title = heading + ": E(k) vs GPUs in one job";
  eff.x_title = "GPUs (k)";
  eff.y_title = "E(k) (%)";
  eff.x_at_points = true;
  eff.series = efficiency;
  std::string where = changes.empty() ? "one link class throughout" : "the link changes from ";
  for (size_t i = 0; i < changes.size(); ++i) where += (i ? "; then " : "") + changes[i];
  const std::string groups = run.sweep_concurrent ? " N/k groups of k trained at once at each k (every GPU busy), "
                                                    "their throughput summed;"
                                                  : " one group of k trained while the others waited;";
  return section(heading + ": scaling curve", svg_line_chart(flow),
                 "One job's --gpus-sweep:" + groups + " X(1) is the median solo GPU, the dashed line k x X(1). "
                 "Each colour is one link class (the weakest link among the k ranks): " + where + ".") +
         section(heading + ": efficiency curve", svg_line_chart(eff),
                 "E(k) = throughput on k GPUs / (k x X(1)); 100% is perfect scaling.");
}

std::string bandwidth_chart(const ComparisonModel& model, const std::string& op) {
  LineChart chart;
  chart.title = op + ": bus bandwidth vs message size";
  chart.x_title = "message size (bytes, log2 scale)";
  chart.y_title = "busbw (GB/s)";
  chart.log2_x = true;
  chart.bytes_x = true;
  for (const std::string& label : model.bandwidth_labels) {
    const ResultFile& file = model.files[model.bandwidth_files.at(label)];
    if (file.nranks < 2) continue;  // one rank: busbw is 0 by definition, a flat line that says nothing
    bool out_of_place = false;  // nccl-tests' headline placement when it was measured
    for (const BandwidthPoint& point : file.bandwidth.points) {
      out_of_place |= point.op == op && point.placement == "out_of_place";
    }
    LineSeries line{label, {}, label_colour(model, label)};
    for (const BandwidthPoint& point : file.bandwidth.points) {
      if (point.op == op && (point.placement == "out_of_place") == out_of_place) {
        line.points.emplace_back(point.size_bytes, point.busbw_gbps);
      }
    }
    if (!line.points.empty()) chart.series.push_back(line);
  }
  return chart.series.empty() ? std::string() : svg_line_chart(chart);
}

}  // namespace

std::string tables_html(const std::vector<Table>& tables) {
  std::string html = "<div class=\"tables\">\n";
  for (const Table& table : tables) {
    html += "<table>\n<caption>" + xml_escape(table.title) + "</caption>\n<tr>";
    for (const std::string& cell : table.header) html += "<th>" + xml_escape(cell) + "</th>";
    html += "</tr>\n";
    for (const auto& row : table.rows) {
      html += "<tr>";
      for (size_t c = 0; c < row.size(); ++c) {
        const bool right = c < table.right_aligned.size() && table.right_aligned[c];
        html += std::string(right ? "<td class=\"num\">" : "<td>") + xml_escape(row[c]) + "</td>";
      }
      html += "</tr>\n";
    }
    html += "</table>\n";
  }
  return html + "</div>\n";
}

std::string comparison_html(const ComparisonModel& model) {
  const std::vector<Table> tables = comparison_tables(model);
  std::string body;
  size_t shown = 0;  // tables already placed under a chart
  if (!model.run_labels.empty()) {
    // One label is its own baseline: every bar would be 1, so that chart is left out.
    if (model.run_labels.size() > 1) {
      body += section("Throughput relative to the baseline", normalized_chart(model),
                      "Each bar is one label's throughput on one workload (dp units/s on all GPUs, solo where dp "
                      "did not run) divided by the baseline's (" + model.baseline + "); the dashed line is 1.");
    }
    const std::string guide = guide_chart(model);
    if (!guide.empty()) {
      body += section("Against the guide's Quadro RTX 8000", guide,
                      "Each bar is one label's per-GPU throughput alone (the solo phase) divided by the GPU buying "
                      "guide's measurement of one Quadro RTX 8000 on the same workload (Lambda Labs, Feb 2020; "
                      "shared/WORKLOADS.md), as the suite's \"x RTX 8000\" column; the dashed line is 1.");
    }
    body += tables_html({tables.front()});
    shown = 1;
    bool any = false;
    const std::string bars = efficiency_chart(model, &any);
    if (any) {
      body += section("Scaling efficiency", bars,
                      "E(N): the dp phase's throughput over N times the solo phase's (every GPU alone); 100% is "
                      "perfect scaling. One-GPU files have none.");
    }
    std::vector<std::pair<std::string, RunSummary::Decomposition>> decomposed;
    for (const std::string& workload : model.rows) {
      for (const std::string& label : model.run_labels) {
        const ResultFile* file = run_cell(model, workload, label);
        if (file != nullptr && file->run.decomposition) {
          decomposed.emplace_back(workload + ", " + label, *file->run.decomposition);
        }
      }
    }
    if (!decomposed.empty()) body += section("Scaling efficiency decomposed", decomposition_chart(decomposed),
                                             kDecompositionNote);
    for (const std::string& workload : model.rows) {
      const std::string throughput = throughput_lines(model, workload);
      if (!throughput.empty()) {
        body += section(workload + ": throughput vs GPU count", throughput,
                        "Units/s on all GPUs (dp) at each GPU count; the dashed line of the same colour is ideal "
                        "scaling, N times one GPU alone (a one-GPU file, else the run's own solo phase).");
      }
      const std::string lines = efficiency_lines(model, workload);
      if (!lines.empty()) {
        body += section(workload + ": efficiency vs GPU count", lines,
                        "One line per GPU, transport and gradient setting; a one-GPU file adds E(1) = 100%.");
      }
      const std::string strategies = strategy_chart(model, workload);
      if (!strategies.empty()) {
        body += section(workload + ": strategy by interconnect", strategies,
                        "E(N) of each data-parallel strategy (--strategy) on each set of GPUs and links: ddp "
                        "all-reduces; zero1 all-reduces, updates a shard and all-gathers it; zero2 reduce-scatters "
                        "and all-gathers; zero3 reduce-scatters and all-gathers each unit before its use in the "
                        "forward and the backward pass. The gap between the bars of one group is what the "
                        "interconnect charges for sharding.");
      }
      for (const std::string& label : model.run_labels) {
        const ResultFile* file = run_cell(model, workload, label);
        if (file != nullptr) body += sweep_sections(*file, workload + ", " + label);
      }
    }
  }
  bool one_rank_bandwidth = false;
  for (const auto& [label, index] : model.bandwidth_files) one_rank_bandwidth |= model.files[index].nranks < 2;
  for (const std::string& op : model.ops) {
    const std::string chart = bandwidth_chart(model, op);
    if (!chart.empty()) {
      body += section(op + ": bus bandwidth", chart,
                      "busbw per message size (out-of-place where measured), one line per bandwidth file" +
                          std::string(one_rank_bandwidth ? "; one-rank files are not drawn (no bus traffic: busbw "
                                                           "is 0 by definition)."
                                                         : "."));
    }
  }
  if (one_rank_bandwidth) {
    body += "<p class=\"note\">Bandwidth files of one rank are in the tables only: with one rank nothing crosses a "
            "bus, so their busbw is 0 by definition.</p>\n";
  }
  const std::vector<Table> rest(tables.begin() + static_cast<long>(shown), tables.end());
  body += "<h2>Tables</h2>\n" + tables_html(rest);
  return page("scalebench compare", body);
}

std::string run_report_html(const ResultFile& file) {
  const RunSummary& run = file.run;
  std::string body = "<p class=\"note\">" + xml_escape(file.path + ": " + default_label(file) + ", " + run.workload +
                                                       " (" + run.scale + ", " + run.precision + ")") + "</p>\n";
  const size_t nranks = std::max(run.solo_rank_step_ms.size(), run.dp_rank_step_ms.size());
  if (nranks > 0) {
    BarChart chart;
    chart.title = "Step time per rank: compute and exposed communication";
    chart.value_axis_title = "step time, median (ms)";
    chart.stacked = true;
    BarSeries compute{"compute (solo step)", {}}, exposed{"exposed communication (dp step - solo step)", {}};
    BarSeries dp_only{"dp step (no solo phase)", {}};
    for (size_t r = 0; r < nranks; ++r) {
      chart.categories.push_back("rank " + std::to_string(r));
      const std::optional<double> solo =
          r < run.solo_rank_step_ms.size() ? std::optional<double>(run.solo_rank_step_ms[r]) : std::nullopt;
      const std::optional<double> dp =
          r < run.dp_rank_step_ms.size() ? std::optional<double>(run.dp_rank_step_ms[r]) : std::nullopt;
      compute.values.push_back(solo);
      // Every rank waits for the slowest in a dp step, so the bar ends at the job's dp step (the headline's dp
      // p50); what lies beyond the rank's own solo step is exposed for it. The median GPU's is the headline.
      const double dp_step = run.dp.ran ? run.dp.step_ms_p50 : (dp ? *dp : 0);
      exposed.values.push_back(solo && dp ? std::optional<double>(std::max(dp_step - *solo, 0.0)) : std::nullopt);
      dp_only.values.push_back(!solo ? dp : std::nullopt);
    }
    chart.series.push_back(compute);
    if (!run.dp_rank_step_ms.empty()) chart.series.push_back(run.solo_rank_step_ms.empty() ? dp_only : exposed);
    body += section("Step time breakdown", svg_bar_chart(chart),
                    "Each rank's median solo step (the GPU alone: compute), then up to the dp phase's step "
                    "(p50; every rank waits for the slowest each step): the communication the backward did not "
                    "hide, as that rank sees it. For the median GPU this is the headline exposed communication.");
  }
  if (run.decomposition) {
    body += section("Scaling efficiency decomposed", decomposition_chart({{run.workload, *run.decomposition}}),
                    kDecompositionNote);
  }
  if (!run.bucket_ready_ms.empty()) {
    TimelineChart chart;
    chart.title = "dp step timeline (rank 0, medians)";
    chart.x_title = "time from the step's first node (ms)";
    chart.marker = run.nodes_done_ms;
    chart.marker_label = "backward done";
    for (size_t b = 0; b < run.bucket_ready_ms.size(); ++b) {
      chart.rows.push_back({"bucket " + std::to_string(b), run.bucket_ready_ms[b], run.bucket_start_ms[b],
                            run.bucket_end_ms[b]});
    }
    std::string note = "One row per gradient bucket in issue order: the black tick is when its last gradient was "
                       "written, the bar its all-reduce. Bars right of the dashed line are the exposed tail";
    if (run.tail_ms) {
      char tail[32];
      std::snprintf(tail, sizeof tail, " (%.2f ms here)", *run.tail_ms);
      note += tail;
    }
    body += section("dp timeline", svg_timeline_chart(chart), note + ".");
  }
  body += sweep_sections(file, run.workload);
  body += "<h2>Tables</h2>\n" + tables_html(run_report_tables(file));
  return page("scalebench report: " + run.workload, body);
}

}  // namespace sb
