// Backward rules of the gradient stops added for pix2pixHD (src/core/ops/backward_rule.h): stopped and discarded
// gradients. The GAN op families' rules live in src/core/ops/<family>.cpp.
#include <map>

#include "src/core/ops/backward_rule.h"

namespace sb::detail {
namespace {

// Nothing flows back (autodiff does not even count the input as used on this node's account).
std::vector<Contribution> no_gradient(BackwardContext&, const Node&, const std::vector<TensorId>&) {
  return {{kNoTensor, false}};
}

}  // namespace

const BackwardRuleTable& pix2pixhd_backward_rules() {
  static const BackwardRuleTable table = {
      {"stop_gradient", no_gradient},
      {"discard_gradient", no_gradient},
  };
  return table;
}

}  // namespace sb::detail
