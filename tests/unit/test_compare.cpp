// `scalebench compare` and `report` (src/report/compare.h): golden Markdown and CSV tables from small
// hand-written result files, the normalisation, labels and their collisions, and every rejection's exact text.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "scalebench/error.h"
#include "src/cli/command_line.h"
#include "src/report/compare.h"

namespace sb {
namespace {

using nlohmann::json;

// A run file with only the fields compare reads (schema 2, docs/RESULTS.md); 2 ranks over NVLink.
const char* kRunNvlink = R"({
  "schema_version": 2, "tool": "scalebench", "command": "run", "status": "ok",
  "context": {"devices": [{"rank": 0, "name": "NVIDIA H200"}, {"rank": 1, "name": "NVIDIA H200"}],
              "topology": {"transport": "P2P/CUMEM"}},
  "config": {"workload": "bert_base", "scale": "full", "precision": "bf16", "grad_dtype": "fp32",
             "overlap": true, "batch_per_rank": 128},
  "workload": {"unit": "sequences"},
  "nranks": 2,
  "buckets_bytes": [25000000, 5000000],
  "phases": {
    "solo": {"step_ms_p50": 33.0, "step_ms_p95": 33.5, "step_ms_max": 34.0, "units_per_s_per_gpu": 4000.0,
             "units_per_s_total": 8000.0, "tflops_per_gpu": 268.0, "mfu": 0.27},
    "comm": {"step_ms_p50": 2.0, "busbw_gbps": 220.0},
    "dp": {"step_ms_p50": 34.0, "units_per_s_per_gpu": 3800.0, "units_per_s_total": 7600.0,
           "timeline": {"nodes_done_ms": 33.5, "last_reduce_end_ms": 34.25, "tail_ms": 0.75}}},
  "scaling_efficiency": 0.95, "exposed_comm_ms": 1.0, "overlap_pct": 50.0, "efficiency_bound": 1.0,
  "busbw_gbps": 107.5, "comm_busbw_gbps": 222.5
})";

json run_doc() { return json::parse(kRunNvlink); }

// The same run over sockets at `total` units/s, or one GPU with the solo phase only.
json sockets_doc(double total) {
  json doc = run_doc();
  doc["context"]["topology"]["transport"] = "NET/Socket";
  doc["phases"]["dp"]["units_per_s_total"] = total;
  doc["scaling_efficiency"] = 0.25;
  doc["exposed_comm_ms"] = 100.5;
  return doc;
}
json one_gpu_doc(const std::string& workload, const std::string& unit, double total) {
  json doc = run_doc();
  doc["nranks"] = 1;
  doc["context"]["devices"] = json::array({{{"rank", 0}, {"name", "NVIDIA H200"}}});
  doc["context"]["topology"]["transport"] = nullptr;
  doc["config"]["workload"] = workload;
  doc["workload"]["unit"] = unit;
  doc["phases"].erase("comm");
  doc["phases"].erase("dp");
  doc["phases"]["solo"]["units_per_s_total"] = total;
  for (const char* key : {"scaling_efficiency", "exposed_comm_ms", "overlap_pct", "efficiency_bound", "busbw_gbps",
                          "comm_busbw_gbps"}) {
    doc[key] = nullptr;
  }
  return doc;
}

const char* kBandwidth = R"({
  "schema_version": 1, "tool": "scalebench", "command": "bandwidth", "status": "ok",
  "context": {"nranks": 2, "backend": "nccl", "transport": "P2P/CUMEM",
              "devices": [{"rank": 0, "name": "NVIDIA H200"}]},
  "config": {"dtype": "fp32"},
  "results": [],
  "summary": {"peak_busbw_gbps": {"all_reduce": 361.25, "all_gather": 340.5}, "wrong_total": null}
})";

ResultFile parse(const std::string& path, const json& doc) { return parse_result_file(path, doc.dump()); }

// The UsageError text parse_result_file throws for `text`, or "" when it accepts it.
std::string rejection(const std::string& text) {
  try {
    parse_result_file("results.json", text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

ComparisonModel three_files(const std::string& baseline = "") {
  std::vector<ResultFile> files{parse("nvlink.json", run_doc()), parse("sockets.json", sockets_doc(1900)),
                                parse("one_tb.json", one_gpu_doc("transformer_big", "tokens", 50000))};
  assign_labels(files, {});
  return build_comparison(files, baseline);
}

TEST(CompareParse, ReadsEveryUsedField) {
  const ResultFile file = parse("a.json", run_doc());
  EXPECT_EQ(file.kind, ResultKind::kRun);
  EXPECT_EQ(file.device_name, "NVIDIA H200");
  EXPECT_EQ(file.nranks, 2);
  EXPECT_EQ(file.transport, "P2P/CUMEM");
  EXPECT_EQ(file.run.workload, "bert_base");
  EXPECT_TRUE(file.run.solo.ran && file.run.comm.ran && file.run.dp.ran);
  EXPECT_DOUBLE_EQ(*file.run.dp.units_per_s_total, 7600.0);
  EXPECT_DOUBLE_EQ(*file.run.scaling_efficiency, 0.95);
  EXPECT_EQ(file.run.buckets_bytes.size(), 2u);
  EXPECT_DOUBLE_EQ(*file.run.tail_ms, 0.75);
  const ResultFile one = parse("b.json", one_gpu_doc("bert_base", "sequences", 4000));
  EXPECT_EQ(one.transport, "");
  EXPECT_FALSE(one.run.dp.ran);
  EXPECT_FALSE(one.run.scaling_efficiency.has_value());
  const ResultFile bandwidth = parse_result_file("bw.json", kBandwidth);
  EXPECT_EQ(bandwidth.kind, ResultKind::kBandwidth);
  ASSERT_EQ(bandwidth.bandwidth.peak_busbw_gbps.size(), 2u);
}

TEST(CompareParse, RejectsForeignAndBrokenFilesWithTheField) {
  json doc = run_doc();
  doc["schema_version"] = 7;
  EXPECT_EQ(rejection(doc.dump()), "results.json: schema_version 7 is not supported (run: 2 to 3, bandwidth: 1)");
  doc = json::parse(kBandwidth);
  doc["schema_version"] = 2;  // run's version on a bandwidth file
  EXPECT_EQ(rejection(doc.dump()), "results.json: schema_version 2 is not supported (run: 2 to 3, bandwidth: 1)");
  doc = run_doc();
  doc["command"] = "topo";
  EXPECT_EQ(rejection(doc.dump()), "results.json: command \"topo\" is not supported (run, bandwidth, suite)");
  doc = run_doc();
  doc["phases"]["solo"].erase("units_per_s_per_gpu");
  EXPECT_EQ(rejection(doc.dump()), "results.json: missing \"phases.solo.units_per_s_per_gpu\"");
  doc = run_doc();
  doc["phases"].erase("solo");
  doc["phases"].erase("dp");
  EXPECT_EQ(rejection(doc.dump()), "results.json: missing \"phases.solo\"");
  doc = run_doc();
  doc["context"]["devices"] = json::array();
  EXPECT_EQ(rejection(doc.dump()), "results.json: missing \"context.devices[0].name\"");
  doc = run_doc();
  doc["nranks"] = "two";
  EXPECT_EQ(rejection(doc.dump()), "results.json: \"nranks\" is not an integer");
  doc = run_doc();
  doc["scaling_efficiency"] = "high";
  EXPECT_EQ(rejection(doc.dump()), "results.json: \"scaling_efficiency\" is not a number");
  EXPECT_EQ(rejection(R"({"name": "someone else's file"})"), "results.json: missing \"schema_version\"");
  EXPECT_EQ(rejection("{\"schema_version\": 2,"), "results.json: not JSON (syntax error at byte 22)");
  EXPECT_EQ(rejection("[1, 2]"), "results.json: not a scalebench result (the document is not an object)");
  EXPECT_EQ(rejection(kRunNvlink), "");
  EXPECT_THROW(load_result_file("/nonexistent/results.json"), UsageError);
}

TEST(CompareLabels, DefaultsNameTheGpuRanksTransportAndWire) {
  EXPECT_EQ(default_label(parse("a.json", run_doc())), "NVIDIA H200 x2 P2P/CUMEM");
  json bf16 = run_doc();
  bf16["config"]["grad_dtype"] = "bf16";
  EXPECT_EQ(default_label(parse("a.json", bf16)), "NVIDIA H200 x2 P2P/CUMEM bf16-wire");
  json serial = run_doc();
  serial["config"]["overlap"] = false;
  EXPECT_EQ(default_label(parse("a.json", serial)), "NVIDIA H200 x2 P2P/CUMEM no-overlap");
  EXPECT_EQ(default_label(parse("a.json", one_gpu_doc("bert_base", "sequences", 1))), "NVIDIA H200 x1");
  EXPECT_EQ(default_label(parse_result_file("bw.json", kBandwidth)), "NVIDIA H200 x2 P2P/CUMEM");
}

// Issue 26's levers as they ran: --overlap-ctas where it applied, and what NCCL granted for the gradient buffers.
TEST(CompareLabels, NameTheLeversThatApplied) {
  json ctas = run_doc();
  ctas["config"]["overlap_ctas"] = 4;
  ctas["overlap_ctas_not_applied"] = nullptr;
  EXPECT_EQ(default_label(parse("a.json", ctas)), "NVIDIA H200 x2 P2P/CUMEM overlap-ctas-4");
  ctas["overlap_ctas_not_applied"] = "--overlap-ctas 4 does not apply: the mpi backend has no CTA limit";
  EXPECT_EQ(default_label(parse("a.json", ctas)), "NVIDIA H200 x2 P2P/CUMEM") << "not applied: not named";
  json symmetric = run_doc();
  symmetric["config"]["grad_registration"] = "symmetric";
  symmetric["grad_registration"] = {{"granted", "symmetric"}, {"why_less", nullptr}};
  EXPECT_EQ(default_label(parse("a.json", symmetric)), "NVIDIA H200 x2 P2P/CUMEM symmetric-window");
  symmetric["grad_registration"] = {{"granted", "local"}, {"why_less", "no symmetric memory on this path"}};
  EXPECT_EQ(default_label(parse("a.json", symmetric)), "NVIDIA H200 x2 P2P/CUMEM registered") << "what was granted";
  symmetric["grad_registration"] = {{"granted", "none"}, {"why_less", "the mpi backend registers no buffers"}};
  EXPECT_EQ(default_label(parse("a.json", symmetric)), "NVIDIA H200 x2 P2P/CUMEM");
}

// --strategy names itself in the label, and a sharded run's all-gathers get a table of their own.
TEST(CompareLabels, ShardedStrategiesAreNamedAndTheirGathersTabled) {
  json zero2 = run_doc();
  zero2["config"]["strategy"] = "zero2";
  zero2["all_gather"] = {{"bytes_per_step", 1000}, {"per_step", 2}, {"ms_per_step", 1.5}, {"busbw_gbps", 150.25},
                         {"exposed_ms_per_step", 0.75}, {"comm_ms_per_step", nullptr}, {"comm_busbw_gbps", nullptr}};
  EXPECT_EQ(default_label(parse("z.json", zero2)), "NVIDIA H200 x2 P2P/CUMEM zero2");
  json ddp = run_doc();
  ddp["config"]["strategy"] = "ddp";
  EXPECT_EQ(default_label(parse("d.json", ddp)), "NVIDIA H200 x2 P2P/CUMEM");
  std::vector<ResultFile> files{parse("d.json", ddp), parse("z.json", zero2)};
  assign_labels(files, {});
  const std::vector<Table> tables = comparison_tables(build_comparison(files, ""));
  const auto gathers = std::find_if(tables.begin(), tables.end(),
                                    [](const Table& t) { return t.title.rfind("All-gathers", 0) == 0; });
  ASSERT_NE(gathers, tables.end());
  EXPECT_EQ(gathers->rows.at(0), (std::vector<std::string>{"bert_base", "-", "0.75 / 150.2"}));
  files.pop_back();
  const std::vector<Table> without = comparison_tables(build_comparison(files, ""));
  EXPECT_TRUE(std::none_of(without.begin(), without.end(),
                           [](const Table& t) { return t.title.rfind("All-gathers", 0) == 0; }))
      << "no run gathered: no table";
}

// The dp phases' memory per GPU gets a table where some run reports it: measured / planned, in GiB; "-" where the
// device could not say (the CPU device) or the run has none.
TEST(CompareLabels, DpMemoryPerGpuIsTabledPerStrategy) {
  json ddp = run_doc();
  ddp["dp_memory"] = {{"plan_bytes", 3ull << 30}, {"device_used_bytes", 5ull << 29}};
  json zero2 = run_doc();
  zero2["config"]["strategy"] = "zero2";
  zero2["dp_memory"] = {{"plan_bytes", 1ull << 30}, {"device_used_bytes", nullptr}};
  std::vector<ResultFile> files{parse("d.json", ddp), parse("z.json", zero2)};
  assign_labels(files, {});
  const std::vector<Table> tables = comparison_tables(build_comparison(files, ""));
  const auto memory = std::find_if(tables.begin(), tables.end(),
                                   [](const Table& t) { return t.title.rfind("Memory per GPU", 0) == 0; });
  ASSERT_NE(memory, tables.end());
  EXPECT_EQ(memory->rows.at(0), (std::vector<std::string>{"bert_base", "2.50 / 3.00", "- / 1.00"}));
  files = {parse("a.json", run_doc())};
  assign_labels(files, {});
  const std::vector<Table> without = comparison_tables(build_comparison(files, ""));
  EXPECT_TRUE(std::none_of(without.begin(), without.end(),
                           [](const Table& t) { return t.title.rfind("Memory per GPU", 0) == 0; }));
}

TEST(CompareLabels, EmulatedRunsSayWhatWasEmulated) {
  json host = run_doc();
  host["context"]["topology"]["transport"] = "SHM";
  host["context"]["topology"]["emulate"] = "host";
  EXPECT_EQ(default_label(parse("a.json", host)), "NVIDIA H200 x2 SHM emulated-host");
  json socket = json::parse(kBandwidth);
  socket["context"]["transport"] = "NET/Socket";
  socket["context"]["emulate"] = "socket";
  EXPECT_EQ(default_label(parse("bw.json", socket)), "NVIDIA H200 x2 NET/Socket emulated-socket");
}

TEST(CompareLabels, CollisionsGetSuffixesAndDifferentWorkloadsShareAColumn) {
  std::vector<ResultFile> files{parse("a.json", run_doc()), parse("b.json", run_doc()), parse("c.json", run_doc()),
                                parse("tb.json", one_gpu_doc("transformer_big", "tokens", 1))};
  files[3].nranks = 2;
  files[3].transport = "P2P/CUMEM";  // the same label as a.json, another workload
  assign_labels(files, {});
  EXPECT_EQ(files[0].label, "NVIDIA H200 x2 P2P/CUMEM");
  EXPECT_EQ(files[1].label, "NVIDIA H200 x2 P2P/CUMEM (2)");
  EXPECT_EQ(files[2].label, "NVIDIA H200 x2 P2P/CUMEM (3)");
  EXPECT_EQ(files[3].label, "NVIDIA H200 x2 P2P/CUMEM");
  const ComparisonModel model = build_comparison(files, "");
  EXPECT_EQ(model.run_labels.size(), 3u);
  EXPECT_EQ(model.rows, (std::vector<std::string>{"bert_base", "transformer_big"}));
}

TEST(CompareLabels, OverridesByPathOrFileNameAndUnknownOnesAreRejected) {
  std::vector<ResultFile> files{parse("runs/a.json", run_doc()), parse("runs/b.json", run_doc())};
  assign_labels(files, {{"runs/a.json", "before"}, {"b.json", "after"}});
  EXPECT_EQ(files[0].label, "before");
  EXPECT_EQ(files[1].label, "after");
  try {
    assign_labels(files, {{"c.json", "x"}});
    FAIL() << "an unknown FILE was accepted";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--label c.json=x: no such FILE among the inputs");
  }
}

TEST(CompareModel, NormalisesToTheBaselineColumn) {
  EXPECT_DOUBLE_EQ(*ratio_to(7600.0, 1900.0), 4.0);
  EXPECT_FALSE(ratio_to(std::nullopt, 1900.0).has_value());
  EXPECT_FALSE(ratio_to(7600.0, std::nullopt).has_value());
  EXPECT_FALSE(ratio_to(7600.0, 0.0).has_value());
  const ResultFile nvlink = parse("a.json", run_doc());
  EXPECT_DOUBLE_EQ(*headline_throughput(nvlink.run), 7600.0);  // dp when it ran
  EXPECT_DOUBLE_EQ(*headline_throughput(parse("b.json", one_gpu_doc("bert_base", "sequences", 4000)).run), 4000.0);

  const ComparisonModel model = three_files("NVIDIA H200 x2 NET/Socket");
  const std::vector<Table> tables = comparison_tables(model);
  ASSERT_EQ(tables.size(), 4u);
  EXPECT_EQ(tables[1].rows[0], (std::vector<std::string>{"bert_base (sequences/s)", "4.00", "1.00", "-"}));
  EXPECT_EQ(tables[1].rows[1], (std::vector<std::string>{"transformer_big (tokens/s)", "-", "-", "-"}));
  EXPECT_THROW(three_files("NVIDIA B200 x8"), UsageError);
}

TEST(CompareModel, GoldenMarkdown) {
  std::vector<ResultFile> files{parse("nvlink.json", run_doc()), parse("sockets.json", sockets_doc(1900)),
                                parse("one_tb.json", one_gpu_doc("transformer_big", "tokens", 50000)),
                                parse_result_file("bw.json", kBandwidth)};
  assign_labels(files, {{"sockets.json", "sockets"}, {"bw.json", "nccl | nvlink"}});
  const std::string expected =
      "### Throughput, all GPUs (dp units/s; solo where dp did not run)\n\n"
      "| workload | NVIDIA H200 x2 P2P/CUMEM | sockets | NVIDIA H200 x1 |\n"
      "| :--- | ---: | ---: | ---: |\n"
      "| bert_base (sequences/s) | 7600.0 | 1900.0 | - |\n"
      "| transformer_big (tokens/s) | - | - | 50000.0 |\n"
      "\n### Throughput relative to NVIDIA H200 x2 P2P/CUMEM\n\n"
      "| workload | NVIDIA H200 x2 P2P/CUMEM | sockets | NVIDIA H200 x1 |\n"
      "| :--- | ---: | ---: | ---: |\n"
      "| bert_base (sequences/s) | 1.00 | 0.25 | - |\n"
      "| transformer_big (tokens/s) | - | - | - |\n"
      "\n### Scaling efficiency E(N) (%)\n\n"
      "| workload | NVIDIA H200 x2 P2P/CUMEM | sockets | NVIDIA H200 x1 |\n"
      "| :--- | ---: | ---: | ---: |\n"
      "| bert_base | 95.0 | 25.0 | - |\n"
      "| transformer_big | - | - | - |\n"
      "\n### Exposed communication per step (ms)\n\n"
      "| workload | NVIDIA H200 x2 P2P/CUMEM | sockets | NVIDIA H200 x1 |\n"
      "| :--- | ---: | ---: | ---: |\n"
      "| bert_base | 1.00 | 100.50 | - |\n"
      "| transformer_big | - | - | - |\n"
      "\n### Peak bus bandwidth (GB/s)\n\n"
      "| collective | nccl \\| nvlink |\n"
      "| :--- | ---: |\n"
      "| all_gather | 340.5 |\n"
      "| all_reduce | 361.2 |\n";
  EXPECT_EQ(tables_markdown(comparison_tables(build_comparison(files, ""))), expected);
}

TEST(CompareModel, GoldenConsole) {
  const std::string expected =
      "# Exposed communication per step (ms)\n"
      "# workload         NVIDIA H200 x2 P2P/CUMEM  NVIDIA H200 x2 NET/Socket  NVIDIA H200 x1\n"
      "  bert_base                            1.00                     100.50               -\n"
      "  transformer_big                         -                          -               -\n";
  EXPECT_EQ(tables_console({comparison_tables(three_files())[3]}), expected);
}

TEST(CompareModel, GoldenCsv) {
  std::vector<ResultFile> files{parse("nvlink.json", run_doc()), parse("sockets.json", sockets_doc(1900)),
                                parse("one_tb.json", one_gpu_doc("transformer_big", "tokens", 50000)),
                                parse_result_file("bw.json", kBandwidth)};
  assign_labels(files, {{"sockets.json", "sockets, fp32"}});
  const std::string expected =
      "label,file,kind,workload,unit,nranks,transport,precision,grad_dtype,overlap,strategy,status,phase,"
      "units_per_s_total,ratio_to_baseline,solo_step_ms_p50,solo_units_per_s_per_gpu,dp_step_ms_p50,"
      "dp_units_per_s_total,scaling_efficiency,exposed_comm_ms,overlap_pct,busbw_gbps,comm_busbw_gbps,"
      "peak_busbw_gbps,schema_version\n"
      "NVIDIA H200 x2 P2P/CUMEM,nvlink.json,run,bert_base,sequences,2,P2P/CUMEM,bf16,fp32,true,ddp,ok,dp,7600,1,33,"
      "4000,34,7600,0.95,1,50,107.5,222.5,,2\n"
      "\"sockets, fp32\",sockets.json,run,bert_base,sequences,2,NET/Socket,bf16,fp32,true,ddp,ok,dp,1900,0.25,33,"
      "4000,34,1900,0.25,100.5,50,107.5,222.5,,2\n"
      "NVIDIA H200 x1,one_tb.json,run,transformer_big,tokens,1,,bf16,fp32,true,ddp,ok,solo,50000,,33,4000,,,,,,,,,2\n"
      "NVIDIA H200 x2 P2P/CUMEM,bw.json,bandwidth,all_gather,,2,P2P/CUMEM,fp32,,,,,,,,,,,,,,,,,340.5,2\n"
      "NVIDIA H200 x2 P2P/CUMEM,bw.json,bandwidth,all_reduce,,2,P2P/CUMEM,fp32,,,,,,,,,,,,,,,,,361.25,2\n";
  EXPECT_EQ(comparison_csv(build_comparison(files, "")), expected);
}

TEST(CompareReport, OneRunsTables) {
  const std::vector<Table> tables = run_report_tables(parse("a.json", run_doc()));
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(tables[0].title, "bert_base (full, bf16, batch 128/rank) on NVIDIA H200 x2 P2P/CUMEM, status ok");
  ASSERT_EQ(tables[0].rows.size(), 3u);
  EXPECT_EQ(tables[0].rows[0],
            (std::vector<std::string>{"solo", "33.000", "33.500", "34.000", "4000.0", "8000.0", "268.0", "27.0"}));
  EXPECT_EQ(tables[0].rows[1], (std::vector<std::string>{"comm", "2.000", "-", "-", "-", "-", "-", "-"}));
  const std::string markdown = tables_markdown({tables[1]});
  EXPECT_NE(markdown.find("| scaling efficiency E(N) (%) | 95.0 |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| buckets | 2 |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| bucket bytes total (MB) | 30.0 |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| communication after backward (ms) | 0.750 |"), std::string::npos) << markdown;
}

// efficiency_decomposition (docs/RESULTS.md): 1 − E = 5 points = dilation 2 + tail 2 + skew 0.6 + residual 0.4.
json decomposed_doc(double residual) {
  json doc = run_doc();
  doc["efficiency_decomposition"] = {{"measured", true}, {"loss", 0.05}, {"dilation", 0.02}, {"tail", 0.02},
                                     {"skew", 0.006}, {"residual", residual}, {"adds_up", residual <= 0.005},
                                     {"tolerance", 0.005}, {"dp_step_ms", 34.0}, {"dilation_ms", 0.68},
                                     {"tail_ms", 0.68}, {"skew_ms", 0.204}, {"ranks", json::array()}};
  return doc;
}

TEST(CompareReport, DecompositionRowsAndTheirResidual) {
  std::vector<Table> tables = run_report_tables(parse("a.json", decomposed_doc(0.004)));
  std::string markdown = tables_markdown({tables[1]});
  EXPECT_NE(markdown.find("| 1 - E (points) | 5.0 |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("dilation: slower backward beside the all-reduces (points) | 2.0 |"), std::string::npos);
  EXPECT_NE(markdown.find("skew: waiting for the slowest rank (points) | 0.6 |"), std::string::npos);
  EXPECT_NE(markdown.find("residual: not measured by the three (points) | 0.4 |"), std::string::npos) << markdown;
  tables = run_report_tables(parse("a.json", decomposed_doc(0.009)));
  markdown = tables_markdown({tables[1]});
  EXPECT_NE(markdown.find("| 0.9 (beyond 0.5: they do not add up) |"), std::string::npos) << markdown;
  json not_measured = run_doc();
  not_measured["efficiency_decomposition"] = {{"measured", false}, {"not_measured", "a step of 2 sub-steps"}};
  markdown = tables_markdown({run_report_tables(parse("a.json", not_measured))[1]});
  EXPECT_NE(markdown.find("| 1 - E decomposed | not measured: a step of 2 sub-steps |"), std::string::npos);
  // Files from before it: no rows about it.
  markdown = tables_markdown({run_report_tables(parse("a.json", run_doc()))[1]});
  EXPECT_EQ(markdown.find("1 - E"), std::string::npos) << markdown;
}

TEST(CompareModel, DecompositionTableOnlyWhereMeasured) {
  std::vector<ResultFile> files{parse("a.json", decomposed_doc(0.004)), parse("b.json", sockets_doc(1000))};
  assign_labels(files, {});
  std::vector<Table> tables = comparison_tables(build_comparison(files, ""));
  const std::string markdown = tables_markdown(tables);
  EXPECT_NE(markdown.find("1 - E decomposed (points of E): dilation / tail / skew / residual"), std::string::npos);
  EXPECT_NE(markdown.find("| bert_base | 2.0 / 2.0 / 0.6 / 0.4 | - |"), std::string::npos) << markdown;
  files = {parse("a.json", decomposed_doc(0.009))};
  assign_labels(files, {});
  EXPECT_NE(tables_markdown(comparison_tables(build_comparison(files, ""))).find("0.6 / 0.9 *"), std::string::npos);
  files = {parse("a.json", run_doc()), parse("b.json", sockets_doc(1000))};
  assign_labels(files, {});
  EXPECT_EQ(tables_markdown(comparison_tables(build_comparison(files, ""))).find("1 - E"), std::string::npos);
}

CommandLine parse_args(std::vector<const char*> args) {
  args.insert(args.begin(), "scalebench");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}

TEST(CompareCommandLine, ParsesFilesLabelsAndFormat) {
  const CommandLine cl = parse_args({"compare", "a.json", "--label", "a.json=A", "b.json", "--label", "b.json=B",
                                     "--baseline", "B", "--csv", "--out", "x.csv"});
  EXPECT_EQ(cl.command, "compare");
  EXPECT_EQ(cl.compare.files, (std::vector<std::string>{"a.json", "b.json"}));
  EXPECT_EQ(cl.compare.labels, (std::vector<std::string>{"a.json=A", "b.json=B"}));
  EXPECT_EQ(cl.compare.baseline, "B");
  EXPECT_TRUE(cl.compare.csv);
  EXPECT_FALSE(cl.compare.markdown);
  EXPECT_EQ(cl.compare.out_path, "x.csv");
  EXPECT_TRUE(cl.common.csv_path.empty());  // compare's --csv is its flag, not the common --csv FILE
  EXPECT_THROW(parse_args({"compare"}), UsageError);
  EXPECT_THROW(parse_args({"compare", "a.json", "--markdown", "--csv"}), UsageError);
  const CommandLine report = parse_args({"report", "a.json", "--markdown"});
  EXPECT_EQ(report.command, "report");
  EXPECT_EQ(report.compare.files, (std::vector<std::string>{"a.json"}));
  EXPECT_TRUE(report.compare.markdown);
  EXPECT_THROW(parse_args({"report", "a.json", "b.json"}), UsageError);
}

}  // namespace
}  // namespace sb
