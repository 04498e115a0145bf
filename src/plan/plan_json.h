// `scalebench plan --json FILE|-`: predictions as JSON (docs/RESULTS.md), every document marked "predicted": true.
#pragma once

#include <nlohmann/json.hpp>

#include "scalebench/plan.h"

namespace sb {

// One prediction: request, GPU, precision, batch, memory, step breakdown, throughput, path, notes.
nlohmann::json prediction_json(const PlanPrediction& p);

// The document around one or more predictions (`predictions[]`), with the calibration's provenance.
nlohmann::json plan_document(const nlohmann::json& predictions, const Calibration& calibration);

}  // namespace sb
