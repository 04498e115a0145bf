// plan's printed text: the reserve it states is the constant it uses, three significant figures in --table, and
// the reason of every n/a cell (src/plan/plan_print.h).
#include <gtest/gtest.h>

#include "scalebench/byte_text.h"
#include "scalebench/plan.h"
#include "src/plan/plan_print.h"

namespace sb {
namespace {

const Calibration& calibration() {
  static const Calibration c = load_calibration("");
  return c;
}

PlanPrediction predicted(const char* workload, const char* gpu) {
  PlanRequest r;
  r.workload = workload;
  r.gpu = gpu;
  return predict_plan(r, builtin_hardware_database(), calibration());
}

TEST(PlanPrint, TheReservePrintedIsTheOneUsed) {
  const PlanPrediction p = predicted("bert_base", "RTX 4090");
  const std::string text = prediction_text(p, calibration());
  EXPECT_NE(text.find("24 GiB - " + gib_text(kPlanDeviceReserveBytes) + " reserve"), std::string::npos) << text;
  EXPECT_EQ(text.find("2 GiB reserve"), std::string::npos) << text;
  EXPECT_EQ(p.capacity_bytes, (24ull << 30) - kPlanDeviceReserveBytes);
}

TEST(PlanPrint, ThreeSignificantFigures) {
  EXPECT_EQ(significant_text(1.2345), "1.23");
  EXPECT_EQ(significant_text(0.012345), "0.0123");
  EXPECT_EQ(significant_text(12.345), "12.3");
  EXPECT_EQ(significant_text(99.96), "100");
  EXPECT_EQ(significant_text(284467), "284000");
  EXPECT_EQ(significant_text(0), "0");
}

TEST(PlanPrint, TableThroughputKeepsThreeFiguresBelowAHundred) {
  const PlanPrediction p = predicted("pix2pixhd", "H200");
  ASSERT_LT(p.dp_units_per_s_per_gpu, 100);  // a few pairs/s: integers showed "1"
  std::vector<PlanTableCell> cells{{"pix2pixhd", "H200 SXM", true, "", p}};
  const std::string text = plan_tables_text({"pix2pixhd"}, {"H200 SXM"}, cells, 1, false);
  EXPECT_NE(text.find(significant_text(p.dp_units_per_s_per_gpu)), std::string::npos) << text;
  EXPECT_NE(significant_text(p.dp_units_per_s_per_gpu).find('.'), std::string::npos);
}

TEST(PlanPrint, EveryNotAvailableCellSaysWhy) {
  PlanTableCell missing{"mt_dnn", "RTX 2060", false, "mt_dnn does not fit on RTX 2060 even at batch 1", {}};
  const std::string text = plan_tables_text({"mt_dnn"}, {"RTX 2060"}, {missing}, 1, false);
  EXPECT_NE(text.find("n/a (1)"), std::string::npos) << text;
  EXPECT_NE(text.find("# n/a (1): mt_dnn does not fit on RTX 2060 even at batch 1"), std::string::npos) << text;
}

}  // namespace
}  // namespace sb
