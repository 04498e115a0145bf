// The op catalogue's table (src/core/ops/op_catalogue.h). Rows are grouped by how autodiff treats the op;
// each group says why, from today's backward rules (src/engine/backward_rules*.cpp). Within a group, rows
// follow their family. tests/unit/test_op_catalogue.cpp checks this list against every lookup table.
#include "src/core/ops/op_catalogue.h"

#include <algorithm>

#include "src/core/ops/op_registry.h"

namespace sb {
namespace {

constexpr OpGradient kDiff = OpGradient::kDifferentiable;
constexpr OpGradient kStop = OpGradient::kStopsGradient;
constexpr OpGradient kNone = OpGradient::kNotDifferentiable;

constexpr OpInfo kOps[] = {
    // ---- Forward ops with a backward rule that emits their inputs' gradients.
    {"gemm", "gemm", kDiff},
    {"add", "activations", kDiff},  // elementwise sums and scales live with the activations' kernels
    {"scale", "activations", kDiff},
    {"gelu", "activations", kDiff},
    {"relu", "activations", kDiff},
    {"tanh", "activations", kDiff},
    {"leaky_relu", "activations", kDiff},
    {"sigmoid", "activations", kDiff},
    {"add_broadcast", "layout", kDiff},
    {"swap_middle", "layout", kDiff},
    {"select_column", "select_column", kDiff},
    {"dropout", "dropout", kDiff},  // its backward is the same dropout again (no mask kept)
    {"layernorm", "layernorm", kDiff},
    {"embedding", "embedding", kDiff},
    {"masked_softmax", "softmax", kDiff},
    {"softmax_cross_entropy", "cross_entropy", kDiff},
    {"span_loss", "span_loss", kDiff},
    {"cast", "cast", kDiff},  // mixed precision's copies into the compute dtype; the gradient casts back
    {"view", "memory", kDiff},
    {"grad_multiply", "memory", kDiff},  // a view whose gradient is scaled (ConvS2S's GradMultiply)
    {"stack", "memory", kDiff},
    {"conv2d", "conv2d", kDiff},
    {"batchnorm", "batchnorm", kDiff},
    {"max_pool2d", "pooling", kDiff},
    {"avg_pool2d", "pooling", kDiff},
    {"upsample_nearest", "upsample", kDiff},
    {"upsample_bilinear", "upsample", kDiff},
    {"concat", "concat", kDiff},
    {"split", "concat", kDiff},
    {"drop_path", "drop_path", kDiff},
    {"yolo_loss", "yolo_loss", kDiff},
    {"glu", "glu", kDiff},
    {"weight_norm", "weight_norm", kDiff},
    {"scale_rows", "scale_rows", kDiff},  // its backward is scale_rows again

    // ---- Backward ops with a second-order rule. StyleGAN's R1 penalty differentiates the discriminator's input
    // gradient (append_input_gradient emits these as forward nodes), so every backward op on that path has a
    // rule of its own (backward_rules_second_order.cpp); add_n sums the gradients of a tensor used twice.
    {"add_n", "activations", kDiff},
    {"conv2d_backward_data", "conv2d", kDiff},
    {"leaky_relu_backward", "activations", kDiff},
    {"avg_pool2d_backward", "pooling", kDiff},

    // ---- A rule that passes no gradient on: the outputs are detached from the inputs, as torch's .detach().
    // stop_gradient and discard_gradient are views that cut the path (pix2pixHD: D(G(z).detach()), and G's loss
    // through D, whose weight gradients are dropped);
    // Mask R-CNN's anchors, proposals and target assignment are computed from boxes and scores as data.
    {"stop_gradient", "memory", kStop},
    {"discard_gradient", "memory", kStop},

    // ---- A rule that refuses (UsageError): greedy generation runs without gradients (XLM's generate is under
    // torch.no_grad) and writes int32 ids and counters; copy only switches a sub-step's data inputs. A loss that
    // reaches one of them differentiates through generation by mistake (backward_rules_decode.cpp).
    {"argmax", "decode", kStop},
    {"write_at_counter", "decode", kStop},
    {"fill_from_counter", "decode", kStop},
    {"update_counter", "decode", kStop},
    {"end_sentences", "decode", kStop},
    {"copy", "memory", kStop},

    // ---- No rule: backward ops emitted by a rule and never differentiated again (only StyleGAN's R1 path is
    // differentiated twice, and its ops are above). Reaching one is autodiff's "no backward rule" error.
    {"bias_backward", "bias", kNone},
    {"gelu_backward", "activations", kNone},
    {"relu_backward", "activations", kNone},
    {"tanh_backward", "activations", kNone},
    {"sigmoid_backward", "activations", kNone},
    {"select_column_backward", "select_column", kNone},
    {"layernorm_backward", "layernorm", kNone},
    {"embedding_backward", "embedding", kNone},
    {"masked_softmax_backward", "softmax", kNone},
    {"conv2d_backward_filter", "conv2d", kNone},
    {"batchnorm_backward", "batchnorm", kNone},
    {"max_pool2d_backward", "pooling", kNone},
    {"upsample_nearest_backward", "upsample", kNone},
    {"upsample_bilinear_backward", "upsample", kNone},
    {"glu_backward", "glu", kNone},
    {"weight_norm_backward", "weight_norm", kNone},

    // ---- No rule: a loss's backward op starts the backward pass (dloss = 1, times its weight and the loss
    // scale), and nothing differentiates a loss's gradient.
    {"softmax_cross_entropy_backward", "cross_entropy", kNone},
    {"span_loss_backward", "span_loss", kNone},
    {"yolo_loss_backward", "yolo_loss", kNone},

    // ---- No rule: outputs with no inputs to differentiate, or outside every loss. zero_fill (the gradient of a
    // declared-unused parameter, or a split part with no gradient) and unstack (stack's gradient) come from
    // autodiff itself; fill makes constants and the seed of an input gradient; san_turn_mask draws a random
    // mask the turn average treats as data; ema_update moves StyleGAN's Gs towards G after the step.
    {"zero_fill", "memory", kNone},
    {"unstack", "memory", kNone},
    {"fill", "memory", kNone},
};

}  // namespace

const std::vector<OpInfo>& op_catalogue() {
  // The rows not yet moved into their family's core file, then the registry's (src/core/ops/op_registry.h).
  static const std::vector<OpInfo> ops = [] {
    std::vector<OpInfo> all(std::begin(kOps), std::end(kOps));
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
