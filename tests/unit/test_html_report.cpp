// `compare --html` and `report --html` (src/report/html_report.h, svg_chart.h): the page's structure from small
// hand-written result files: one <svg> per chart, its title, legend entries and bar count (workloads x labels),
// labels XML-escaped, no URL anywhere; the bandwidth series parse and its rejection; ticks, byte labels, --html.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "scalebench/error.h"
#include "src/cli/command_line.h"
#include "src/report/compare.h"
#include "src/report/html_report.h"
#include "src/report/svg_chart.h"

namespace sb {
namespace {

using nlohmann::json;

// A run file with the fields compare and report read (schema 2): 2 ranks, solo and dp with per-rank steps.
json run_doc(const std::string& workload, const std::string& unit) {
  return json::parse(R"({
    "schema_version": 2, "tool": "scalebench", "command": "run", "status": "ok",
    "context": {"devices": [{"rank": 0, "name": "NVIDIA H200"}], "topology": {"transport": "P2P/CUMEM"}},
    "config": {"workload": ")" + workload + R"(", "scale": "full", "precision": "bf16", "grad_dtype": "fp32",
               "overlap": true, "batch_per_rank": 128},
    "workload": {"unit": ")" + unit + R"("},
    "nranks": 2,
    "buckets_bytes": [25000000, 5000000, 1000000],
    "phases": {
      "solo": {"step_ms_p50": 33.0, "units_per_s_per_gpu": 4000.0, "units_per_s_total": 8000.0,
               "ranks": [{"step_ms": [33.0, 32.0, 34.0]}, {"step_ms": [33.5, 33.5]}]},
      "dp": {"step_ms_p50": 34.0, "units_per_s_per_gpu": 3800.0, "units_per_s_total": 7600.0,
             "ranks": [{"step_ms": [35.0, 34.0, 36.0]}, {"step_ms": [34.5]}],
             "timeline": {"nodes_done_ms": 33.5, "last_reduce_end_ms": 34.25, "tail_ms": 0.75,
                          "bucket_ready_ms": [20.0, 30.0, 33.4], "bucket_start_ms": [20.1, 30.1, 33.5],
                          "bucket_end_ms": [25.0, 32.0, 34.25]}}},
    "scaling_efficiency": 0.95, "exposed_comm_ms": 1.0, "overlap_pct": 50.0, "efficiency_bound": 1.0,
    "busbw_gbps": 107.5, "comm_busbw_gbps": 222.5
  })");
}

json one_gpu_doc(const std::string& workload, const std::string& unit) {
  json doc = run_doc(workload, unit);
  doc["nranks"] = 1;
  doc["context"]["topology"]["transport"] = nullptr;
  doc["phases"].erase("dp");
  doc["phases"]["solo"]["ranks"] = json::array({{{"step_ms", {33.0}}}});
  doc["phases"]["solo"]["units_per_s_total"] = 4000.0;
  for (const char* key : {"scaling_efficiency", "exposed_comm_ms", "overlap_pct", "efficiency_bound"}) {
    doc[key] = nullptr;
  }
  return doc;
}

json bandwidth_doc() {
  json doc = json::parse(R"({
    "schema_version": 1, "tool": "scalebench", "command": "bandwidth", "status": "ok",
    "context": {"nranks": 2, "backend": "nccl", "transport": "P2P/CUMEM", "devices": [{"rank": 0, "name": "H200"}]},
    "config": {"dtype": "fp32"},
    "results": [],
    "summary": {"peak_busbw_gbps": {"all_reduce": 300.0}, "wrong_total": null}
  })");
  const double sizes[] = {1024, 1048576, 1073741824};
  const double busbw[] = {1.5, 120.0, 300.0};
  for (int i = 0; i < 3; ++i) {
    for (const char* placement : {"out_of_place", "in_place"}) {
      doc["results"].push_back({{"op", "all_reduce"}, {"placement", placement}, {"size_bytes", sizes[i]},
                                {"busbw_gbps", busbw[i]}});
    }
  }
  return doc;
}

ResultFile parse(const std::string& path, const json& doc) { return parse_result_file(path, doc.dump()); }

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// The charts of a page, each "<svg ...</svg>".
std::vector<std::string> svgs(const std::string& html) {
  std::vector<std::string> charts;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    const size_t end = html.find("</svg>", at);
    EXPECT_NE(end, std::string::npos) << "an unclosed <svg>";
    charts.push_back(html.substr(at, end - at));
  }
  return charts;
}

ComparisonModel two_workloads_two_labels() {
  std::vector<ResultFile> files{parse("one_bert.json", one_gpu_doc("bert_base", "sequences")),
                                parse("one_tb.json", one_gpu_doc("transformer_big", "tokens")),
                                parse("nv_bert.json", run_doc("bert_base", "sequences")),
                                parse("nv_tb.json", run_doc("transformer_big", "tokens"))};
  assign_labels(files, {{"one_bert.json", "one <&> gpu"}, {"one_tb.json", "one <&> gpu"}});
  return build_comparison(files, "");
}

// The quickstart's page on one GPU: one label is its own baseline, so a chart of bars all at 1 says nothing; the
// guide's RTX 8000 ratio takes its place (issue 28: the one-GPU HTML report).
TEST(HtmlCompare, OneLabelDrawsTheGuideRatioNotBarsOfOne) {
  std::vector<ResultFile> files{parse("one_bert.json", one_gpu_doc("bert_base", "sequences")),
                                parse("one_tb.json", one_gpu_doc("transformer_big", "tokens"))};
  const std::string html = comparison_html(build_comparison(files, ""));
  const std::vector<std::string> charts = svgs(html);
  ASSERT_FALSE(charts.empty());
  EXPECT_EQ(html.find("<title>Throughput relative to"), std::string::npos);
  EXPECT_NE(charts[0].find("<title>Per-GPU throughput relative to the Quadro RTX 8000 of the guide</title>"),
            std::string::npos);
  EXPECT_EQ(count(charts[0], "class=\"bar\""), 2u);
  EXPECT_NE(charts[0].find(">0.53</text>"), std::string::npos) << "transformer_big alone: 4000 / the guide's 7507";
}

TEST(HtmlCompare, OneSvgPerChartWithTitlesLegendsAndOneBarPerWorkloadAndLabel) {
  const std::string html = comparison_html(two_workloads_two_labels());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<html"), count(html, "</html>"));
  EXPECT_EQ(count(html, "<table>"), count(html, "</table>"));
  const std::vector<std::string> charts = svgs(html);
  // Normalized throughput, the guide's RTX 8000 ratio, efficiency bars, then for each workload (x1 and x2 files) throughput and efficiency vs
  // GPU count.
  ASSERT_EQ(charts.size(), 7u);
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
  EXPECT_NE(charts[0].find("<title>Throughput relative to one &lt;&amp;&gt; gpu</title>"), std::string::npos);
  EXPECT_EQ(count(charts[0], "class=\"bar\""), 2u * 2u);  // workloads x labels
  EXPECT_EQ(count(charts[0], "class=\"legend\""), 2u);
  EXPECT_NE(charts[0].find(">one &lt;&amp;&gt; gpu</text>"), std::string::npos);
  EXPECT_NE(charts[0].find(">NVIDIA H200 x2 P2P/CUMEM</text>"), std::string::npos);
  EXPECT_NE(charts[0].find(">1.90</text>"), std::string::npos) << "the value label: 7600 / 4000";
  EXPECT_NE(charts[0].find(">throughput / baseline (x)</text>"), std::string::npos);
  EXPECT_NE(charts[0].find(">bert_base</text>"), std::string::npos);
  EXPECT_EQ(count(charts[2], "class=\"bar\""), 2u) << "only two-GPU files have E(N)";
  EXPECT_NE(charts[2].find(">95.0</text>"), std::string::npos);
  EXPECT_NE(charts[4].find("<title>bert_base: scaling efficiency vs GPU count</title>"), std::string::npos);
  EXPECT_EQ(count(charts[4], "class=\"point\""), 2u);  // E(1) = 100% and E(2) = 95%
  EXPECT_NE(charts[4].find(">GPUs (N)</text>"), std::string::npos);
  EXPECT_NE(charts[1].find("<title>Per-GPU throughput relative to the Quadro RTX 8000 of the guide</title>"),
            std::string::npos);
  EXPECT_NE(charts[1].find(">42.55</text>"), std::string::npos) << "bert_base alone: 4000 / the guide's 94";
  // The absolute table under the first chart, escaped the same way.
  EXPECT_NE(html.find("<th>one &lt;&amp;&gt; gpu</th>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">7600.0</td>"), std::string::npos);
  EXPECT_EQ(html.find("one <&> gpu"), std::string::npos) << "a raw label";
  EXPECT_EQ(html.find("http"), std::string::npos) << "the page must need no network";
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

TEST(HtmlCompare, BandwidthFilesGiveBusbwVsSizeOnALog2Axis) {
  std::vector<ResultFile> files{parse("bw.json", bandwidth_doc())};
  assign_labels(files, {});
  const std::string html = comparison_html(build_comparison(files, ""));
  const std::vector<std::string> charts = svgs(html);
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_NE(charts[0].find("<title>all_reduce: bus bandwidth vs message size</title>"), std::string::npos);
  EXPECT_EQ(count(charts[0], "class=\"point\""), 3u) << "out-of-place only";
  for (const char* tick : {">1K</text>", ">1M</text>", ">1G</text>", ">busbw (GB/s)</text>"}) {
    EXPECT_NE(charts[0].find(tick), std::string::npos) << tick;
  }
}

// Throughput on all GPUs vs GPU count: the measured line (1 GPU: 4000, 2 GPUs: 7600) and its dashed ideal
// (N x 4000) in the same colour.
TEST(HtmlCompare, ThroughputVsGpuCountBesideTheIdealLine) {
  const std::vector<std::string> charts = svgs(comparison_html(two_workloads_two_labels()));
  ASSERT_EQ(charts.size(), 7u);
  const std::string& chart = charts[3];
  EXPECT_NE(chart.find("<title>bert_base: throughput vs GPU count</title>"), std::string::npos) << chart;
  EXPECT_EQ(count(chart, "class=\"point\""), 2u) << "measured points only";
  EXPECT_EQ(count(chart, "stroke-dasharray=\"6 4\""), 1u) << "one ideal line";
  EXPECT_EQ(count(chart, "stroke-dasharray=\"4 2\""), 1u) << "its legend sample, dashed too";
  EXPECT_NE(chart.find("ideal: N x one GPU"), std::string::npos);
  EXPECT_NE(chart.find(">throughput on all GPUs (sequences/s)</text>"), std::string::npos);
}

// Issue 31: E(N) per strategy (a series) and interconnect (a category), only where an interconnect ran two; the
// sharded runs keep lines of their own in the GPU-count charts.
TEST(HtmlCompare, StrategyByInterconnectWhereTwoStrategiesRan) {
  json zero2 = run_doc("bert_base", "sequences");
  zero2["config"]["strategy"] = "zero2";
  zero2["scaling_efficiency"] = 0.9;
  std::vector<ResultFile> files{parse("ddp.json", run_doc("bert_base", "sequences")), parse("zero2.json", zero2)};
  assign_labels(files, {});
  const std::string html = comparison_html(build_comparison(files, ""));
  std::string chart;
  for (const std::string& svg : svgs(html)) {
    if (svg.find("<title>bert_base: scaling efficiency by strategy and interconnect</title>") != std::string::npos) {
      chart = svg;
    }
  }
  ASSERT_FALSE(chart.empty()) << html;
  EXPECT_EQ(count(chart, "class=\"bar\""), 2u) << "one interconnect, two strategies";
  EXPECT_NE(chart.find(">zero2</text>"), std::string::npos) << "the legend names the strategy";
  EXPECT_NE(chart.find(">90.0</text>"), std::string::npos);
  std::vector<ResultFile> alone{parse("ddp.json", run_doc("bert_base", "sequences"))};
  assign_labels(alone, {});
  EXPECT_EQ(comparison_html(build_comparison(alone, "")).find("by strategy and interconnect"), std::string::npos);
}

// A label keeps its colour on the whole page: a bandwidth file labelled like a run column takes that column's
// colour, and a one-rank bandwidth file (busbw 0 by definition) is not drawn.
TEST(HtmlCompare, LabelsKeepTheirColourAndOneRankBandwidthIsNotDrawn) {
  json one_rank = bandwidth_doc();
  one_rank["context"]["nranks"] = 1;
  std::vector<ResultFile> files{parse("one_bert.json", one_gpu_doc("bert_base", "sequences")),
                                parse("nv_bert.json", run_doc("bert_base", "sequences")),
                                parse("bw.json", bandwidth_doc()), parse("bw1.json", one_rank)};
  assign_labels(files, {{"bw.json", "NVIDIA H200 x2 P2P/CUMEM"}, {"bw1.json", "one rank"}});
  const std::string html = comparison_html(build_comparison(files, ""));
  const std::string colour = std::string("stroke=\"") + chart_colour(1) + "\"";  // the second run column's
  const std::vector<std::string> charts = svgs(html);
  ASSERT_FALSE(charts.empty());
  const std::string& bandwidth = charts.back();
  ASSERT_NE(bandwidth.find("bus bandwidth vs message size"), std::string::npos) << bandwidth;
  const size_t line = bandwidth.find("<polyline");
  ASSERT_NE(line, std::string::npos) << bandwidth;
  EXPECT_NE(bandwidth.substr(line, bandwidth.find("/>", line) - line).find(colour), std::string::npos) << bandwidth;
  EXPECT_EQ(count(bandwidth, "<polyline"), 1u) << "the one-rank file is not drawn";
  EXPECT_NE(html.find("one-rank files are not drawn"), std::string::npos);
}

TEST(HtmlCompare, BandwidthRecordsAreValidatedByPath) {
  json doc = bandwidth_doc();
  doc["results"][1].erase("busbw_gbps");
  try {
    parse("bw.json", doc);
    FAIL() << "accepted a record without busbw_gbps";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "bw.json: missing \"results[1].busbw_gbps\"");
  }
  const ResultFile file = parse("bw.json", bandwidth_doc());
  ASSERT_EQ(file.bandwidth.points.size(), 6u);
  EXPECT_EQ(file.bandwidth.points[5].size_bytes, 1073741824.0);
}

TEST(HtmlReport, StackedStepTimePerRankAndTheBucketTimeline) {
  const ResultFile file = parse("run.json", run_doc("bert_base", "sequences"));
  EXPECT_EQ(file.run.solo_rank_step_ms, (std::vector<double>{33.0, 33.5}));  // medians
  EXPECT_EQ(file.run.dp_rank_step_ms, (std::vector<double>{35.0, 34.5}));
  const std::string html = run_report_html(file);
  const std::vector<std::string> charts = svgs(html);
  ASSERT_EQ(charts.size(), 2u);
  EXPECT_EQ(count(charts[0], "class=\"bar\""), 2u * 2u);  // ranks x (compute, exposed)
  EXPECT_NE(charts[0].find(">compute (solo step)</text>"), std::string::npos);
  // Every stack ends at the job's dp step (p50 34 ms): rank 0 (solo 33 ms, the median GPU) shows the headline's
  // 1 ms exposed, not its own dp median's 2 ms.
  EXPECT_NE(charts[0].find(">34.00</text>"), std::string::npos) << charts[0];
  EXPECT_EQ(charts[0].find(">35.00</text>"), std::string::npos) << charts[0];
  EXPECT_EQ(count(charts[1], "class=\"bar\""), 3u);  // one all-reduce per bucket
  EXPECT_NE(charts[1].find(">backward done 33.50 ms</text>"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
}

// efficiency_decomposition (docs/RESULTS.md): 1 − E = 5 points = dilation 2 + tail 2 + skew 0.6 + residual 0.4.
json decomposed(json doc, double tail, double residual) {
  doc["efficiency_decomposition"] = {{"measured", true}, {"loss", 0.05}, {"dilation", 0.02}, {"tail", tail},
                                     {"skew", 0.006}, {"residual", residual},
                                     {"adds_up", std::abs(residual) <= 0.005}};
  return doc;
}

TEST(HtmlReport, DecompositionIsOneStackedBarPerRun) {
  const std::string html = run_report_html(parse("run.json", decomposed(run_doc("bert_base", "sequences"), 0.02, 0.004)));
  const std::vector<std::string> charts = svgs(html);
  ASSERT_EQ(charts.size(), 3u);  // step time, decomposition, timeline
  const std::string& chart = charts[1];
  EXPECT_NE(chart.find("1 - E(N) decomposed"), std::string::npos) << chart;
  EXPECT_EQ(count(chart, "class=\"bar\""), 4u);  // dilation, tail, skew, residual
  EXPECT_NE(chart.find("bert_base (1 - E 5.0, residual 0.4)"), std::string::npos) << chart;
  EXPECT_NE(chart.find(">skew: waiting for the slowest rank</text>"), std::string::npos);
  // Without it (files before it): no such chart.
  EXPECT_EQ(run_report_html(parse("run.json", run_doc("bert_base", "sequences"))).find("decomposed"),
            std::string::npos);
}

TEST(HtmlCompare, DecompositionBarsPerRunSayWhenTheyDoNotAddUp) {
  std::vector<ResultFile> files{parse("a.json", decomposed(run_doc("bert_base", "sequences"), 0.02, 0.004)),
                                parse("b.json", decomposed(run_doc("transformer_big", "tokens"), -0.01, 0.03))};
  assign_labels(files, {});
  const std::string html = comparison_html(build_comparison(files, ""));
  std::string chart;
  for (const std::string& svg : svgs(html)) {
    if (svg.find("1 - E(N) decomposed") != std::string::npos) chart = svg;
  }
  ASSERT_FALSE(chart.empty()) << html;
  EXPECT_NE(chart.find("transformer_big, "), std::string::npos);
  EXPECT_NE(chart.find("(1 - E 5.0, residual 3.0: do not add up)"), std::string::npos) << chart;
  EXPECT_NE(chart.find("tail: all-reduces and update after the backward / "), std::string::npos);
  EXPECT_NE(chart.find(": -1.0</title>"), std::string::npos);  // a negative tail: no segment, its value in the tip
}

TEST(SvgChart, RoundTicksBytesAndEscaping) {
  EXPECT_EQ(nice_ticks(0, 1.93, 5), (std::vector<double>{0, 0.5, 1.0, 1.5, 2.0}));
  EXPECT_EQ(nice_ticks(0, 370, 5), (std::vector<double>{0, 100, 200, 300, 400}));
  EXPECT_EQ(format_bytes(512), "512");
  EXPECT_EQ(format_bytes(4096), "4K");
  EXPECT_EQ(format_bytes(64.0 * 1024 * 1024), "64M");
  EXPECT_EQ(xml_escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
}

TEST(HtmlCommandLine, CompareAndReportTakeHtmlBesideTheirTextOutput) {
  std::vector<const char*> args{"scalebench", "compare", "a.json", "b.json", "--markdown", "--html", "o.html"};
  const CommandLine compare = parse_command_line(static_cast<int>(args.size()), args.data());
  EXPECT_EQ(compare.compare.files, (std::vector<std::string>{"a.json", "b.json"}));
  EXPECT_EQ(compare.compare.html_path, "o.html");
  EXPECT_TRUE(compare.compare.markdown);
  args = {"scalebench", "report", "a.json", "--html", "r.html"};
  const CommandLine report = parse_command_line(static_cast<int>(args.size()), args.data());
  EXPECT_EQ(report.compare.html_path, "r.html");
  args = {"scalebench", "report", "a.json", "--html"};
  EXPECT_THROW(parse_command_line(static_cast<int>(args.size()), args.data()), UsageError);
}

}  // namespace
}  // namespace sb
