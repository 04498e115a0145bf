// The backward-rule lookup (src/core/ops/backward_rule.h): an op's OpDef row (src/core/ops/op_registry.h) first,
// then the rule tables of the families not yet moved into src/core/ops. Gradient nodes carry the same size
// attributes as the forward node, so executors never infer shapes.
#include "src/core/ops/backward_rule.h"

#include <map>

#include "scalebench/error.h"
#include "src/core/ops/op_bindings.h"
#include "src/core/ops/op_registry.h"

namespace sb::detail {

bool detached_op(const std::string& op) {
  if (const OpDef* def = find_op_def(op)) return def->detached;
  return op == "anchor_grid" || op == "rpn_proposals" || op == "rpn_targets" || op == "roi_sample" ||
         op == "mask_targets";
}

// The tables of the families not yet moved into src/core/ops (the registry answers first). No op is in two
// tables (tests/unit/test_op_catalogue.cpp), so the order decides nothing today.
const std::vector<const BackwardRuleTable*>& backward_rule_tables() {
  static const std::vector<const BackwardRuleTable*> chain = {
      &san_backward_rules(),
      &pix2pixhd_backward_rules(),
      &detection_backward_rules(),
      &stylegan_backward_rules(),
  };
  return chain;
}

const BackwardRule* find_backward_rule(const std::string& op) {
  if (const OpDef* def = find_op_def(op)) return def->backward ? &def->backward : nullptr;
  for (const BackwardRuleTable* table : backward_rule_tables()) {
    auto it = table->find(op);
    if (it != table->end()) return &it->second;
  }
  return nullptr;
}

}  // namespace sb::detail

namespace sb {

std::vector<std::string> backward_rule_ops() {
  std::vector<std::string> names;
  for (const OpDef& op : op_registry()) {
    if (op.backward) names.emplace_back(op.name);
  }
  for (const detail::BackwardRuleTable* table : detail::backward_rule_tables()) {
    for (const auto& entry : *table) names.push_back(entry.first);
  }
  return names;
}

bool has_backward_rule(const std::string& op) { return detail::find_backward_rule(op) != nullptr; }

}  // namespace sb
