// MemoryOptions (the maxbatch and suite flags) resolved for one workload on this device.
#pragma once

#include <string>
#include <vector>

#include "scalebench/device.h"
#include "scalebench/max_batch.h"
#include "src/cli/command_line.h"

namespace sb {

// The workloads named (every registered one for "all" or none given); UsageError for an unknown name.
std::vector<std::string> chosen_workloads(const std::vector<std::string>& names);

// precision auto: bf16 on GPUs, fp32 on the CPU; optimizer reference: the workload's.
MaxBatchOptions max_batch_options(const MemoryOptions& options, const std::string& workload, const Device& device);

}  // namespace sb
