// --validate reads `scalebench run --json` files (schema 2). The fixture is the bert_base NVLink row of
// docs/PERFORMANCE.md (2026-11-30, 2 x H200, commit 17aa9ed) written in the run file's schema with only the
// fields the readers use; its per-step arrays hold the p50 alone.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scalebench/error.h"
#include "scalebench/plan.h"
#include "scalebench/plan_database.h"
#include "scalebench/plan_fit.h"
#include "src/plan/validate.h"

namespace sb {
namespace {

std::string write_fixture(const std::string& name, const std::string& transport, const std::string& device) {
  const std::string path = ::testing::TempDir() + name;
  std::string text = R"json({"schema_version": 2, "tool": "scalebench", "command": "run", "status": "ok",
  "context": {"devices": [{"rank": 0, "name": "DEVICE"}, {"rank": 1, "name": "DEVICE"}],
              "topology": {"hosts": 1, "ranks": 2, "transport": "TRANSPORT"}},
  "config": {"workload": "bert_base", "scale": "full", "batch_per_rank": 128, "precision": "bf16",
             "grad_dtype": "fp32", "overlap": true, "bucket_mb": 25},
  "workload": {"name": "bert_base", "unit": "sequences"}, "nranks": 2,
  "phases": {"solo": {"step_ms_p50": 33.39, "units_per_s_per_gpu": 3833.5, "units_per_s_total": 7667.0},
             "comm": {"step_ms_p50": 2.0},
             "dp": {"step_ms_p50": 34.76, "units_per_s_per_gpu": 3682.4, "units_per_s_total": 7364.8}},
  "scaling_efficiency": 0.961,
  "op_ms": [{"op": "gemm (backward)", "ms": 11.2}, {"op": "gemm", "ms": 5.6}, {"op": "adamw", "ms": 1.0}]})json";
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"DEVICE", device}, {"TRANSPORT", transport}}) {
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key)) text.replace(at, key.size(), value);
  }
  std::ofstream(path) << text;
  return path;
}

TEST(PlanValidate, ReadsARunFileAsAMeasurement) {
  const HardwareDatabase& db = builtin_hardware_database();
  const RunMeasurement m = measurement_from_result(write_fixture("nvlink.json", "P2P/CUMEM", "NVIDIA H200"), db, "");
  EXPECT_EQ(m.gpu, "H200 SXM");
  EXPECT_EQ(m.fabric, "nvlink4-nvswitch");
  EXPECT_EQ(m.gpus, 2);
  EXPECT_EQ(m.batch, 128);
  EXPECT_DOUBLE_EQ(m.solo_step_ms, 33.39);
  EXPECT_DOUBLE_EQ(m.dp_step_ms, 34.76);
  EXPECT_DOUBLE_EQ(*m.comm_step_ms, 2.0);
  EXPECT_NEAR(*gemm_ms_of_result(write_fixture("gemm.json", "SHM", "NVIDIA H200")), 16.8, 1e-12);
  EXPECT_EQ(measurement_from_result(write_fixture("shm.json", "SHM/direct/direct", "NVIDIA H200"), db, "").fabric,
            "pcie5-host");
  EXPECT_EQ(measurement_from_result(write_fixture("sock.json", "NET/Socket", "NVIDIA H200"), db, "").fabric,
            "tcp-loopback");
  EXPECT_EQ(measurement_from_result(write_fixture("over.json", "P2P", "NVIDIA H200"), db, "pcie5-p2p").fabric,
            "pcie5-p2p");
  EXPECT_THROW(measurement_from_result(write_fixture("cpu.json", "", "AMD EPYC"), db, ""), UsageError);
}

// A run trained under --strategy zero2 with SGD momentum is predicted as that (the plan's request carries both) and
// kept out of the fabric fit, which models ddp's all-reduces and AdamW's update; a file without them is ddp and AdamW.
TEST(PlanValidate, PredictsARunWithItsStrategyAndOptimizer) {
  const HardwareDatabase& db = builtin_hardware_database();
  const std::string plain = write_fixture("plain.json", "P2P/CUMEM", "NVIDIA H200");
  const RunMeasurement ddp = measurement_from_result(plain, db, "");
  EXPECT_EQ(ddp.strategy, "ddp");
  EXPECT_EQ(ddp.optimizer, "adamw");
  EXPECT_TRUE(ddp.used_in_fit);
  std::ifstream in(plain);
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["config"]["strategy"] = "zero2";
  doc["config"]["optimizer"] = {{"kind", "sgd_momentum"}, {"learning_rate", 0.01}};
  const std::string path = ::testing::TempDir() + "zero2_sgd.json";
  std::ofstream(path) << doc.dump();
  const RunMeasurement m = measurement_from_result(path, db, "");
  EXPECT_EQ(m.strategy, "zero2");
  EXPECT_EQ(m.optimizer, "sgd_momentum");
  EXPECT_FALSE(m.used_in_fit);
  const PlanRequest r = request_for(m);
  EXPECT_EQ(r.strategy, "zero2");
  EXPECT_EQ(r.optimizer, "sgd_momentum");
  const ValidationRow row = validate_runs({m}, db, load_calibration("")).front();
  EXPECT_EQ(row.predicted.optimizer, OptimizerKind::kSgdMomentum);
  EXPECT_GT(row.predicted.timeline.gathers_alone_ms, 0) << "zero2 gathers each bucket after its update";
}

TEST(PlanValidate, PrintsPredictedBesideMeasuredWithTheError) {
  const HardwareDatabase& db = builtin_hardware_database();
  const Calibration calibration = load_calibration("");
  const RunMeasurement m = measurement_from_result(write_fixture("row.json", "P2P/CUMEM", "NVIDIA H200"), db, "");
  const std::vector<ValidationRow> rows = validate_runs({m}, db, calibration);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NEAR(rows[0].measured_units_per_s_per_gpu, 128 / 34.76e-3, 1e-6);
  const std::string text = validation_text(rows, "t", false);
  EXPECT_NE(text.find("E pred"), std::string::npos) << text;
  EXPECT_NE(text.find("96.1%"), std::string::npos) << text;  // measured E = 33.39 / 34.76
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

// A schema-3 file of a 4-rank --gpus-sweep: its k = 2 point becomes a measurement of its own, validated beside the
// whole job's (the figures are invented for the reader, not measured).
TEST(PlanValidate, ASweptRunGivesAMeasurementPerPoint) {
  const std::string path = ::testing::TempDir() + "swept.json";
  std::ofstream(path) << R"json({"schema_version": 3, "tool": "scalebench", "command": "run", "status": "ok",
  "context": {"devices": [{"rank": 0, "name": "NVIDIA H200"}], "topology": {"hosts": 1, "ranks": 4, "transport": "P2P/CUMEM"}},
  "config": {"workload": "bert_base", "scale": "full", "batch_per_rank": 128, "precision": "bf16",
             "grad_dtype": "fp32", "overlap": true, "bucket_mb": 25},
  "workload": {"name": "bert_base", "unit": "sequences"}, "nranks": 4,
  "phases": {"solo": {"step_ms_p50": 33.4, "units_per_s_per_gpu": 3832.3, "units_per_s_total": 15329.0},
             "dp": {"step_ms_p50": 35.5, "units_per_s_per_gpu": 3605.6, "units_per_s_total": 14422.5}},
  "scaling_efficiency": 0.941,
  "gpus_sweep": {"sizes": [1, 2, 4], "concurrent_groups": false, "notice": null, "points": [
    {"gpus": 1, "groups_at_once": 1, "link": null, "measured": true, "step_ms_p50": 33.4, "units_per_s_total": 3832.3,
     "units_per_s_per_gpu": 3832.3, "efficiency": 1.0},
    {"gpus": 2, "groups_at_once": 1, "link": "NV18", "measured": true, "step_ms_p50": 34.8, "units_per_s_total": 7356.3,
     "units_per_s_per_gpu": 3678.2, "efficiency": 0.96},
    {"gpus": 4, "groups_at_once": 1, "link": "NV18", "measured": true, "step_ms_p50": 35.5, "units_per_s_total": 14422.5,
     "units_per_s_per_gpu": 3605.6, "efficiency": 0.941}]}})json";
  const HardwareDatabase& db = builtin_hardware_database();
  const std::vector<RunMeasurement> runs = measurements_from_result(path, db, "");
  ASSERT_EQ(runs.size(), 2u);  // the job (k = 4) and its k = 2 point; k = 1 is the solo phase both hold
  EXPECT_EQ(runs[0].gpus, 4);
  EXPECT_EQ(runs[1].gpus, 2);
  EXPECT_EQ(runs[1].label, path + " k=2");
  EXPECT_DOUBLE_EQ(runs[1].dp_step_ms, 34.8);
  EXPECT_DOUBLE_EQ(*runs[1].scaling_efficiency, 0.96);
  EXPECT_FALSE(runs[1].used_in_fit);
  EXPECT_EQ(runs[1].fabric, "nvlink4-nvswitch");
  const std::string text = validation_text(validate_runs(runs, db, load_calibration("")), "t", false);
  EXPECT_NE(text.find(path + " k=2"), std::string::npos) << text;
}

}  // namespace
}  // namespace sb
