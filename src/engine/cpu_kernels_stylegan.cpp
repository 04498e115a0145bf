// CPU executor entries of StyleGAN's ops (src/engine/cpu_kernels_stylegan.h): each node's tensors bound to the
// sb::cpu kernel with the sizes the graph builder stored.
#include "src/engine/cpu_kernels_stylegan.h"

#include <algorithm>
#include <map>
#include <vector>

#include "src/cpu/blur.h"
#include "src/cpu/ema.h"
#include "src/cpu/fused_conv_weight.h"
#include "src/cpu/gan_losses.h"
#include "src/cpu/minibatch_stddev.h"
#include "src/cpu/noise_injection.h"
#include "src/cpu/pixel_norm.h"
#include "src/cpu/style_mix.h"
#include "src/cpu/style_modulation.h"

namespace sb::detail {
namespace {

int64_t size_attr(const Node& node, const char* name) { return static_cast<int64_t>(node.attributes.at(name)); }
float float_attr(const Node& node, const char* name) { return static_cast<float>(node.attributes.at(name)); }
float gradient_weight(const Node& node) {
  auto it = node.attributes.find("gradient_weight");
  return it == node.attributes.end() ? 1.0f : static_cast<float>(it->second);
}

cpu::MinibatchStddevGeometry stddev_geometry(const Node& n) {
  cpu::MinibatchStddevGeometry g;
  g.batch = size_attr(n, "batch"), g.height = size_attr(n, "height"), g.width = size_attr(n, "width");
  g.channels = size_attr(n, "channels"), g.group = size_attr(n, "group"), g.splits = size_attr(n, "splits");
  return g;
}

void blur(CpuExecutor& e, const Node& n) {
  cpu::blur2d(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "batch"), size_attr(n, "height"),
              size_attr(n, "width"), size_attr(n, "channels"));
}

void style_mix(CpuExecutor& e, const Node& n) {
  std::vector<float*> layers;
  for (TensorId id : n.outputs) layers.push_back(e.f32(id));
  cpu::style_mix_forward(e.f32(n.inputs[0]), e.i32(n.inputs[1]), layers.data(), size_attr(n, "layers"),
                         size_attr(n, "batch"), size_attr(n, "dim"));
}

void style_mix_backward(CpuExecutor& e, const Node& n) {
  std::vector<const float*> layers;
  for (size_t l = 0; l + 1 < n.inputs.size(); ++l) layers.push_back(e.f32(n.inputs[l]));
  cpu::style_mix_backward(layers.data(), e.i32(n.inputs.back()), e.f32(n.outputs[0]), size_attr(n, "layers"),
                          size_attr(n, "batch"), size_attr(n, "dim"));
}

}  // namespace

const CpuKernelTable& stylegan_cpu_kernels() {
  static const CpuKernelTable table = {
      {"fill",
       [](CpuExecutor& e, const Node& n) {
         std::fill_n(e.f32(n.outputs[0]), size_attr(n, "n"), float_attr(n, "value"));
       }},
      {"blur2d", blur},
      {"minibatch_stddev",
       [](CpuExecutor& e, const Node& n) {
         cpu::minibatch_stddev_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), stddev_geometry(n));
       }},
      {"minibatch_stddev_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::minibatch_stddev_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                                        stddev_geometry(n));
       }},
      {"minibatch_stddev_backward_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::minibatch_stddev_backward_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]),
                                                 e.f32(n.outputs[0]), e.f32(n.outputs[1]), stddev_geometry(n));
       }},
      {"softplus_loss",
       [](CpuExecutor& e, const Node& n) {
         *e.f32(n.outputs[0]) = cpu::softplus_loss_forward(e.f32(n.inputs[0]), size_attr(n, "n"), float_attr(n, "sign"));
       }},
      {"softplus_loss_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::softplus_loss_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"), float_attr(n, "sign"),
                                     gradient_weight(n));
       }},
      {"squared_norm_loss",
       [](CpuExecutor& e, const Node& n) {
         *e.f32(n.outputs[0]) = cpu::squared_norm_loss_forward(e.f32(n.inputs[0]), size_attr(n, "n"),
                                                               size_attr(n, "batch"), float_attr(n, "scale"));
       }},
      {"squared_norm_loss_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::squared_norm_loss_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"),
                                         size_attr(n, "batch"), float_attr(n, "scale"), gradient_weight(n));
       }},
      {"fused_conv_weight",
       [](CpuExecutor& e, const Node& n) {
         cpu::fused_conv_weight_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "out_channels"),
                                        size_attr(n, "in_channels"), float_attr(n, "factor"));
       }},
      {"fused_conv_weight_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::fused_conv_weight_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "out_channels"),
                                         size_attr(n, "in_channels"), float_attr(n, "factor"));
       }},
      {"pixel_norm",
       [](CpuExecutor& e, const Node& n) {
         cpu::pixel_norm_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "rows"), size_attr(n, "cols"));
       }},
      {"pixel_norm_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::pixel_norm_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "rows"),
                                  size_attr(n, "cols"));
       }},
      {"noise_injection",
       [](CpuExecutor& e, const Node& n) {
         cpu::noise_injection_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.i32(n.inputs[2]), e.f32(n.outputs[0]),
                                      size_attr(n, "batch"), size_attr(n, "pixels"), size_attr(n, "channels"), e.seed(),
                                      e.dropout_offset(n));
       }},
      {"noise_injection_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::noise_injection_backward(e.f32(n.inputs[0]), e.i32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "batch"),
                                       size_attr(n, "pixels"), size_attr(n, "channels"), e.seed(),
                                       e.dropout_offset(n));
       }},
      {"style_modulation",
       [](CpuExecutor& e, const Node& n) {
         cpu::style_modulation_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                                       size_attr(n, "batch"), size_attr(n, "pixels"), size_attr(n, "channels"));
       }},
      {"style_modulation_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::style_modulation_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.outputs[0]),
                                        e.f32(n.outputs[1]), size_attr(n, "batch"), size_attr(n, "pixels"),
                                        size_attr(n, "channels"));
       }},
      {"style_mix", style_mix},
      {"style_mix_backward", style_mix_backward},
      {"ema_update",  // the first step of a phase (executor step 0) copies: Gs starts as a clone of G
       [](CpuExecutor& e, const Node& n) {
         cpu::ema_update(e.f32(n.inputs[0]), e.f32(n.inputs[1]), size_attr(n, "n"), float_attr(n, "beta"),
                         e.step() == 0);
       }},
  };
  return table;
}

}  // namespace sb::detail
