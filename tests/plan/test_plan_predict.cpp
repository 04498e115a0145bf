// Whole predictions of scalebench plan on the compiled-in database and calibration: memory from the trainer's
// own plan, the path chosen per GPU, one GPU without communication, and the calibration file being exactly the
// fit of the measurements it records.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "scalebench/error.h"
#include "scalebench/plan.h"
#include "scalebench/plan_fit.h"
#include "scalebench/replica_plan.h"
#include "src/train/replica.h"

namespace sb {
namespace {

const HardwareDatabase& db() { return builtin_hardware_database(); }
const Calibration& calibration() {
  static const Calibration c = load_calibration("");
  return c;
}

PlanRequest request(const char* workload, const char* gpu, int gpus = 1, int nodes = 1) {
  PlanRequest r;
  r.workload = workload;
  r.gpu = gpu;
  r.gpus = gpus;
  r.nodes = nodes;
  return r;
}

TEST(PlanPredict, MemoryIsTheTrainersPlanAndTheLargestBatchFits) {
  const PlanPrediction p = predict_plan(request("bert_base", "H200"), db(), calibration());
  ReplicaOptions options;
  options.workload = "bert_base";
  options.batch = 128;
  options.precision = Precision::kBf16;
  EXPECT_EQ(p.needed_bytes, needed_bytes(*plan_replica(options), options, DeviceKind::kCuda));  // 7.85 GiB, as measured on the H200
  EXPECT_EQ(p.batch, 128);
  EXPECT_FALSE(p.batch_reduced);
  for (const PrecisionFit& fit : p.fits) {
    options.precision = fit.precision;
    options.batch = fit.max_batch;
    EXPECT_LE(needed_bytes(*plan_replica(options), options, DeviceKind::kCuda), p.capacity_bytes);
    options.batch = fit.max_batch + 1;
    EXPECT_GT(needed_bytes(*plan_replica(options), options, DeviceKind::kCuda), p.capacity_bytes);
  }
}

// plan's view of a replica (include/scalebench/replica_plan.h, no src/train header in src/plan) is the trainer's
// replica planned at the same options: same graph, plan, buckets, credited units and bytes.
TEST(PlanPredict, ReplicaPlanIsTheTrainersPlannedReplica) {
  struct Case {
    const char* workload;
    int64_t batch;
    Precision precision;
    uint64_t bucket_bytes;
    int state_buffers;
  };
  for (const Case& c : {Case{"bert_base", 128, Precision::kBf16, 25ull << 20, 2},
                        Case{"conv_seq2seq", 64, Precision::kFp32, 3ull << 20, 1}}) {
    SCOPED_TRACE(c.workload);
    ReplicaPlanOptions plan_options;
    plan_options.workload = c.workload;
    plan_options.batch = c.batch;
    plan_options.precision = c.precision;
    plan_options.bucket_bytes = c.bucket_bytes;
    plan_options.optimizer_state_buffers = c.state_buffers;
    const ReplicaPlan planned = plan_replica_graph(plan_options);
    ReplicaOptions options;
    options.workload = c.workload;
    options.batch = c.batch;
    options.precision = c.precision;
    options.bucket_bytes = c.bucket_bytes;
    options.optimizer_state_buffers = c.state_buffers;
    const std::unique_ptr<Replica> replica = plan_replica(options);
    EXPECT_EQ(planned.cuda_needed_bytes, needed_bytes(*replica, options, DeviceKind::kCuda));
    EXPECT_GT(planned.cuda_needed_bytes, planned.plan.total_bytes);  // the optimizer state at least
    EXPECT_EQ(planned.graph.nodes().size(), replica->graph.nodes().size());
    EXPECT_EQ(planned.graph.tensors().size(), replica->graph.tensors().size());
    EXPECT_EQ(planned.plan.total_bytes, replica->plan.total_bytes);
    EXPECT_EQ(planned.plan.offsets, replica->plan.offsets);
    ASSERT_EQ(planned.plan.buckets.size(), replica->plan.buckets.size());
    EXPECT_GT(planned.plan.buckets.size(), 1u);
    for (size_t b = 0; b < planned.plan.buckets.size(); ++b) {
      EXPECT_EQ(planned.plan.buckets[b].bytes, replica->plan.buckets[b].bytes);
      EXPECT_EQ(planned.plan.buckets[b].ready_after_node, replica->plan.buckets[b].ready_after_node);
    }
    EXPECT_EQ(planned.built.units_per_step, replica->built.units_per_step);
    EXPECT_EQ(planned.built.loss, replica->built.loss);
  }
}

// plan --strategy: a sharded strategy over N GPUs holds one shard's optimizer state per GPU, so a larger batch
// fits; zero1 moves 1.5x ddp's bytes (all-reduce + all-gather) and zero2 as many as ddp (reduce-scatter +
// all-gather), the gathers timed after the updates; on one GPU there is nothing to shard.
TEST(PlanPredict, ShardedStrategiesHoldLessStateAndGatherAfterTheUpdate) {
  PlanRequest r = request("bert_base", "A100 SXM 40GB");
  r.gpus = 4;
  const PlanPrediction ddp = predict_plan(r, db(), calibration());
  r.strategy = "zero1";
  const PlanPrediction zero1 = predict_plan(r, db(), calibration());
  r.strategy = "zero2";
  const PlanPrediction zero2 = predict_plan(r, db(), calibration());
  for (const PlanPrediction* sharded : {&zero1, &zero2}) {
    EXPECT_LT(sharded->needed_bytes, ddp.needed_bytes) << sharded->request.strategy;
    EXPECT_GT(sharded->fits[1].max_batch, ddp.fits[1].max_batch) << sharded->request.strategy;
    EXPECT_GT(sharded->timeline.gathers_alone_ms, 0) << sharded->request.strategy;
    EXPECT_DOUBLE_EQ(sharded->timeline.step_ms, sharded->timeline.last_gather_end_ms) << "the step ends gathering";
    // Solo is ddp's, but for zero2's bucket padding in the solo update (a few KiB).
    EXPECT_NEAR(sharded->timeline.solo_ms, ddp.timeline.solo_ms, 1e-4 * ddp.timeline.solo_ms);
  }
  EXPECT_DOUBLE_EQ(ddp.timeline.gathers_alone_ms, 0);
  EXPECT_NEAR(zero1.wire_bytes, 2 * ddp.wire_bytes, 0.01 * ddp.wire_bytes) << "the all-reduced and the gathered";
  EXPECT_LT(zero2.timeline.comm_alone_ms, zero1.timeline.comm_alone_ms) << "reduce-scatters, not all-reduces";
  EXPECT_GT(zero2.scaling_efficiency, zero1.scaling_efficiency);
  // zero3: less than zero2's memory (the parameters in blocks with a shard too, the gradients as zero2's), each bucket
  // gathered before the forward pass and most again before the backward pass instead of once after the update, the
  // forward's gathers in the nodes' way; the solo step zero2's (the backward copies' casts are the dp step's alone).
  r.strategy = "zero3";
  const PlanPrediction zero3 = predict_plan(r, db(), calibration());
  EXPECT_LT(zero3.needed_bytes, zero2.needed_bytes);
  EXPECT_GT(zero3.fits[1].max_batch, zero2.fits[1].max_batch);
  EXPECT_GT(zero3.timeline.gathers_alone_ms, 1.5 * zero2.timeline.gathers_alone_ms);
  EXPECT_LE(zero3.timeline.gathers_alone_ms, 2 * zero2.timeline.gathers_alone_ms + 1e-9);
  EXPECT_GT(zero3.wire_bytes, zero2.wire_bytes);
  EXPECT_LT(zero3.timeline.last_gather_end_ms, zero3.timeline.nodes_done_ms) << "no gather after the update";
  EXPECT_LT(zero3.scaling_efficiency, zero2.scaling_efficiency);
  EXPECT_NEAR(zero3.timeline.solo_ms, zero2.timeline.solo_ms, 1e-9);
  // zero2 and zero3 hold a shard of the gradients (their blocks dead at the peak), zero1 every gradient.
  EXPECT_LT(zero2.needed_bytes, zero1.needed_bytes);
  r.gpus = 1;
  // One GPU holds every gradient and parameter again, in the shards; the blocks pack the shared region a little
  // differently (1.0% less than ddp's region whole for bert_base here, 2026-12-05).
  const PlanPrediction one = predict_plan(r, db(), calibration());
  const uint64_t one_ddp = predict_plan(request("bert_base", "A100 SXM 40GB"), db(), calibration()).needed_bytes;
  EXPECT_NEAR(static_cast<double>(one.needed_bytes), static_cast<double>(one_ddp), 0.02 * static_cast<double>(one_ddp));
  r.strategy = "zero4";
  EXPECT_THROW(predict_plan(r, db(), calibration()), UsageError);
}

// plan --optimizer: the update rule run trains with sets the state in the memory (one buffer of the parameters' size
// for SGD momentum, two for AdamW: one buffer more, ~4 bytes per parameter, for yolov3's 62M) and the update's bytes
// in the step (5 against AdamW's 7 per gradient byte, plus one kernel's overhead each); "reference" is the
// workload's own (yolov3: SGD momentum, WORKLOADS.md); the default is run's, AdamW.
TEST(PlanPredict, TheOptimizerSetsItsStateAndItsUpdate) {
  PlanRequest r = request("yolov3", "H200 SXM", 2);
  const PlanPrediction adamw = predict_plan(r, db(), calibration());
  EXPECT_EQ(adamw.optimizer, OptimizerKind::kAdamW);
  r.optimizer = "sgd_momentum";
  const PlanPrediction sgd = predict_plan(r, db(), calibration());
  r.optimizer = "reference";
  const PlanPrediction reference = predict_plan(r, db(), calibration());
  EXPECT_EQ(reference.optimizer, OptimizerKind::kSgdMomentum);
  EXPECT_EQ(reference.needed_bytes, sgd.needed_bytes);
  const double parameters = static_cast<double>(find_workload("yolov3").info().full_parameters);
  const double one_buffer = static_cast<double>(adamw.needed_bytes - sgd.needed_bytes);
  EXPECT_GT(one_buffer, 4 * parameters);
  EXPECT_LT(one_buffer, 1.01 * 4 * parameters) << "one state buffer, its buckets' padding at most";
  EXPECT_GE(sgd.fits[1].max_batch, adamw.fits[1].max_batch);
  EXPECT_LT(sgd.timeline.optimizer_ms, adamw.timeline.optimizer_ms);
  EXPECT_GT(sgd.timeline.optimizer_ms, 5.0 / 7.0 * adamw.timeline.optimizer_ms) << "the kernel's overhead is the same";
  EXPECT_NEAR(sgd.timeline.forward_ms + sgd.timeline.backward_ms,
              adamw.timeline.forward_ms + adamw.timeline.backward_ms, 1e-9);
  r.optimizer = "lamb";
  EXPECT_THROW(predict_plan(r, db(), calibration()), UsageError);
}

// zero2's gradients at 1/N (PlanOptions::gradient_blocks): on two GPUs at the default batch, the blocks live in the
// shared region's bytes (at its peak, mostly the end of the forward pass, few are alive) and a rank holds half the
// gradients in its shard, so the replica needs about G/2 less than with the gradient region whole (all of it for
// transformer_big; the greedy packing gives back up to 13% of it for bert_base, as planned on 2026-12-05).
TEST(PlanPredict, GradientBlocksSaveAboutHalfTheGradientsOnTwoGpus) {
  for (const char* workload : {"transformer_big", "bert_base", "mt_dnn", "yolov3"}) {
    ReplicaOptions options;
    options.workload = workload;
    options.batch = find_workload(workload).info().default_batch;
    options.ranks = 2;
    options.strategy = DataParallelStrategy::kZero2;
    options.optimizer_state_sharded = true;
    options.gradient_layout = GradientLayout::kWhole;
    const std::unique_ptr<Replica> whole = plan_replica(options);
    options.gradient_layout = GradientLayout::kSmaller;  // run's choice: blocks here
    const std::unique_ptr<Replica> blocks = plan_replica(options);
    ASSERT_TRUE(blocks->plan.gradients_in_blocks);
    const double half = static_cast<double>(whole->plan.gradient_bytes) / 2;
    const double saved = static_cast<double>(needed_bytes(*whole, options, DeviceKind::kCuda)) -
                         static_cast<double>(needed_bytes(*blocks, options, DeviceKind::kCuda));
    EXPECT_GT(saved, 0.85 * half) << workload;
    EXPECT_LE(saved, half + 1e6) << workload << ": no more than the other half of the gradients";
    // yolov3's peak lies in its backward pass: a third of a shard's worth of blocks alive there.
    EXPECT_LT(plan_categories(blocks->graph, blocks->plan).gradients, 0.5 * half) << workload << ": alive at the peak";
  }
}

TEST(PlanPredict, OneGpuHasNoCommunicationAndFullEfficiency) {
  const PlanPrediction p = predict_plan(request("bert_base", "A100 SXM 40GB"), db(), calibration());
  EXPECT_EQ(p.buckets, 0u);
  EXPECT_DOUBLE_EQ(p.timeline.step_ms, p.timeline.solo_ms);
  EXPECT_DOUBLE_EQ(p.scaling_efficiency, 1.0);
  EXPECT_NEAR(p.solo_units_per_s, 128 / (p.timeline.solo_ms * 1e-3), 1e-9);
}

// Issue 30, defect 5: Titan RTX and Quadro RTX 6000/8000 share one datasheet row (TU102, 1770 MHz boost, same peaks
// and memory) and tied exactly; the Titan's 280 W against the Quadros' 260 W sustains a higher clock, as Lambda's
// fp32 training throughput shows (docs/PLAN.md). Boards without a twin keep their boost clock.
TEST(PlanPredict, PowerTwinsSharingADatasheetRowAreOrderedByBoardPower) {
  const GpuSpec& titan = db().gpu("Titan RTX");
  const GpuSpec& quadro6000 = db().gpu("Quadro RTX 6000");
  EXPECT_DOUBLE_EQ(titan.clock_scale(), 1.0);
  EXPECT_NEAR(quadro6000.clock_scale(), std::cbrt(260.0 / 280.0), 1e-12);
  EXPECT_DOUBLE_EQ(db().gpu("Quadro RTX 8000").clock_scale(), quadro6000.clock_scale());
  EXPECT_DOUBLE_EQ(db().gpu("H200 SXM").clock_scale(), 1.0);  // the calibration's GPU is untouched
  for (const char* workload : {"transformer_big", "bert_base", "yolov3"}) {
    PlanRequest r = request(workload, "Titan RTX");
    r.precision = "fp32";
    const double on_titan = predict_plan(r, db(), calibration()).solo_units_per_s;
    r.gpu = "Quadro RTX 6000";
    const double on_quadro = predict_plan(r, db(), calibration()).solo_units_per_s;
    EXPECT_GT(on_titan, on_quadro * 1.005) << workload;
    EXPECT_LT(on_titan, on_quadro * 1.03) << workload;
  }
}

// Issue 30, defect 5, second half: the GTX 1080 Ti (no tensor cores) must not rank above the RTX 2080 in the
// 16-bit training the guide measures (Lambda, 2019-03-04: the 2080 about 1.30x the 1080 Ti in fp16). In fp32 the
// measurement is a tie within about 2% (docs/PLAN.md); the model's two datasheet rows stay within 10%.
TEST(PlanPredict, TheRtx2080OutrunsTheGtx1080TiIn16BitAndTiesItInFp32) {
  for (const char* workload : {"transformer_big", "bert_base", "yolov3"}) {
    PlanRequest r = request(workload, "RTX 2080");
    r.batch = 8;  // fits both 8-GB and 11-GB cards: the same work on each
    const double turing = predict_plan(r, db(), calibration()).solo_units_per_s;
    r.gpu = "GTX 1080 Ti";
    const double pascal = predict_plan(r, db(), calibration()).solo_units_per_s;
    EXPECT_GT(turing, 1.3 * pascal) << workload;
    r.precision = "fp32";
    const double pascal32 = predict_plan(r, db(), calibration()).solo_units_per_s;
    r.gpu = "RTX 2080";
    const double turing32 = predict_plan(r, db(), calibration()).solo_units_per_s;
    EXPECT_NEAR(turing32 / pascal32, 1.0, 0.10) << workload;
  }
}

TEST(PlanPredict, PathsFollowTheGpu) {
  const PlanPrediction nvlink = predict_plan(request("bert_base", "H100 SXM", 8), db(), calibration());
  EXPECT_EQ(nvlink.intra_fabric, "nvlink4-nvswitch");
  const PlanPrediction host = predict_plan(request("bert_base", "RTX 4090", 4), db(), calibration());
  EXPECT_EQ(host.intra_fabric, "pcie4-host");
  EXPECT_FALSE(host.notes.empty());
  const PlanPrediction bridge_too_small = predict_plan(request("bert_base", "H100 PCIe", 4), db(), calibration());
  EXPECT_EQ(bridge_too_small.intra_fabric, "pcie5-p2p");
  PlanRequest multi = request("bert_base", "H100 SXM", 64, 8);
  multi.fabric = "eth-100g";
  multi.nics_per_node = 1;
  const PlanPrediction slow_network = predict_plan(multi, db(), calibration());
  EXPECT_EQ(slow_network.inter_fabric, "eth-100g");
  EXPECT_NEAR(slow_network.path.busbw_gbps, 12.5 * *calibration().fabrics.at("ethernet").bus_efficiency, 1e-9);
  EXPECT_LT(slow_network.scaling_efficiency, nvlink.scaling_efficiency);
  EXPECT_GT(slow_network.dp_units_per_s_total, nvlink.dp_units_per_s_total);  // 64 GPUs, even at lower efficiency
}

TEST(PlanPredict, RefusesWhatTheHardwareCannotDo) {
  PlanRequest bf16 = request("bert_base", "RTX 2080 Ti");
  bf16.precision = "bf16";
  EXPECT_THROW(predict_plan(bf16, db(), calibration()), UsageError);
  EXPECT_EQ(predict_plan(request("bert_base", "RTX 2080 Ti"), db(), calibration()).precision, Precision::kFp16);
  EXPECT_THROW(predict_plan(request("mt_dnn", "RTX 2060"), db(), calibration()), UsageError);  // not even batch 1
  EXPECT_THROW(predict_plan(request("bert_base", "H100 SXM", 6, 4), db(), calibration()), UsageError);
  PlanRequest wrong_scope = request("bert_base", "H100 SXM", 16, 2);
  wrong_scope.fabric = "nvlink4-nvswitch";
  EXPECT_THROW(predict_plan(wrong_scope, db(), calibration()), UsageError);
}

// Mask R-CNN's proposal sorts are sized on the host: planning it needs no GPU (it ended in MPI_Abort from CUB's
// device query, cudaErrorInvalidDevice, in a CUDA build on a machine without one).
TEST(PlanPredict, MaskrcnnPlansWithoutAGpu) {
  const PlanPrediction p = predict_plan(request("maskrcnn", "RTX 4090"), db(), calibration());
  EXPECT_GT(p.needed_bytes, 0u);
  EXPECT_GT(p.solo_units_per_s, 0);
}

// unsupMT's step: four sub-steps (two denoising auto-encoder, two back-translation steps whose source a greedy
// decode loop generates), each with its own reduction and optimizer step. Measured on 2 x H200, bf16, 275
// sentences per sub-step (docs/PERFORMANCE.md, "unsupmt, first GPU run", commit df25086; docs/measured/2026-11-30/
// unsupmt_2xH200): solo step p50 342.77 ms, the decode category 126.26 ms of the node-by-node profile, the four
// sub-steps' all-reduces 23.0 ms back to back. The decode loop and the reductions come within 10%; the whole step
// does not (-17%, docs/PLAN.md): the 64,699-wide vocabulary GEMMs run at ~9% of the bf16 peak there, which one
// GEMM efficiency for every shape does not know.
TEST(PlanPredict, UnsupmtIsFourSubStepsWithDecodeAsMeasuredOnTheH200) {
  const PlanPrediction p = predict_plan(request("unsupmt", "H200", 2), db(), calibration());
  EXPECT_EQ(p.timeline.sub_steps, 4);
  EXPECT_EQ(p.batch, 275);
  EXPECT_GE(p.timeline.parts_ms, p.timeline.generation_ms);
  EXPECT_NEAR(p.timeline.generation_ms, 126.26, 0.10 * 126.26);
  EXPECT_NEAR(p.timeline.comm_alone_ms, 23.0, 0.10 * 23.0);
  EXPECT_NEAR(p.timeline.solo_ms, 342.77, 0.20 * 342.77);
  EXPECT_GE(p.timeline.step_ms, p.timeline.solo_ms);
  EXPECT_EQ(p.units_per_step, 30800);  // 4 sub-steps' target words, as the run reports
}

TEST(PlanPredict, AnotherMemorySizeOfTheSameChip) {
  PlanRequest small = request("bert_base", "H200");
  small.memory_gib = 24;
  const PlanPrediction p = predict_plan(small, db(), calibration());
  EXPECT_EQ(p.capacity_bytes, (24ull << 30) - kPlanDeviceReserveBytes);
  EXPECT_LT(p.fits.front().max_batch, predict_plan(request("bert_base", "H200"), db(), calibration()).fits.front().max_batch);
}

// Issue 30: unsupMT's step (four sub-steps, decode loops, a 64,699-column vocabulary) within 10% of the measured
// H200 run (docs/PLAN.md): solo 342.8 ms p50, 2-GPU dp 354.8 ms. Its unaligned GEMMs run at the rate measured on
// bert_base's and conv_seq2seq's vocabulary projections, not on unsupMT's own.
TEST(PlanPredict, UnsupmtsStepIsWithinTenPercentOfTheMeasuredRun) {
  const PlanPrediction p = predict_plan(request("unsupmt", "H200 SXM", 2), db(), calibration());
  EXPECT_NEAR(p.timeline.solo_ms / 342.8, 1.0, 0.10);
  EXPECT_NEAR(p.timeline.step_ms / 354.8, 1.0, 0.10);
  for (const UnalignedGemmMeasurement& m : calibration().unaligned_gemm_measurements) {
    EXPECT_NE(m.workload, "unsupmt") << "fitted on unsupMT would not validate it";
  }
}

TEST(PlanCalibration, AnUnalignedEfficiencyNeedsItsMeasurements) {
  nlohmann::json doc = nlohmann::json::parse(builtin_calibration_json());
  doc["measurements"].erase("unaligned_gemms");
  try {
    parse_calibration(doc.dump(), "c.json");
    FAIL() << "accepted an unaligned efficiency without measurements";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("unaligned_gemm_efficiency"), std::string::npos) << e.what();
  }
}

// A recorded run names its --strategy and --optimizer (absent: ddp and AdamW, the files before 2026-12-05); a value
// run does not have is refused naming the row's field.
TEST(PlanCalibration, ARunMeasurementsStrategyAndOptimizerAreChecked) {
  nlohmann::json doc = nlohmann::json::parse(builtin_calibration_json());
  nlohmann::json& run = doc["measurements"]["runs"].at(0);
  EXPECT_EQ(parse_calibration(doc.dump(), "c.json").run_measurements.at(0).strategy, "ddp");
  run["strategy"] = "zero3";
  run["optimizer"] = "nag";
  const RunMeasurement read = parse_calibration(doc.dump(), "c.json").run_measurements.at(0);
  EXPECT_EQ(read.strategy, "zero3");
  EXPECT_EQ(read.optimizer, "nag");
  for (const auto& [key, bad] : {std::pair<const char*, const char*>{"strategy", "zero4"}, {"optimizer", "lamb"}}) {
    nlohmann::json wrong = doc;
    wrong["measurements"]["runs"].at(0)[key] = bad;
    try {
      parse_calibration(wrong.dump(), "c.json");
      FAIL() << "accepted " << key << " " << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(key) + " must be"), std::string::npos) << e.what();
    }
  }
}

// The stored fitted values are what --calibrate computes from the stored measurements: nobody edited a number
// by hand without its measurement.
TEST(PlanCalibration, StoredValuesAreTheFitOfStoredMeasurements) {
  const Calibration& c = calibration();
  const ComputeCalibration compute =
      fit_compute(c.compute_measurements, c.unaligned_gemm_measurements, db(), c.compute.memory_efficiency);
  EXPECT_NEAR(compute.gemm_efficiency, c.compute.gemm_efficiency, 1e-9);
  EXPECT_NEAR(compute.unaligned_gemm_efficiency, c.compute.unaligned_gemm_efficiency, 1e-9);
  EXPECT_NEAR(compute.node_overhead_us, c.compute.node_overhead_us, 1e-9);
  for (const auto& [key, fitted] : fit_fabrics(c.run_measurements, db(), c)) {
    const FabricCalibration& stored = c.fabrics.at(key);
    if (fitted.bus_efficiency) EXPECT_NEAR(*fitted.bus_efficiency, *stored.bus_efficiency, 1e-9) << key;
    if (fitted.busbw_gbps) EXPECT_NEAR(*fitted.busbw_gbps, *stored.busbw_gbps, 1e-9) << key;
    EXPECT_NEAR(fitted.in_training_rate, stored.in_training_rate, 1e-12) << key;
    EXPECT_NEAR(fitted.dilation, stored.dilation, 1e-12) << key;
  }
}

}  // namespace
}  // namespace sb
