// src/cli/max_batch_options.h
#include "src/cli/max_batch_options.h"

#include "scalebench/error.h"

namespace sb {

std::vector<std::string> chosen_workloads(const std::vector<std::string>& names) {
  std::vector<std::string> chosen;
  const bool all = names.empty() || (names.size() == 1 && names[0] == "all");
  if (all) {
    for (const Workload* workload : workload_registry()) chosen.push_back(workload->info().name);
    return chosen;
  }
  for (const std::string& name : names) {
    find_workload(name);  // a bad name is a usage error naming the valid ones
    chosen.push_back(name);
  }
  return chosen;
}

MaxBatchOptions max_batch_options(const MemoryOptions& options, const std::string& workload, const Device& device) {
  MaxBatchOptions result;
  result.workload = workload;
  result.scale = parse_workload_scale(options.scale);
  result.precision = options.precision == "auto"
                         ? (device.kind() == DeviceKind::kCuda ? Precision::kBf16 : Precision::kFp32)
                         : parse_precision(options.precision);
  result.optimizer = options.optimizer == "reference" ? find_workload(workload).reference_optimizer()
                                                      : default_optimizer(parse_optimizer_kind(options.optimizer));
  result.recompute = options.recompute;
  result.bucket_bytes = static_cast<uint64_t>(options.bucket_mb * (1 << 20));
  result.memory_bytes = static_cast<uint64_t>(options.memory_gib * (1ull << 30));
  result.verify = !options.no_verify;
  result.verify_steps = options.verify_steps;
  result.seed = options.seed;
  result.strategy = parse_strategy(options.strategy);
  return result;
}

}  // namespace sb
