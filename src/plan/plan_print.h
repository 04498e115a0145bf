// Text of `scalebench plan`: one prediction, and the two tables of --table (largest batch per GPU; throughput
// per GPU), every figure labelled predicted (src/plan/plan_print.cpp).
#pragma once

#include <string>
#include <vector>

#include "scalebench/plan.h"

namespace sb {

std::string prediction_text(const PlanPrediction& p, const Calibration& calibration);

// `value` rounded to `digits` significant digits, in fixed notation: 1234 -> "1230", 1.234 -> "1.23".
std::string significant_text(double value, int digits = 3);

struct PlanTableCell {
  std::string workload, gpu;
  bool ok = false;
  std::string error;  // why there is no prediction (the error's message), printed under the tables
  PlanPrediction prediction;
};

// Table 1: largest batch per GPU (at the precision the throughput uses); table 2: units/s per GPU at the
// reference batch (or the largest that fits), data-parallel over the default path when gpus > 1. A cell without
// a prediction shows "n/a (k)"; note k under the tables gives its reason. `pytorch`: table 1 holds PyTorch's
// largest batch per measured mode (eager, compiled); table 2 stays scalebench's engine.
std::string plan_tables_text(const std::vector<std::string>& workloads, const std::vector<std::string>& gpus,
                             const std::vector<PlanTableCell>& cells, int gpu_count, bool markdown,
                             bool pytorch = false);

}  // namespace sb
