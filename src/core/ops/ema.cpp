// The EMA family (ema_update): GraphBuilder::moving_average, StyleGAN's exponential moving average of G's weights
// (Gs), a state tensor updated after every step, and its op's row. Kernels: src/cpu/ema.cpp,
// src/cuda/stylegan_g_ops.cu.
#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_registry.h"

namespace sb {

TensorId GraphBuilder::moving_average(TensorId parameter, double beta) {
  const TensorInfo& info = graph_.tensor(parameter);
  if (info.role != TensorRole::kParameter || info.dtype != DType::kFloat32) {
    throw UsageError("moving_average: '" + info.name + "' is not an fp32 parameter");
  }
  if (!(beta >= 0 && beta < 1)) throw UsageError("moving_average: beta must be in [0, 1)");
  TensorInfo state;
  state.name = info.name + ".ema";
  state.shape = info.shape;
  state.role = TensorRole::kState;
  state.frozen_weight = true;  // model weights that are not trained: `list` counts them as frozen
  const TensorId average = graph_.add_tensor(state);
  graph_.add_node(Node{"ema_update", {parameter, average}, {},
                       {{"n", double(graph_.tensor(parameter).elements())}, {"beta", beta}}, false});
  return average;
}

const OpDefs& ema_ops() {
  // An update with no outputs: nothing downstream to differentiate.
  static const OpDefs ops = {
      {"ema_update", "ema", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
