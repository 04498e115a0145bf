// CPU executor entries of the convolutional-network ops (src/engine/cpu_kernels_cnn.h): each node's tensors
// bound to the sb::cpu kernel with the sizes the graph builder stored. Workspace outputs are unused here.
#include "src/engine/cpu_kernels_cnn.h"

#include <map>

#include "src/cpu/bias.h"
#include "src/cpu/conv2d.h"
#include "src/cpu/pooling.h"

namespace sb::detail {
namespace {

int64_t size_attr(const Node& node, const char* name) { return static_cast<int64_t>(node.attributes.at(name)); }

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

}  // namespace

const CpuKernel* find_cnn_cpu_kernel(const std::string& op) {
  static const std::map<std::string, CpuKernel> table = {
      {"conv2d", conv2d},
      {"conv2d_backward_data", conv2d_backward_data},
      {"conv2d_backward_filter", conv2d_backward_filter},
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
