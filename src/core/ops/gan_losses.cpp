// The GAN-losses family: StyleGAN's non-saturating logistic losses (softplus_loss) and the R1 penalty's
// squared norm (squared_norm_loss), their backward rules and their ops' rows. Kernels: src/cpu/gan_losses.cpp,
// src/cuda/gan_losses.cu. Their nodes carry two or three scalars read directly, so no params struct.
#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"
// kGradNormScratchDoubles: squared_norm_loss's CUDA kernel is the optimizer's deterministic gradient-norm sum and
// takes its scratch. It still lives with the optimizer (a src/cpu header, not an op family of its own).
#include "src/core/ops/grad_norm.h"

namespace sb {

TensorId GraphBuilder::softplus_loss(TensorId scores, double sign) {
  scores = converted(scores, DType::kFloat32);
  const std::vector<int64_t> ss = shape(scores);
  if (sign != 1.0 && sign != -1.0) throw UsageError("softplus_loss: the sign must be 1 or -1");
  if (ss.empty() || graph_.tensor(scores).elements() != ss[0]) {
    throw UsageError("softplus_loss: one score per sample, got " + shape_text(ss));
  }
  const TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  graph_.add_node(Node{"softplus_loss", {scores}, {loss}, {{"n", double(ss[0])}, {"sign", sign}}, false});
  return loss;
}

TensorId GraphBuilder::squared_norm_loss(TensorId x, double scale) {
  x = converted(x, DType::kFloat32);
  if (!(scale > 0)) throw UsageError("squared_norm_loss: the scale must be > 0");
  const TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  // The CUDA kernel's deterministic sum of squares: one double per block of a fixed grid, and the total.
  const TensorId workspace = ops::workspace_tensor(graph_, next_name("squared_norm_workspace"),
                                                   int64_t(sizeof(double)) * kGradNormScratchDoubles);
  graph_.add_node(Node{"squared_norm_loss", {x}, {loss, workspace},
                       {{"n", double(graph_.tensor(x).elements())}, {"batch", double(shape(x)[0])}, {"scale", scale}},
                       false});
  return loss;
}

namespace {

// Losses start the backward pass with the unit gradient (times gradient_weight in a weighted sum).
detail::BackwardRule loss_rule(const char* op) {
  return [op](detail::BackwardContext& ctx, const Node& node, const std::vector<TensorId>&) {
    const TensorId dx = ctx.gradient_like(node.inputs[0]);
    ctx.emit(Node{op, {node.inputs[0]}, {dx}, node.attributes});
    return std::vector<detail::Contribution>{{dx, true}};
  };
}

}  // namespace

const OpDefs& gan_losses_ops() {
  static const OpDefs ops = {
      {"softplus_loss", "gan_losses", OpGradient::kDifferentiable, loss_rule("softplus_loss_backward"), false, kLoss},
      {"squared_norm_loss", "gan_losses", OpGradient::kDifferentiable, loss_rule("squared_norm_loss_backward"), false,
       kLoss},
      // Loss seeds: backward-only, never differentiated again.
      {"softplus_loss_backward", "gan_losses", OpGradient::kNotDifferentiable, nullptr},
      {"squared_norm_loss_backward", "gan_losses", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
