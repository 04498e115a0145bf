// Backward rules of the greedy-decoding ops and the device copy (src/engine/backward_rules.h): none. Generation
// runs without gradients (XLM's generate is under torch.no_grad), its outputs are int32 ids, counters and
// caches, and a copy only switches a graph's data inputs. Autodiff never reaches these nodes from a loss; if
// it does, the graph differentiates through generation by mistake, and the rule says so.
#include <map>

#include "scalebench/error.h"
#include "src/core/ops/backward_rule.h"

namespace sb::detail {
namespace {

std::vector<Contribution> no_gradient(BackwardContext&, const Node& node, const std::vector<TensorId>&) {
  throw UsageError("op '" + node.op + "' has no gradient: a loss depends on a no-gradient generation or copy node");
}

}  // namespace

const BackwardRuleTable& decode_backward_rules() {
  static const BackwardRuleTable table = {
      {"argmax", no_gradient},        {"write_at_counter", no_gradient}, {"fill_from_counter", no_gradient},
      {"update_counter", no_gradient}, {"end_sentences", no_gradient},    {"copy", no_gradient},
  };
  return table;
}

}  // namespace sb::detail
