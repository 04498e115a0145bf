// CPU executor entries of the GAN ops added for pix2pixHD (src/engine/cpu_kernels_pix2pixhd.h): each node's
// tensors bound to the sb::cpu kernel with the sizes the graph builder stored. Workspace outputs are unused here.
#include "src/engine/cpu_kernels_pix2pixhd.h"

#include <map>

#include "src/cpu/bias.h"
#include "src/cpu/conv_transpose2d.h"
#include "src/cpu/instance_norm.h"
#include "src/cpu/pixel_losses.h"
#include "src/cpu/reflection_pad.h"
#include "src/core/ops/conv2d.h"

namespace sb::detail {
namespace {

int64_t size_attr(const Node& node, const char* name) { return static_cast<int64_t>(node.attributes.at(name)); }
float float_attr(const Node& node, const char* name) { return static_cast<float>(node.attributes.at(name)); }

// The loss's gradient: 1, or its weight inside a sum of losses (GraphBuilder::add_losses).
float seed(const Node& node) {
  auto it = node.attributes.find("gradient_weight");
  return it == node.attributes.end() ? 1.0f : static_cast<float>(it->second);
}

cpu::ReflectionPadGeometry pad_geometry(const Node& n) {
  cpu::ReflectionPadGeometry g;
  g.batch = size_attr(n, "batch"), g.in_h = size_attr(n, "in_h"), g.in_w = size_attr(n, "in_w");
  g.channels = size_attr(n, "channels");
  g.top = size_attr(n, "top"), g.bottom = size_attr(n, "bottom");
  g.left = size_attr(n, "left"), g.right = size_attr(n, "right");
  return g;
}

void conv_transpose2d(CpuExecutor& e, const Node& n) {
  const Conv2dGeometry g = conv2d_geometry(n.attributes);
  cpu::conv_transpose2d_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), g);
  if (n.inputs.size() > 2) cpu::bias_add_forward(e.f32(n.outputs[0]), e.f32(n.inputs[2]), g.batch * g.in_h * g.in_w, g.in_c);
}

}  // namespace

const CpuKernelTable& pix2pixhd_cpu_kernels() {
  static const CpuKernelTable table = {
      {"stop_gradient", [](CpuExecutor&, const Node&) {}},     // views of their input (graph_builder_pix2pixhd.cpp)
      {"discard_gradient", [](CpuExecutor&, const Node&) {}},
      {"instance_norm",
       [](CpuExecutor& e, const Node& n) {
         cpu::instance_norm_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), e.f32(n.outputs[1]), e.f32(n.outputs[2]),
                                    size_attr(n, "batch"), size_attr(n, "pixels"), size_attr(n, "channels"),
                                    float_attr(n, "epsilon"));
       }},
      {"instance_norm_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::instance_norm_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.inputs[3]),
                                     e.f32(n.outputs[0]), size_attr(n, "batch"), size_attr(n, "pixels"),
                                     size_attr(n, "channels"));
       }},
      {"conv_transpose2d", conv_transpose2d},
      {"reflection_pad2d",
       [](CpuExecutor& e, const Node& n) {
         cpu::reflection_pad2d_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), pad_geometry(n));
       }},
      {"reflection_pad2d_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::reflection_pad2d_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), pad_geometry(n));
       }},
      {"mse_loss",
       [](CpuExecutor& e, const Node& n) {
         *e.f32(n.outputs[0]) = cpu::mse_loss_forward(e.f32(n.inputs[0]), size_attr(n, "n"), float_attr(n, "target"));
       }},
      {"mse_loss_backward",  // the loss starts the backward pass: dloss = 1 (times its weight in a sum)
       [](CpuExecutor& e, const Node& n) {
         cpu::mse_loss_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"), float_attr(n, "target"),
                                seed(n));
       }},
      {"l1_loss",
       [](CpuExecutor& e, const Node& n) {
         *e.f32(n.outputs[0]) = cpu::l1_loss_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), size_attr(n, "n"));
       }},
      {"l1_loss_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::l1_loss_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                               n.outputs.size() > 1 ? e.f32(n.outputs[1]) : nullptr, size_attr(n, "n"), seed(n));
       }},
  };
  return table;
}

}  // namespace sb::detail
