// plan --framework pytorch: PyTorch's memory lines (src/plan/pytorch_memory.h) read, checked against their own
// points, applied to a card's capacity, and no answer where no measurement is stored.
#include <gtest/gtest.h>

#include "scalebench/error.h"
#include "scalebench/plan.h"
#include "src/plan/pytorch_memory.h"

namespace sb {
namespace {

// Two points 2 GiB + 10 MiB per unit at batches 100 and 200 (made-up numbers: the arithmetic, not a measurement).
std::string document(double fixed_bytes) {
  return R"({"schema_version": 1, "about": "test", "measurements": [{"workload": "bert_base", "mode": "eager",
    "precision": "bf16", "fixed_bytes": )" +
         std::to_string(fixed_bytes) + R"(, "bytes_per_unit": 10485760, "points": [
    {"batch": 100, "peak_allocated_bytes": 3196059648, "peak_reserved_bytes": 3300000000},
    {"batch": 200, "peak_allocated_bytes": 4244635648, "peak_reserved_bytes": 4400000000}],
    "gpu": "NVIDIA H200", "torch": "2.x", "allocator": "expandable_segments:True", "date": "2026-12-02",
    "command": "scripts/pytorch_memory.py fit --workload bert_base"}]})";
}

TEST(PlanPytorchMemory, TheLineIsTheFitOfItsPointsAndGivesTheLargestBatch) {
  const PytorchMemoryTable table = parse_pytorch_memory(document(2147483648.0), "t.json");
  ASSERT_EQ(table.of("bert_base").size(), 1u);
  const PytorchMemoryFit& fit = *table.of("bert_base").front();
  EXPECT_EQ(pytorch_max_batch(fit, (2ull << 30) + 10 * (10ull << 20) + 5), 10);
  EXPECT_EQ(pytorch_max_batch(fit, 2ull << 30), 0);
  EXPECT_TRUE(table.of("transformer_big").empty());
  // A line that is not the fit of its points was edited by hand.
  EXPECT_THROW(parse_pytorch_memory(document(2e9), "t.json"), UsageError);
}

TEST(PlanPytorchMemory, PredictionsApplyTheLineToTheCardAndSayWhereNothingIsMeasured) {
  const PytorchMemoryTable table = parse_pytorch_memory(document(2147483648.0), "t.json");
  PlanRequest r;
  r.workload = "bert_base";
  r.gpu = "RTX 4090";
  r.framework = "pytorch";
  const Calibration calibration = load_calibration("");
  const PlanPrediction p = predict_plan(r, builtin_hardware_database(), calibration, &table);
  ASSERT_EQ(p.pytorch_fits.size(), 1u);
  EXPECT_EQ(p.pytorch_fits[0].max_batch, pytorch_max_batch(*table.of("bert_base")[0], p.capacity_bytes));
  EXPECT_EQ(p.pytorch_fits[0].mode, "eager");
  r.workload = "transformer_big";
  try {
    predict_plan(r, builtin_hardware_database(), calibration, &table);
    FAIL() << "a PyTorch prediction without a measurement";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no PyTorch memory measurement is stored for transformer_big"),
              std::string::npos);
  }
}

TEST(PlanPytorchMemory, TheBuiltInTableParses) { EXPECT_NO_THROW(builtin_pytorch_memory()); }

}  // namespace
}  // namespace sb
