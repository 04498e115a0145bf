// What each op lookup table binds, asked by name or listed: the backward rules, the CPU kernel table and
// the CUDA kernel table. Each function is defined next to its table (so the answer is the table itself, never a
// copy) and none runs a kernel or touches a device, so a CPU-only test binary checks all three against the op
// catalogue (src/core/ops/op_catalogue.h, tests/unit/test_op_catalogue.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace sb {

// src/core/ops/op_registry.cpp: the ops whose OpDef row carries a backward rule, in registry order.
std::vector<std::string> backward_rule_ops();
bool has_backward_rule(const std::string& op);  // find_backward_rule answers for op

// src/cpu/cpu_bindings.cpp: the same for the CPU executor's one kernel table (every family's bindings), names
// sorted; the table refuses a name bound twice, so none is listed twice.
std::vector<std::string> cpu_kernel_ops();
bool has_cpu_kernel(const std::string& op);

// src/cuda/cuda_bindings.cpp: the names of the CUDA executor's kernel table. Building the table runs no CUDA
// call, so this works without a GPU. nullopt when scalebench is built without the CUDA toolkit
// (src/cpu/cuda_executor_without_cuda.cpp): there is no table.
std::optional<std::vector<std::string>> cuda_kernel_ops();

}  // namespace sb
