// CPU executor entries of the convolutional-network ops (src/engine/cpu_kernels_cnn.h): each node's tensors
// bound to the sb::cpu kernel with the sizes the graph builder stored. Workspace outputs are unused here.
#include "src/engine/cpu_kernels_cnn.h"

#include <map>

#include "src/cpu/activations.h"
#include "src/cpu/batchnorm.h"
#include "src/cpu/bias.h"
#include "src/cpu/conv2d.h"
#include "src/cpu/pooling.h"

namespace sb::detail {
namespace {

int64_t size_attr(const Node& node, const char* name) { return static_cast<int64_t>(node.attributes.at(name)); }
float float_attr(const Node& node, const char* name) { return static_cast<float>(node.attributes.at(name)); }

void conv2d(CpuExecutor& e, const Node& n) {
  const Conv2dGeometry g = conv2d_geometry(n.attributes);
  cpu::conv2d_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), g);
  if (n.inputs.size() > 2) {
    cpu::bias_add_forward(e.f32(n.outputs[0]), e.f32(n.inputs[2]), g.batch * g.out_h * g.out_w, g.out_c);
  }
}

void conv2d_backward_data(CpuExecutor& e, const Node& n) {
  cpu::conv2d_backward_data(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), conv2d_geometry(n.attributes));
}

void conv2d_backward_filter(CpuExecutor& e, const Node& n) {
  cpu::conv2d_backward_filter(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                              conv2d_geometry(n.attributes));
}

cpu::BatchNormActivation bn_activation(const Node& node) {
  return static_cast<cpu::BatchNormActivation>(size_attr(node, "activation"));
}

void batchnorm(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  const auto& out = n.outputs;
  cpu::batchnorm_forward(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(out[0]), e.f32(out[1]), e.f32(out[2]),
                         e.f32(in[3]), e.f32(in[4]), size_attr(n, "rows"), size_attr(n, "channels"),
                         float_attr(n, "epsilon"), float_attr(n, "momentum"), bn_activation(n), float_attr(n, "slope"));
}

void batchnorm_backward(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  const auto& out = n.outputs;
  cpu::batchnorm_backward(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(in[3]), e.f32(in[4]), e.f32(in[5]),
                          e.f32(out[0]), e.f32(out[1]), e.f32(out[2]), size_attr(n, "rows"), size_attr(n, "channels"),
                          bn_activation(n), float_attr(n, "slope"));
}

}  // namespace

const CpuKernel* find_cnn_cpu_kernel(const std::string& op) {
  static const std::map<std::string, CpuKernel> table = {
      {"conv2d", conv2d},
      {"conv2d_backward_data", conv2d_backward_data},
      {"conv2d_backward_filter", conv2d_backward_filter},
      {"batchnorm", batchnorm},
      {"batchnorm_backward", batchnorm_backward},
      {"leaky_relu",
       [](CpuExecutor& e, const Node& n) {
         cpu::leaky_relu_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"), float_attr(n, "slope"));
       }},
      {"leaky_relu_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::leaky_relu_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"),
                                  float_attr(n, "slope"));
       }},
      {"sigmoid",
       [](CpuExecutor& e, const Node& n) {
         cpu::sigmoid_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"));
       }},
      {"sigmoid_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::sigmoid_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"));
       }},
      {"max_pool2d",
       [](CpuExecutor& e, const Node& n) {
         cpu::max_pool2d_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), e.i32(n.outputs[1]),
                                 conv2d_geometry(n.attributes));
       }},
      {"max_pool2d_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::max_pool2d_backward(e.f32(n.inputs[0]), e.i32(n.inputs[1]), e.f32(n.outputs[0]),
                                  conv2d_geometry(n.attributes));
       }},
      {"avg_pool2d",
       [](CpuExecutor& e, const Node& n) {
         cpu::avg_pool2d_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), conv2d_geometry(n.attributes),
                                 size_attr(n, "count_include_pad") != 0);
       }},
      {"avg_pool2d_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::avg_pool2d_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), conv2d_geometry(n.attributes),
                                  size_attr(n, "count_include_pad") != 0);
       }},
  };
  auto it = table.find(op);
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace sb::detail
