// Without the CUDA toolkit there is no CUDA executor: asking for one is a usage error.
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "src/core/ops/op_bindings.h"

namespace sb {

std::unique_ptr<Executor> make_cuda_executor(const Graph&, const MemoryPlan&, bool, const LossScaleConfig&,
                                             const ArenaMemory&) {
  throw UsageError("the cuda device needs scalebench built with the CUDA toolkit");
}

uint64_t cuda_outside_plan_bytes(const Graph&) { return 0; }

std::optional<std::vector<std::string>> cuda_kernel_ops() { return std::nullopt; }  // no table to list

}  // namespace sb
