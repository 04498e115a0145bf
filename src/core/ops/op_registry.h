// The op registry: one OpDef row per op, written by its family's core file (src/core/ops/<family>.cpp) beside
// the family's GraphBuilder methods and backward rules, and gathered by op_registry.cpp from its one explicit
// list of families. Autodiff reads an op's rule and detachment here; tests/unit/test_op_catalogue.cpp checks
// that every op has its rule (or is marked without one), a CPU binding and a CUDA binding.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "scalebench/graph.h"
#include "src/core/ops/backward_rule.h"
#include "src/core/ops/op_catalogue.h"

namespace sb {

struct OpDef {
  std::string_view name;    // Node::op
  std::string_view family;  // its files: src/core/ops/<family>.cpp, src/cpu/<family>.cpp, src/cuda/<family>.cu
  OpGradient gradient;
  // Emits the inputs' gradients (kDifferentiable), or says why none flows (kStopsGradient: returns no
  // contribution, or refuses); empty for kNotDifferentiable.
  detail::BackwardRule backward;
  // The outputs are detached from the inputs, as torch's .detach(): they require no gradient, and autodiff
  // neither waits for gradients through the node nor counts it as a use of its inputs.
  bool detached = false;
  // The op computes a loss (a scalar the backward pass may start from: autodiff seeds it with the unit gradient).
  // A weighted sum of losses is the `add` node the builder marks with a loss_sum attribute (activations.cpp).
  bool loss = false;
};
using OpDefs = std::vector<OpDef>;
// Rows of loss ops write `false, kLoss` after their rule: not detached, a loss.
constexpr bool kLoss = true;

// Whether `node` computes a loss (OpDef::loss, or a sum of losses).
bool is_loss_node(const Node& node);
// The loss ops' names, for the error that the graph's loss is none of them.
std::string loss_op_names();

// Every family's rows, in op_registry.cpp's order. Names are unique (checked when the registry is built).
const OpDefs& op_registry();
const OpDef* find_op_def(std::string_view name);  // nullptr for an op no family defines

// The families' rows (src/core/ops/<family>.cpp), one function each; op_registry.cpp lists them.
const OpDefs& instance_norm_ops();
const OpDefs& gemm_ops();
const OpDefs& activations_ops();
const OpDefs& bias_ops();
const OpDefs& layout_ops();
const OpDefs& select_column_ops();
const OpDefs& dropout_ops();
const OpDefs& layernorm_ops();
const OpDefs& embedding_ops();
const OpDefs& embedding_rows_ops();
const OpDefs& softmax_ops();
const OpDefs& cross_entropy_ops();
const OpDefs& span_loss_ops();
const OpDefs& cast_ops();
const OpDefs& memory_ops();
const OpDefs& conv2d_ops();
const OpDefs& batchnorm_ops();
const OpDefs& pooling_ops();
const OpDefs& upsample_ops();
const OpDefs& concat_ops();
const OpDefs& drop_path_ops();
const OpDefs& yolo_loss_ops();
const OpDefs& glu_ops();
const OpDefs& weight_norm_ops();
const OpDefs& scale_rows_ops();
const OpDefs& decode_ops();
// core-b's families (issue 24): the GAN, detection, SAN and StyleGAN ops.
const OpDefs& conv_transpose2d_ops();
const OpDefs& reflection_pad_ops();
const OpDefs& pixel_losses_ops();
const OpDefs& blur_ops();
const OpDefs& minibatch_stddev_ops();
const OpDefs& gan_losses_ops();
const OpDefs& fused_conv_weight_ops();
const OpDefs& pixel_norm_ops();
const OpDefs& noise_injection_ops();
const OpDefs& style_modulation_ops();
const OpDefs& style_mix_ops();
const OpDefs& ema_ops();
const OpDefs& frozen_affine_ops();
const OpDefs& roi_align_ops();
const OpDefs& detection_losses_ops();
const OpDefs& proposals_ops();
const OpDefs& detection_targets_ops();
const OpDefs& san_ops();

}  // namespace sb
