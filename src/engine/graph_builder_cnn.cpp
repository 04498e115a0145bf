// GraphBuilder's BatchNorm (with its running statistics and workspace), LeakyReLU and sigmoid
// (include/scalebench/graph_builder.h).
#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/engine/batchnorm_workspace.h"

namespace sb {

TensorId GraphBuilder::leaky_relu(TensorId x, double slope) {
  if (!(slope > 0)) throw UsageError("leaky_relu: the slope must be > 0 (the backward pass reads the sign off y)");
  x = in_compute_dtype(x);
  TensorId out = activation(next_name("leaky_relu"), graph_.tensor(x).shape);
  graph_.add_node(Node{"leaky_relu", {x}, {out}, {{"n", double(graph_.tensor(x).elements())}, {"slope", slope}}, false});
  return out;
}

TensorId GraphBuilder::sigmoid(TensorId x) { return elementwise("sigmoid", x); }

TensorId GraphBuilder::batchnorm(TensorId x, TensorId gamma, TensorId beta, const BatchNormOptions& options) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  const int64_t channels = xs.back();
  const int64_t rows = graph_.tensor(x).elements() / channels;
  const std::vector<int64_t> feature{channels};
  if (graph_.tensor(gamma).shape != feature || graph_.tensor(beta).shape != feature) {
    throw UsageError("batchnorm: gamma and beta must be (channels) = (" + std::to_string(channels) + ")");
  }
  if (graph_.tensor(gamma).dtype != DType::kFloat32 || graph_.tensor(beta).dtype != DType::kFloat32) {
    throw UsageError("batchnorm: gamma and beta must be fp32");
  }
  if (rows < 2) throw UsageError("batchnorm: training needs more than one value per channel");
  if (!(options.epsilon > 0) || options.momentum < 0 || options.momentum > 1) {
    throw UsageError("batchnorm: epsilon must be > 0 and momentum in [0, 1]");
  }
  if (options.activation == BatchNormOptions::Activation::kLeakyRelu && !(options.slope > 0)) {
    throw UsageError("batchnorm: the LeakyReLU slope must be > 0");
  }
  auto state = [&](const char* suffix, float initial) {
    TensorInfo info;
    info.name = graph_.tensor(gamma).name + suffix;
    info.shape = feature;
    info.role = TensorRole::kState;
    info.initial_value = initial;
    return graph_.add_tensor(info);
  };
  const TensorId running_mean = state(".running_mean", 0.0f), running_var = state(".running_var", 1.0f);
  const TensorId y = activation(next_name("batchnorm"), xs);
  const TensorId mean = activation(next_name("batchnorm_mean"), feature, DType::kFloat32);
  const TensorId invstd = activation(next_name("batchnorm_invstd"), feature, DType::kFloat32);
  TensorInfo scratch;
  scratch.name = next_name("batchnorm_workspace");
  scratch.shape = {batchnorm_workspace_bytes(rows, channels)};
  scratch.dtype = DType::kUInt8;
  scratch.role = TensorRole::kWorkspace;
  const TensorId workspace = graph_.add_tensor(scratch);
  graph_.add_node(Node{"batchnorm", {x, gamma, beta, running_mean, running_var}, {y, mean, invstd, workspace},
                       {{"rows", double(rows)},
                        {"channels", double(channels)},
                        {"epsilon", options.epsilon},
                        {"momentum", options.momentum},
                        {"activation", double(static_cast<int>(options.activation))},
                        {"slope", options.slope}},
                       false});
  return y;
}

}  // namespace sb
