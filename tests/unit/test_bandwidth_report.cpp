// The bandwidth result model and its printers on a hand-built report (all_reduce and broadcast, two
// sizes each, one broadcast in-place run missing): JSON keys, types and units; CSV shape; the console's
// header, units row, N/A and "-" cells, footer; a failed run's status. Also total_wrong/peak_busbw.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/report.h"

namespace sb {
namespace {

using nlohmann::json;

PlacementResult placement(double p50_us, double busbw_gbps, int64_t wrong) {
  PlacementResult result;
  result.measured = true;
  result.samples_us = {p50_us * 0.9, p50_us, p50_us * 1.3};
  result.time_us = summarize(result.samples_us);
  result.algbw_gbps = busbw_gbps / 2;
  result.busbw_gbps = busbw_gbps;
  result.wrong = wrong;
  return result;
}

// 2 ranks; all_reduce at 1 MiB and 8 MiB, broadcast at the same sizes without the 8 MiB in-place run.
BandwidthReport make_report(bool checked) {
  const int64_t wrong = checked ? 0 : -1;
  BandwidthReport report;
  report.options.ops = {CollectiveOp::kAllReduce, CollectiveOp::kBroadcast};
  report.options.min_bytes = 1 << 20;
  report.options.max_bytes = 8 << 20;
  report.options.factor = 8;
  report.options.check = checked;
  report.nranks = 2;
  report.backend = "nccl";
  report.library_version = "NCCL 2.28.3";
  report.transport = "P2P/CUMEM";
  report.mpi_version = "Open MPI v4.1.6";
  report.cuda_runtime_version = "13.0";
  report.cuda_driver_version = "13.0";
  for (int rank = 0; rank < 2; ++rank) {
    RankDevice device;
    device.rank = rank;
    device.host = "gpu-node";
    device.pid = 4242 + rank;
    device.device.kind = DeviceKind::kCuda;
    device.device.index = rank;
    device.device.name = "NVIDIA H200";
    device.device.bus_id = rank == 0 ? "0000:19:00.0" : "0000:3B:00.0";
    device.device.total_memory = 150ull << 30;
    report.devices.push_back(device);
  }
  const uint64_t sizes[] = {1 << 20, 8 << 20};
  for (CollectiveOp op : report.options.ops) {
    for (uint64_t size : sizes) {
      SizeResult result;
      result.op = op;
      result.size_bytes = size;
      result.count = size / 4;
      const double scale = size == sizes[0] ? 1 : 3;
      result.out_of_place = placement(20 * scale, 60 * scale, wrong);
      result.in_place = placement(21 * scale, 59 * scale, wrong);
      if (op == CollectiveOp::kBroadcast && size == sizes[1]) result.in_place = PlacementResult();
      report.results.push_back(result);
    }
  }
  report.argv = {"scalebench", "bandwidth", "--ops", "all_reduce,broadcast"};
  report.environment = {{"NCCL_DEBUG", "WARN"}, {"CUDA_VISIBLE_DEVICES", "0,1"}};
  report.started_at = "2026-11-30T12:00:00Z";
  return report;
}

template <typename Print>
std::string capture(Print print) {
  std::FILE* file = std::tmpfile();
  EXPECT_NE(file, nullptr);
  print(file);
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[4096];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, got);
  std::fclose(file);
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

bool contains(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

TEST(BandwidthReport, TotalWrongAndPeakBusbw) {
  EXPECT_EQ(make_report(false).total_wrong(), -1);
  BandwidthReport report = make_report(true);
  EXPECT_EQ(report.total_wrong(), 0);
  report.results[1].in_place.wrong = 5;
  report.results[2].out_of_place.wrong = 2;
  EXPECT_EQ(report.total_wrong(), 7);
  // The largest busbw of either placement, only among that collective's sizes.
  report.results[3].out_of_place.busbw_gbps = 400;
  EXPECT_DOUBLE_EQ(report.peak_busbw_gbps(CollectiveOp::kAllReduce), 180);
  EXPECT_DOUBLE_EQ(report.peak_busbw_gbps(CollectiveOp::kBroadcast), 400);
  EXPECT_DOUBLE_EQ(report.peak_busbw_gbps(CollectiveOp::kAllGather), 0);
}

TEST(BandwidthReport, JsonHasEveryRequiredKeyWithItsType) {
  const json document = bandwidth_report_json(make_report(false));
  EXPECT_EQ(document.at("schema_version"), 1);
  EXPECT_EQ(document.at("tool"), "scalebench");
  EXPECT_EQ(document.at("command"), "bandwidth");
  EXPECT_EQ(document.at("status"), "ok");
  EXPECT_FALSE(document.contains("error"));
  EXPECT_EQ(document.at("started_at"), "2026-11-30T12:00:00Z");

  const json& context = document.at("context");
  EXPECT_TRUE(context.at("argv").is_array());
  EXPECT_EQ(context.at("argv").size(), 4u);
  EXPECT_EQ(context.at("environment").at("NCCL_DEBUG"), "WARN");
  for (const char* key : {"scalebench", "mpi", "cuda_runtime", "cuda_driver", "communicator"}) {
    EXPECT_TRUE(context.at("versions").at(key).is_string()) << key;
  }
  EXPECT_EQ(context.at("versions").at("communicator"), "NCCL 2.28.3");
  EXPECT_EQ(context.at("nranks"), 2);
  EXPECT_EQ(context.at("backend"), "nccl");
  EXPECT_EQ(context.at("transport"), "P2P/CUMEM");
  ASSERT_EQ(context.at("devices").size(), 2u);
  const json& device = context.at("devices").at(1);
  EXPECT_EQ(device.at("rank"), 1);
  EXPECT_EQ(device.at("host"), "gpu-node");
  EXPECT_EQ(device.at("pid"), 4243);
  EXPECT_EQ(device.at("kind"), "cuda");
  EXPECT_EQ(device.at("index"), 1);
  EXPECT_EQ(device.at("name"), "NVIDIA H200");
  EXPECT_EQ(device.at("bus_id"), "0000:3B:00.0");
  EXPECT_EQ(device.at("total_memory_bytes"), 150ull << 30);

  const json& config = document.at("config");
  EXPECT_EQ(config.at("ops"), json({"all_reduce", "broadcast"}));
  EXPECT_EQ(config.at("min_bytes"), 1 << 20);
  EXPECT_EQ(config.at("max_bytes"), 8 << 20);
  EXPECT_DOUBLE_EQ(config.at("factor").get<double>(), 8);
  EXPECT_EQ(config.at("dtype"), "fp32");
  EXPECT_EQ(config.at("redop"), "sum");
  EXPECT_EQ(config.at("root"), 0);
  EXPECT_EQ(config.at("warmup_iters"), 5);
  EXPECT_EQ(config.at("iters"), 20);
  for (const char* key : {"in_place", "out_of_place", "graph", "check"}) {
    EXPECT_TRUE(config.at(key).is_boolean()) << key;
  }

  const json& record = document.at("results").at(0);
  EXPECT_EQ(record.at("op"), "all_reduce");
  EXPECT_EQ(record.at("size_bytes"), 1 << 20);
  EXPECT_EQ(record.at("count"), 1 << 18);
  EXPECT_EQ(record.at("dtype"), "fp32");
  EXPECT_EQ(record.at("redop"), "sum");
  EXPECT_EQ(record.at("placement"), "out_of_place");
  for (const char* key : {"time_us_p50", "time_us_p99", "time_us_min", "time_us_max", "time_us_mean",
                          "time_us_cv", "algbw_gbps", "busbw_gbps"}) {
    EXPECT_TRUE(record.at(key).is_number()) << key;
  }
  EXPECT_DOUBLE_EQ(record.at("time_us_p50").get<double>(), 20);
  EXPECT_DOUBLE_EQ(record.at("busbw_gbps").get<double>(), 60);
  EXPECT_EQ(record.at("samples_us").size(), 3u);
  EXPECT_TRUE(record.at("wrong").is_null());
  // Broadcast does not reduce; nccl-tests labels it "none".
  EXPECT_EQ(document.at("results").at(4).at("redop"), "none");

  const json& summary = document.at("summary");
  EXPECT_DOUBLE_EQ(summary.at("peak_busbw_gbps").at("all_reduce").get<double>(), 180);
  EXPECT_DOUBLE_EQ(summary.at("peak_busbw_gbps").at("broadcast").get<double>(), 180);
  EXPECT_TRUE(summary.at("wrong_total").is_null());
}

TEST(BandwidthReport, JsonHasOneRecordPerMeasuredPlacement) {
  const json results = bandwidth_report_json(make_report(false)).at("results");
  ASSERT_EQ(results.size(), 7u);  // 2 ops x 2 sizes x 2 placements, less the missing in-place run
  int in_place = 0, out_of_place = 0;
  for (const json& record : results) {
    (record.at("placement") == "in_place" ? in_place : out_of_place) += 1;
  }
  EXPECT_EQ(out_of_place, 4);
  EXPECT_EQ(in_place, 3);
}

TEST(BandwidthReport, JsonCountsWrongWhenChecked) {
  BandwidthReport report = make_report(true);
  report.results[0].in_place.wrong = 3;
  const json document = bandwidth_report_json(report);
  EXPECT_EQ(document.at("results").at(1).at("wrong"), 3);
  EXPECT_EQ(document.at("results").at(0).at("wrong"), 0);
  EXPECT_EQ(document.at("summary").at("wrong_total"), 3);
}

TEST(BandwidthReport, JsonWritesAbsentVersionsAsNull) {
  BandwidthReport report = make_report(false);
  report.cuda_runtime_version.clear();
  report.cuda_driver_version.clear();
  const json versions = bandwidth_report_json(report).at("context").at("versions");
  EXPECT_TRUE(versions.at("cuda_runtime").is_null());
  EXPECT_TRUE(versions.at("cuda_driver").is_null());
}

TEST(BandwidthReport, FailedReportCarriesStatusAndError) {
  BandwidthReport report = make_report(false);
  report.status = "failed";
  report.error = "out of memory at 8388608 B";
  report.results.pop_back();
  const json document = bandwidth_report_json(report);
  EXPECT_EQ(document.at("status"), "failed");
  EXPECT_EQ(document.at("error"), "out of memory at 8388608 B");
  EXPECT_EQ(document.at("results").size(), 6u);

  const std::string console = capture([&](std::FILE* out) { print_bandwidth_report(out, report); });
  EXPECT_TRUE(contains(console, "# status: failed: out of memory at 8388608 B")) << console;
}

TEST(BandwidthReport, CsvHasHeaderAndOneRowPerRecord) {
  const std::vector<std::string> lines = lines_of(bandwidth_report_csv(make_report(false)));
  ASSERT_EQ(lines.size(), 1u + 7u);
  EXPECT_EQ(lines[0],
            "op,size_bytes,count,dtype,redop,placement,time_us_p50,time_us_p99,time_us_min,time_us_max,"
            "time_us_mean,time_us_cv,algbw_gbps,busbw_gbps,wrong,transport,emulate,schema_version");
  const size_t columns = std::count(lines[0].begin(), lines[0].end(), ',');
  for (const std::string& line : lines) EXPECT_EQ(std::count(line.begin(), line.end(), ','), columns) << line;
  EXPECT_EQ(lines[1].rfind("all_reduce,1048576,262144,fp32,sum,out_of_place,20,", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find(",,P2P/CUMEM,none,1"), std::string::npos) << lines[1];  // unchecked: empty #wrong cell
}

// A computed bandwidth keeps 9 significant digits: 7.374, not the double's shortest text 7.3740000000000006.
TEST(BandwidthReport, CsvNumbersCarryNoFloatNoise) {
  BandwidthReport report = make_report(false);
  report.results[0].out_of_place.busbw_gbps = 7.3740000000000006;
  const std::vector<std::string> lines = lines_of(bandwidth_report_csv(report));
  EXPECT_NE(lines[1].find(",7.374,"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[1].find("7.37400000"), std::string::npos) << lines[1];
}

TEST(BandwidthReport, EmulationIsLabelledInEveryOutput) {
  BandwidthReport report = make_report(false);
  report.emulate = "socket";
  report.transport = "NET/Socket, SHM";  // a list: quoted in the CSV
  EXPECT_EQ(bandwidth_report_json(report)["context"]["emulate"], "socket");
  const std::vector<std::string> lines = lines_of(bandwidth_report_csv(report));
  EXPECT_NE(lines[1].find(",\"NET/Socket, SHM\",socket,1"), std::string::npos) << lines[1];
  const std::string console = capture([&](std::FILE* out) { print_bandwidth_report(out, report); });
  EXPECT_TRUE(contains(console, "# EMULATED: emulated socket path")) << console;
  EXPECT_TRUE(contains(console, "not this machine's fabric")) << console;
  report.emulate = "none";
  EXPECT_FALSE(contains(capture([&](std::FILE* out) { print_bandwidth_report(out, report); }), "EMULATED"));
}

TEST(BandwidthReport, ConsoleHasHeaderTablesAndFooter) {
  const BandwidthReport report = make_report(false);
  const std::string text = capture([&](std::FILE* out) { print_bandwidth_report(out, report); });
  EXPECT_TRUE(contains(text, "# scalebench ")) << text;
  EXPECT_TRUE(contains(text, "NCCL 2.28.3")) << text;
  EXPECT_TRUE(contains(text, "P2P/CUMEM")) << text;
  EXPECT_TRUE(contains(text, "# Using devices")) << text;
  EXPECT_TRUE(contains(text, "#  Rank  0 Pid   4242 on   gpu-node device  0 [0000:19:00.0] NVIDIA H200")) << text;
  EXPECT_TRUE(contains(text, "out-of-place")) << text;
  EXPECT_TRUE(contains(text, "in-place")) << text;
  EXPECT_TRUE(contains(text, "#wrong")) << text;
  EXPECT_TRUE(contains(text, "(GB/s)")) << text;
  EXPECT_TRUE(contains(text, "(elements)")) << text;
  EXPECT_TRUE(contains(text, "N/A")) << text;
  EXPECT_TRUE(contains(text, "# Out of bounds values : not checked")) << text;
  EXPECT_TRUE(contains(text, "# Peak bus bandwidth all_reduce : 180.00 GB/s at 8388608 B (8 MiB)")) << text;
  EXPECT_TRUE(contains(text, "# Peak bus bandwidth broadcast  : 180.00 GB/s at 8388608 B (8 MiB)")) << text;
  EXPECT_FALSE(contains(text, "# status:")) << text;

  // nccl-tests' summary line: (60 + 59 + 180 + 177 + 60 + 59 + 180) / 7 measured placements.
  EXPECT_TRUE(contains(text, "# Avg bus bandwidth    : 110.714\n")) << text;

  // Data rows (no '#') split into nccl-tests' columns: size, count, type, redop, root, 4 cells per placement;
  // then the p99 of each placement.
  std::vector<std::string> rows;
  for (const std::string& line : lines_of(text)) {
    if (!line.empty() && line[0] != '#') rows.push_back(line);
  }
  ASSERT_EQ(rows.size(), 4u);
  std::istringstream first(rows[0]);
  std::vector<std::string> cells;
  for (std::string cell; first >> cell;) cells.push_back(cell);
  EXPECT_EQ(cells, (std::vector<std::string>{"1048576", "262144", "fp32", "sum", "-1", "20.00", "30.00", "60.00",
                                             "N/A", "21.00", "29.50", "59.00", "N/A", "25.88", "27.17"}));
}

TEST(BandwidthReport, ConsoleUnitsRowSitsUnderTheColumnNames) {
  const std::string text =
      capture([&](std::FILE* out) { print_bandwidth_table(out, make_report(false), CollectiveOp::kAllReduce); });
  const std::vector<std::string> lines = lines_of(text);
  size_t names = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (contains(lines[i], "#wrong")) names = i;
  }
  ASSERT_LT(names + 1, lines.size()) << text;
  const std::string& units = lines[names + 1];
  EXPECT_EQ(lines[names].find("count"), units.find("(elements)") + 5) << text;  // right-aligned together
  EXPECT_EQ(lines[names].find("algbw"), units.find("(GB/s)") + 1) << text;
  EXPECT_EQ(lines[names].find(" time") + 1, units.find("(us)")) << text;
  // Both placements name nccl-tests' four columns (time, algbw, busbw, #wrong); the two p99 columns follow.
  const std::string& heading = lines[names];
  EXPECT_EQ(heading.find("busbw"), heading.find("algbw") + 8) << heading;
  EXPECT_NE(heading.find("busbw", heading.find("busbw") + 1), std::string::npos) << heading;
  EXPECT_NE(heading.find("p99-oop"), std::string::npos) << heading;
  EXPECT_GT(heading.find("p99-ip"), heading.rfind("#wrong")) << heading;
}

TEST(BandwidthReport, ConsoleMarksMissingPlacementAndCheckedCounts) {
  const BandwidthReport report = make_report(true);
  const std::string text = capture([&](std::FILE* out) { print_bandwidth_report(out, report); });
  EXPECT_FALSE(contains(text, "N/A")) << text;
  EXPECT_TRUE(contains(text, "# Out of bounds values : 0 OK")) << text;
  const std::vector<std::string> lines = lines_of(text);
  const std::string& last_row = [&]() -> const std::string& {
    for (size_t i = lines.size(); i-- > 0;) {
      if (!lines[i].empty() && lines[i][0] != '#') return lines[i];
    }
    return lines.front();
  }();
  // Broadcast's root (0) takes the redop slot; the in-place run that did not happen prints "-".
  std::istringstream stream(last_row);
  std::vector<std::string> cells;
  for (std::string cell; stream >> cell;) cells.push_back(cell);
  ASSERT_EQ(cells.size(), 15u) << last_row;
  EXPECT_EQ(cells[3], "none");  // broadcast does not reduce
  EXPECT_EQ(cells[4], "0");     // its root
  EXPECT_EQ(cells[8], "0");
  for (size_t i = 9; i < 13; ++i) EXPECT_EQ(cells[i], "-") << last_row;
  EXPECT_EQ(cells[14], "-") << last_row;  // the in-place p99
  EXPECT_TRUE(contains(text, "root")) << text;

  BandwidthReport failing = make_report(true);
  failing.results[0].out_of_place.wrong = 12;
  const std::string footer = capture([&](std::FILE* out) { print_bandwidth_footer(out, failing); });
  EXPECT_TRUE(contains(footer, "# Out of bounds values : 12 FAILED")) << footer;
}

// One rank: busbw is 0 by definition, so the footer explains instead of a "Peak ... 0.00 GB/s" line.
TEST(BandwidthReport, OneRankFooterExplainsZeroBusBandwidth) {
  BandwidthReport report = make_report(true);
  report.nranks = 1;
  const std::string footer = capture([&](std::FILE* out) { print_bandwidth_footer(out, report); });
  EXPECT_TRUE(contains(footer, "one rank: nothing crosses a bus")) << footer;
  EXPECT_FALSE(contains(footer, "# Peak bus bandwidth all_reduce")) << footer;
}

// -d and -o with several values: every row, record and CSV line carries its own type and redop (broadcast:
// "none"), the config lists them in run order, and "# Avg bus bandwidth" averages every row printed.
TEST(BandwidthReport, EveryRowCarriesItsOwnDtypeAndRedop) {
  BandwidthReport report = make_report(true);
  report.options.dtypes = {DType::kFloat32, DType::kBFloat16};
  report.options.reduces = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kAvg};
  report.results.clear();
  double busbw_sum = 0;
  int rows = 0;
  for (DType type : report.options.dtypes) {
    for (ReduceOp reduce : report.options.reduces) {
      SizeResult result;
      result.op = CollectiveOp::kAllReduce;
      result.dtype = type;
      result.reduce = reduce;
      result.size_bytes = 1 << 20;
      result.count = result.size_bytes / dtype_size(type);
      result.out_of_place = placement(20, 10 + rows, 0);
      result.in_place = placement(21, 11 + rows, 0);
      busbw_sum += 21 + 2 * rows;
      rows += 2;
      report.results.push_back(result);
    }
    SizeResult broadcast;
    broadcast.op = CollectiveOp::kBroadcast;
    broadcast.dtype = type;
    broadcast.reduce = ReduceOp::kSum;
    broadcast.size_bytes = 1 << 20;
    broadcast.count = broadcast.size_bytes / dtype_size(type);
    broadcast.out_of_place = placement(20, 10, 0);
    broadcast.in_place = placement(20, 10, 0);
    busbw_sum += 20;
    rows += 2;
    report.results.push_back(broadcast);
  }

  const json document = bandwidth_report_json(report);
  EXPECT_EQ(document.at("config").at("dtypes"), json({"fp32", "bf16"}));
  EXPECT_EQ(document.at("config").at("redops"), json({"sum", "prod", "max", "min", "avg"}));
  EXPECT_EQ(document.at("config").at("dtype"), "fp32,bf16");
  EXPECT_EQ(document.at("config").at("redop"), "sum,prod,max,min,avg");
  std::vector<std::string> labels;
  for (const json& record : document.at("results")) {
    labels.push_back(record.at("dtype").get<std::string>() + "/" + record.at("redop").get<std::string>());
  }
  const std::vector<std::string> want = {
      "fp32/sum", "fp32/sum", "fp32/prod", "fp32/prod", "fp32/max", "fp32/max", "fp32/min", "fp32/min",
      "fp32/avg", "fp32/avg", "fp32/none", "fp32/none", "bf16/sum", "bf16/sum", "bf16/prod", "bf16/prod",
      "bf16/max", "bf16/max", "bf16/min", "bf16/min", "bf16/avg", "bf16/avg", "bf16/none", "bf16/none"};
  EXPECT_EQ(labels, want);

  const std::string csv = bandwidth_report_csv(report);
  EXPECT_TRUE(contains(csv, "\nall_reduce,1048576,524288,bf16,prod,out_of_place,")) << csv;
  EXPECT_TRUE(contains(csv, "\nbroadcast,1048576,262144,fp32,none,in_place,")) << csv;

  const std::string text = capture([&](std::FILE* out) { print_bandwidth_report(out, report); });
  EXPECT_TRUE(contains(text, "# dtype: fp32,bf16   redop: sum,prod,max,min,avg   root: 0\n")) << text;
  std::vector<std::string> row_labels;
  for (const std::string& line : lines_of(text)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string size, count, type, redop;
    fields >> size >> count >> type >> redop;
    row_labels.push_back(type + "/" + redop);
  }
  // The console groups rows by collective: all_reduce's ten blocks, then broadcast's two.
  std::vector<std::string> grouped;
  for (const std::string& label : want) {
    if (!contains(label, "none") && (grouped.empty() || grouped.back() != label)) grouped.push_back(label);
  }
  grouped.push_back("fp32/none");
  grouped.push_back("bf16/none");
  EXPECT_EQ(row_labels, grouped);
  char average[64];
  std::snprintf(average, sizeof average, "# Avg bus bandwidth    : %g\n", busbw_sum / rows);
  EXPECT_TRUE(contains(text, average)) << text;
}

TEST(BandwidthReport, ConsoleFitsIn120Columns) {
  const std::string text = capture([&](std::FILE* out) { print_bandwidth_report(out, make_report(true)); });
  for (const std::string& line : lines_of(text)) {
    EXPECT_LE(line.size(), 120u) << line;
    EXPECT_TRUE(line.empty() || line.back() != ' ') << "trailing blanks: '" << line << "'";
  }
}

TEST(BandwidthReport, WriteTextFileWritesAndNamesThePathOnFailure) {
  const std::string path = ::testing::TempDir() + "scalebench_report_test.csv";
  write_text_file(path, "a,b\n1,2\n");
  std::ifstream file(path);
  std::stringstream content;
  content << file.rdbuf();
  EXPECT_EQ(content.str(), "a,b\n1,2\n");
  std::remove(path.c_str());

  const std::string bad = "/nonexistent-scalebench-dir/out.json";
  try {
    write_text_file(bad, "{}");
    FAIL() << "expected RuntimeFailure";
  } catch (const RuntimeFailure& error) {
    EXPECT_TRUE(contains(error.what(), bad)) << error.what();
  }
}

}  // namespace
}  // namespace sb
