// The op catalogue: every op name the engine knows (Node::op), its family and how autodiff treats it, read from
// the op registry (src/core/ops/op_registry.h) — a name-only view the lookup tables are checked against
// (src/core/ops/op_bindings.h; tests/unit/test_op_catalogue.cpp): every op a GraphBuilder or a backward rule
// emits is here, and every op here has its backward rule (or is marked as having none), a CPU kernel and a CUDA
// kernel. docs/DESIGN.md "One home per op family" has the recipe for adding an op.
#pragma once

#include <string_view>
#include <vector>

namespace sb {

// What the backward-rule chain (src/engine/backward_rules.h) holds for an op.
enum class OpGradient {
  kDifferentiable,    // a rule that emits its inputs' gradients
  kStopsGradient,     // a rule that gives no gradient: detached outputs, or a rule that refuses (generation)
  kNotDifferentiable  // no rule: autodiff never differentiates it (backward-only ops, loss seeds, fills)
};

struct OpInfo {
  std::string_view name;    // Node::op
  std::string_view family;  // the stem of its kernel files src/cpu/<family>.cpp and src/cuda/<family>.cu;
                            // "memory": views, copies and fills done inline by the executors
  OpGradient gradient;
};

// Every op, grouped by how autodiff treats it (op_catalogue.cpp says why per group). Names are unique.
const std::vector<OpInfo>& op_catalogue();
const OpInfo* find_op_info(std::string_view name);  // nullptr for a name that is not catalogued
const char* op_gradient_name(OpGradient gradient);  // "differentiable", "stops gradient", "not differentiable"

}  // namespace sb
