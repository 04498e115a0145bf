// `scalebench suite`: one row per workload, what the guide's two tables are made of. The printers are in
// report.h; src/cli/suite_command.cpp runs the suite.
#pragma once

#include <string>

#include "scalebench/max_batch.h"
#include "scalebench/result.h"

namespace sb {

// schema_version of the suite's files (<workload>-<stamp>.json and suite.json; docs/RESULTS.md).
constexpr int kSuiteSchemaVersion = 1;

struct SuiteRow {
  std::string workload;
  bool max_batch_ran = false;
  MaxBatchResult max_batch;
  bool reference_ran = false, max_ran = false;  // the training runs at the reference and at the max batch
  TrainingReport reference, at_max;
  std::string error;  // the first failure of the row; the suite went on with the next workload
};

// The batch the max-batch run trains at: the verified one, else the predicted one; 0 when none.
int64_t suite_max_batch(const SuiteRow& row);

}  // namespace sb
