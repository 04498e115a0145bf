// The derived numbers of a training report (scaling efficiency, exposed communication, overlap, bus
// bandwidth) from hand-made samples, and the JSON/CSV/reproducer printers built on them.
#include <gtest/gtest.h>

#include "scalebench/plan_database.h"
#include "scalebench/report.h"
#include "scalebench/training.h"

namespace sb {
namespace {

RankPhase steps(std::vector<double> ms, std::vector<std::vector<double>> buckets = {}) {
  RankPhase phase;
  phase.step_ms = std::move(ms);
  phase.bucket_ms = std::move(buckets);
  phase.loss_first = 5;
  phase.loss_last = 4;
  return phase;
}

// Two ranks, 1000 units per step and rank; rank 1 is the slower GPU alone.
TrainingReport two_rank_report() {
  TrainingReport report;
  report.nranks = 2;
  report.units_per_step = 1000;
  report.train_flops_per_step = 1e12;
  report.peak_tflops = 100;
  report.bucket_bytes = {100'000'000, 50'000'000};
  report.solo.ran = true;
  report.solo.ranks = {steps({10, 10, 10}), steps({12, 12, 12})};
  report.comm.ran = true;
  report.comm.ranks = {steps({4, 4, 4}, {{2, 1}, {2, 1}, {2, 1}}), steps({4, 4, 4}, {{2, 1}, {2, 1}, {2, 1}})};
  report.dp.ran = true;
  // Per step the slower rank counts: 12, 13, 12 -> p50 12.
  report.dp.ranks = {steps({12, 11, 12}, {{3, 1.5}, {3, 1.5}, {3, 1.5}}), steps({11, 13, 12}, {{3, 1.5}, {3, 1.5}, {3, 1.5}})};
  report.weights_identical_at_start = report.weights_identical_after_dp = true;
  report.argv = {"scalebench", "run", "--workload", "bert_base", "--json", "my results.json"};
  report.options.workload = "bert_base";
  return report;
}

TEST(TrainingSummary, SoloIsTheMedianGpuAndNamesTheSlowest) {
  const TrainingReport report = two_rank_report();
  const PhaseSummary solo = summarize_phase(report, report.solo, false);
  EXPECT_DOUBLE_EQ(solo.step_ms_p50, 11);  // median of the ranks' 10 and 12
  EXPECT_EQ(solo.slowest_rank, 1);
  EXPECT_DOUBLE_EQ(solo.slowest_rank_step_ms, 12);
  EXPECT_DOUBLE_EQ(solo.units_per_s_per_gpu, 1000 / 0.011);
  EXPECT_DOUBLE_EQ(solo.units_per_s_total, 1000 / 0.010 + 1000 / 0.012);  // independent GPUs add up
  EXPECT_DOUBLE_EQ(solo.tflops_per_gpu, 1 / 0.011);
  EXPECT_DOUBLE_EQ(solo.mfu, 1 / 0.011 / 100);
}

TEST(TrainingSummary, DataParallelStepIsTheSlowestRankPerStep) {
  const TrainingReport report = two_rank_report();
  const PhaseSummary dp = summarize_phase(report, report.dp, true);
  EXPECT_DOUBLE_EQ(dp.step_ms_p50, 12);
  EXPECT_DOUBLE_EQ(dp.step_ms_max, 13);
  EXPECT_DOUBLE_EQ(dp.units_per_s_total, 2 * 1000 / 0.012);
}

// Each rank's batch holds other samples, so other counts of non-padding units: totals sum what every rank's
// batch held (issue 23), not rank 0's count N times; per GPU is their mean.
TEST(TrainingSummary, TotalsCreditWhatEachRanksBatchHeld) {
  TrainingReport report = two_rank_report();
  report.units_per_step_by_rank = {900, 1100};  // mean 1000, as units_per_step
  const PhaseSummary solo = summarize_phase(report, report.solo, false);
  EXPECT_DOUBLE_EQ(solo.units_per_s_total, 900 / 0.010 + 1100 / 0.012);  // rank 0 alone would give 1000/0.010 + ...
  const PhaseSummary dp = summarize_phase(report, report.dp, true);
  EXPECT_DOUBLE_EQ(dp.units_per_s_total, (900 + 1100) / 0.012);
  EXPECT_DOUBLE_EQ(dp.units_per_s_per_gpu, 1000 / 0.012);
  EXPECT_DOUBLE_EQ(report.rank_units_per_step(1), 1100);
  report.units_per_step_by_rank.clear();
  EXPECT_DOUBLE_EQ(report.rank_units_per_step(1), 1000) << "no per-rank counts: every rank holds the mean";
}

TEST(TrainingSummary, ScalingEfficiencyExposedCommunicationAndOverlap) {
  const TrainingReport report = two_rank_report();
  const ScalingSummary s = summarize_scaling(report);
  EXPECT_DOUBLE_EQ(s.efficiency, 11.0 / 12.0);  // X(2) / (2 X(1)) = t_solo / t_dp
  EXPECT_DOUBLE_EQ(s.exposed_comm_ms, 1);
  EXPECT_DOUBLE_EQ(s.overlap_pct, 75);         // 1 ms of the comm phase's 4 ms shows
  EXPECT_DOUBLE_EQ(s.efficiency_bound, 1);     // 11 ms of compute hides 4 ms of communication
  // all_reduce bus factor 2(n-1)/n = 1 for two ranks: 150 MB in 4.5 ms.
  EXPECT_NEAR(s.in_training_busbw_gbps, 150e6 / 4.5e-3 / 1e9, 1e-9);
  EXPECT_NEAR(summarize_comm(report, report.comm).busbw_gbps, 150e6 / 3e-3 / 1e9, 1e-9);
}

// zero2's buckets are reduce-scatters: bus factor (n-1)/n = 1/2 for two ranks, half the all-reduce's for the same
// bytes and time; a tied table's rows, still all-reduced, keep 2(n-1)/n.
TEST(TrainingSummary, ReduceScatteredBucketsCountTheirOwnBusFactor) {
  TrainingReport report = two_rank_report();
  const double all_reduced = summarize_scaling(report).in_training_busbw_gbps;
  report.buckets_reduce_scattered = true;
  EXPECT_NEAR(summarize_scaling(report).in_training_busbw_gbps, all_reduced / 2, 1e-9);
  EXPECT_EQ(training_report_json(report)["bucket_collective"], "reduce_scatter");
  report.reduction_kinds.assign(report.bucket_bytes.size(), "rows");
  EXPECT_NEAR(summarize_scaling(report).in_training_busbw_gbps, all_reduced, 1e-9);
}

TEST(TrainingSummary, OverlapStaysWithinZeroAndHundred) {
  TrainingReport report = two_rank_report();
  for (RankPhase& rank : report.dp.ranks) rank.step_ms = {30, 30, 30};  // 19 ms exposed, more than the comm phase
  EXPECT_DOUBLE_EQ(summarize_scaling(report).overlap_pct, 0);
  for (RankPhase& rank : report.dp.ranks) rank.step_ms = {9, 9, 9};  // faster than solo: nothing exposed
  const ScalingSummary s = summarize_scaling(report);
  EXPECT_DOUBLE_EQ(s.exposed_comm_ms, 0);
  EXPECT_DOUBLE_EQ(s.overlap_pct, 100);
}

TEST(TrainingSummary, CommunicationBoundEfficiency) {
  TrainingReport report = two_rank_report();
  for (RankPhase& rank : report.comm.ranks) rank.step_ms = {22, 22, 22};
  EXPECT_DOUBLE_EQ(summarize_scaling(report).efficiency_bound, 0.5);
}

// run's MFU peak is the GPU table's (src/plan/data/gpus.json, plan's and scripts/gpu_peaks.py's): one number per
// GPU and precision, the device found by CUDA's name.
// zero1's all-gathers: each step's slowest rank, the median step; busbw as nccl-tests counts an all-gather's. None
// under ddp, and the JSON's all_gather is then null.
TEST(TrainingSummary, AllGatherIsTheSlowestRankPerStepAndItsBusBandwidth) {
  TrainingReport report = two_rank_report();
  EXPECT_EQ(summarize_all_gather(report).ms_per_step, 0.0);
  EXPECT_TRUE(training_report_json(report)["all_gather"].is_null());
  report.all_gather_bytes = 80'000'000;
  report.all_gathers_per_step = 1;
  report.dp.ranks[0].all_gather_ms = {1.0, 3.0, 2.0};
  report.dp.ranks[1].all_gather_ms = {2.0, 1.0, 1.0};  // slowest per step: 2, 3, 2 -> median 2
  const AllGatherSummary gather = summarize_all_gather(report);
  EXPECT_DOUBLE_EQ(gather.ms_per_step, 2.0);
  EXPECT_NEAR(gather.busbw_gbps, 80e6 * 0.5 / 2e-3 / 1e9, 1e-9);  // (N-1)/N of the gathered bytes
  report.all_gathers_per_step = 4;  // bytes are the step's, whatever the count: four gathers share the 80 MB
  EXPECT_NEAR(summarize_all_gather(report).busbw_gbps, 80e6 * 0.5 / 2e-3 / 1e9, 1e-9);
  const nlohmann::json doc = training_report_json(report);
  EXPECT_DOUBLE_EQ(doc["all_gather"]["ms_per_step"].get<double>(), 2.0);
  EXPECT_EQ(doc["all_gather"]["bytes_per_step"].get<uint64_t>(), 80'000'000u);
  EXPECT_EQ(doc["all_gather"]["per_step"].get<int>(), 4);
  EXPECT_TRUE(doc["all_gather"]["comm_ms_per_step"].is_number()) << "the comm phase ran, without gathers: 0";
  EXPECT_EQ(doc["phases"]["dp"]["ranks"][1]["all_gather_ms"].size(), 3u);
}

// The gathers the compute stream waited for after its last update (step_done - update_done: slowest rank per step,
// the median step) and the comm phase's gathers back to back, with their own busbw.
TEST(TrainingSummary, AllGatherExposedAfterTheUpdateAndInTheCommPhase) {
  TrainingReport report = two_rank_report();
  report.all_gather_bytes = 80'000'000;
  report.all_gathers_per_step = 2;
  for (RankPhase& rank : report.dp.ranks) {
    rank.all_gather_ms = {1, 1, 1};
    rank.step_done_ms = {10, 10, 10};
  }
  report.dp.ranks[0].update_done_ms = {9.5, 9.0, 9.9};  // exposed 0.5, 1.0, 0.1
  report.dp.ranks[1].update_done_ms = {9.8, 9.9, 9.2};  // exposed 0.2, 0.1, 0.8 -> slowest 0.5, 1.0, 0.8
  report.comm.ranks[0].all_gather_ms = {0.5, 0.5, 0.5};
  report.comm.ranks[1].all_gather_ms = {0.4, 0.6, 0.4};
  const AllGatherSummary gather = summarize_all_gather(report);
  EXPECT_NEAR(gather.exposed_ms_per_step, 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(gather.comm_ms_per_step, 0.5);
  EXPECT_NEAR(gather.comm_busbw_gbps, 80e6 * 0.5 / 0.5e-3 / 1e9, 1e-9);
  report.comm.ran = false;
  const nlohmann::json doc = training_report_json(report);
  EXPECT_TRUE(doc["all_gather"]["comm_busbw_gbps"].is_null());
  EXPECT_EQ(doc["phases"]["dp"]["ranks"][1]["update_done_ms"].size(), 3u);
}

// zero3: the gathers precede their use, so what is exposed is the compute stream's waits at the nodes that need them:
// per step, the sum over the gathers of end - needed where positive (the slowest rank per step, the median step);
// the update's end no longer counts. The JSON keeps gather_needed_ms per rank.
TEST(TrainingSummary, Zero3ExposedIsTheComputeStreamsWaitsForItsUnits) {
  TrainingReport report = two_rank_report();
  report.all_gather_bytes = 80'000'000;
  report.all_gathers_per_step = 3;
  for (RankPhase& rank : report.dp.ranks) {
    rank.all_gather_ms = {3, 3, 3};
    rank.step_done_ms = {10, 10, 10};
    rank.update_done_ms = {9, 9, 9};  // zero1/zero2's rule would say 1.0 every step
    rank.gather_start_ms = {{0, 1, 2}, {0, 1, 2}, {0, 1, 2}};
    rank.gather_end_ms = {{1, 2, 3}, {1, 2, 3}, {1, 2, 3}};
  }
  // needed at 0.5 (waits 0.5), at 2.5 (gather ended at 2: no wait), at 2 (waits 1): 1.5 on rank 0 every step.
  report.dp.ranks[0].gather_needed_ms = {{0.5, 2.5, 2}, {0.5, 2.5, 2}, {0.5, 2.5, 2}};
  // rank 1 waits 0.25 + 0 + 0 in step 0, then 2.25 (1 + 0.25 + 1), then 0.
  report.dp.ranks[1].gather_needed_ms = {{0.75, 2, 3}, {0, 1.75, 2}, {1, 2, 3}};
  // slowest per step: 1.5, 2.25, 1.5 -> median 1.5
  EXPECT_NEAR(summarize_all_gather(report).exposed_ms_per_step, 1.5, 1e-12);
  EXPECT_EQ(training_report_json(report)["phases"]["dp"]["ranks"][0]["gather_needed_ms"].size(), 3u);
}

// The dp phases' memory per GPU: null without it; planned always, measured only where the device says.
TEST(TrainingSummary, DpMemoryPlannedAndMeasuredWhereTheDeviceSays) {
  TrainingReport report = two_rank_report();
  EXPECT_TRUE(training_report_json(report)["dp_memory"].is_null());
  report.dp_plan_bytes = 3ull << 30;
  nlohmann::json doc = training_report_json(report);
  EXPECT_EQ(doc["dp_memory"]["plan_bytes"].get<uint64_t>(), 3ull << 30);
  EXPECT_TRUE(doc["dp_memory"]["device_used_bytes"].is_null()) << "the CPU device cannot say";
  report.dp_device_used_bytes = 5ull << 29;
  doc = training_report_json(report);
  EXPECT_EQ(doc["dp_memory"]["device_used_bytes"].get<uint64_t>(), 5ull << 29);
}

TEST(TrainingSummary, PeaksComeFromTheGpuTable) {
  const HardwareDatabase& table = builtin_hardware_database();
  EXPECT_DOUBLE_EQ(peak_tflops("NVIDIA H200", Precision::kBf16), *table.gpu("H200 SXM").bf16_tflops);
  EXPECT_DOUBLE_EQ(peak_tflops("NVIDIA H200", Precision::kBf16), 989.5);  // 1,979 with sparsity, halved
  EXPECT_DOUBLE_EQ(peak_tflops("NVIDIA H100 80GB HBM3", Precision::kTf32), *table.gpu("H100 SXM").tf32_tflops);
  EXPECT_DOUBLE_EQ(peak_tflops("NVIDIA H100 PCIe", Precision::kBf16), *table.gpu("H100 PCIe").bf16_tflops);
  EXPECT_DOUBLE_EQ(peak_tflops("NVIDIA A100-SXM4-80GB", Precision::kFp32), *table.gpu("A100 SXM 80GB").fp32_tflops);
  EXPECT_DOUBLE_EQ(peak_tflops("Tesla V100-SXM2-32GB", Precision::kBf16), 0);  // no bf16 figure: null in the table
  EXPECT_DOUBLE_EQ(peak_tflops("AMD EPYC 7763", Precision::kFp32), 0);
}

TEST(TrainingReportJson, CarriesTheDocumentedKeys) {
  const nlohmann::json doc = training_report_json(two_rank_report());
  for (const char* key : {"schema_version", "context", "config", "workload", "phases", "scaling_efficiency",
                          "exposed_comm_ms", "overlap_pct", "busbw_gbps", "status"}) {
    EXPECT_TRUE(doc.contains(key)) << key;
  }
  EXPECT_EQ(doc["schema_version"], 3);
  EXPECT_NEAR(doc["scaling_efficiency"].get<double>(), 11.0 / 12.0, 1e-12);
  EXPECT_NEAR(doc["phases"]["solo"]["units_per_s_per_gpu"].get<double>(), 1000 / 0.011, 1e-6);
  EXPECT_NEAR(doc["phases"]["dp"]["units_per_s_total"].get<double>(), 2 * 1000 / 0.012, 1e-6);
  EXPECT_EQ(doc["phases"]["dp"]["ranks"][1]["step_ms"].size(), 3u);
  for (const char* key : {"argv", "versions", "environment", "devices", "topology"}) {
    EXPECT_TRUE(doc["context"].contains(key)) << key;
  }
}

TEST(TrainingReportJson, UnmeasuredNumbersAreNull) {
  TrainingReport report = two_rank_report();
  report.dp = PhaseRecord{};
  const nlohmann::json doc = training_report_json(report);
  EXPECT_TRUE(doc["scaling_efficiency"].is_null());
  EXPECT_TRUE(doc["busbw_gbps"].is_null());
  EXPECT_FALSE(doc["phases"].contains("dp"));
}

TEST(TrainingReportCsv, OneHeaderOneRowSameWidth) {
  const std::string csv = training_report_csv(two_rank_report());
  const size_t newline = csv.find('\n');
  ASSERT_NE(newline, std::string::npos);
  const std::string header = csv.substr(0, newline), row = csv.substr(newline + 1);
  EXPECT_EQ(std::count(header.begin(), header.end(), ','), std::count(row.begin(), row.end(), ','));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 2);
}

TEST(TrainingReportCsv, CarriesTransportAndEmulation) {
  TrainingReport report = two_rank_report();
  report.transport = "P2P/CUMEM, SHM";
  report.emulate = "host";
  const std::string csv = training_report_csv(report);
  EXPECT_NE(csv.find(",transport,emulate,schema_version\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",\"P2P/CUMEM, SHM\",host,1\n"), std::string::npos) << csv;
  EXPECT_EQ(training_report_json(report)["context"]["topology"]["emulate"], "host");
}

TEST(TrainingTrace, PlacesEveryStepAndAllReduceOnItsRanksTracks) {
  TrainingReport report = two_rank_report();
  for (RankPhase& rank : report.dp.ranks) {
    rank.step_start_ms = {0, 20, 40};
    rank.forward_done_ms = {4, 4, 4};
    rank.nodes_done_ms = {11, 11, 11};
    rank.step_done_ms = {12, 12, 12};
    rank.bucket_ready_ms = {{6, 11}, {6, 11}, {6, 11}};
    rank.bucket_start_ms = {{6, 11}, {6, 11}, {6, 11}};
    rank.bucket_end_ms = {{9, 11.5}, {9, 11.5}, {9, 11.5}};
  }
  const nlohmann::json trace = training_trace_json(report);
  int forward = 0, reduces = 0, named = 0;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "M") {
      ++named;
      continue;
    }
    if (event["name"] == "forward") ++forward;
    if (event["name"].get<std::string>().rfind("all-reduce", 0) == 0) {
      ++reduces;
      EXPECT_EQ(event["tid"], 1);
    }
    if (event["name"] == "backward" && event["pid"] == 1 && event["args"]["step"] == 2) {
      EXPECT_DOUBLE_EQ(event["ts"].get<double>(), 44e3);  // microseconds: step 2 starts at 40 ms, forward 4 ms
      EXPECT_DOUBLE_EQ(event["dur"].get<double>(), 7e3);
    }
  }
  EXPECT_EQ(forward, 6);   // 2 ranks x 3 steps
  EXPECT_EQ(reduces, 12);  // 2 buckets each
  EXPECT_EQ(named, 6);     // a process and two tracks per rank
}

// zero2: the buckets are reduce-scatters, the gathers follow on the communication track, and the compute stream's
// wait for them after its last update is a slice of its own.
TEST(TrainingTrace, ShardedStepsShowTheGathersAndTheWaitForThem) {
  TrainingReport report = two_rank_report();
  report.buckets_reduce_scattered = true;
  for (RankPhase& rank : report.dp.ranks) {
    rank.step_start_ms = {0};
    rank.forward_done_ms = {4};
    rank.nodes_done_ms = {11};
    rank.update_done_ms = {12};
    rank.step_done_ms = {13};
    rank.bucket_ready_ms = rank.bucket_start_ms = {{6, 11}};
    rank.bucket_end_ms = {{9, 11.5}};
    rank.gather_start_ms = {{11.6, 12.1}};
    rank.gather_end_ms = {{12.1, 13}};
  }
  int scatters = 0, gathers = 0, waits = 0;
  const nlohmann::json trace = training_trace_json(report);
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "M") continue;
    const std::string name = event["name"];
    scatters += name.rfind("reduce-scatter", 0) == 0;
    EXPECT_NE(name.rfind("all-reduce", 0), 0u) << "zero2 reduces no bucket with an all-reduce";
    if (name.rfind("all-gather", 0) == 0) {
      ++gathers;
      EXPECT_EQ(event["tid"], 1);
    }
    if (name == "waiting for the all-gathers") {
      ++waits;
      EXPECT_DOUBLE_EQ(event["ts"].get<double>(), 12e3);
      EXPECT_DOUBLE_EQ(event["dur"].get<double>(), 1e3);
    }
    if (name == "optimizer") EXPECT_DOUBLE_EQ(event["dur"].get<double>(), 1e3) << "until the last update";
  }
  EXPECT_EQ(scatters, 4);
  EXPECT_EQ(gathers, 4);
  EXPECT_EQ(waits, 2);
}

TEST(Reproducer, QuotesWhatTheShellWouldSplit) {
  EXPECT_EQ(reproducer_command(two_rank_report()),
            "mpirun -np 2 scalebench run --workload bert_base --json 'my results.json'");
  TrainingReport one = two_rank_report();
  one.nranks = 1;
  one.argv = {"scalebench", "--workload", "it's"};
  EXPECT_EQ(reproducer_command(one), "scalebench --workload 'it'\\''s'");
}

}  // namespace
}  // namespace sb
