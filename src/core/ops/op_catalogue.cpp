// The op catalogue (src/core/ops/op_catalogue.h): the registry's rows (src/core/ops/op_registry.h), each
// family's written beside its builders and rules in src/core/ops/<family>.cpp.
#include "src/core/ops/op_catalogue.h"

#include <algorithm>

#include "src/core/ops/op_registry.h"

namespace sb {

const std::vector<OpInfo>& op_catalogue() {
  static const std::vector<OpInfo> ops = [] {
    std::vector<OpInfo> all;
    for (const OpDef& op : op_registry()) all.push_back(OpInfo{op.name, op.family, op.gradient});
    return all;
  }();
  return ops;
}

const OpInfo* find_op_info(std::string_view name) {
  const std::vector<OpInfo>& ops = op_catalogue();
  auto it = std::find_if(ops.begin(), ops.end(), [&](const OpInfo& op) { return op.name == name; });
  return it == ops.end() ? nullptr : &*it;
}

const char* op_gradient_name(OpGradient gradient) {
  switch (gradient) {
    case OpGradient::kDifferentiable: return "differentiable";
    case OpGradient::kStopsGradient: return "stops gradient";
    case OpGradient::kNotDifferentiable: return "not differentiable";
  }
  return "?";
}

}  // namespace sb
