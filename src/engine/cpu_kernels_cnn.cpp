// CPU executor entries of the convolutional-network ops (src/engine/cpu_kernels_cnn.h): each node's tensors
// bound to the sb::cpu kernel with the sizes the graph builder stored. Workspace outputs are unused here.
#include "src/engine/cpu_kernels_cnn.h"

#include <map>
#include <string>
#include <vector>

#include "src/cpu/activations.h"
#include "src/cpu/batchnorm.h"
#include "src/cpu/bias.h"
#include "src/cpu/concat.h"
#include "src/cpu/conv2d.h"
#include "src/cpu/drop_path.h"
#include "src/cpu/pooling.h"
#include "src/cpu/upsample.h"
#include "src/cpu/yolo_loss.h"

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
                         size_attr(n, "groups"), float_attr(n, "epsilon"), float_attr(n, "momentum"), bn_activation(n),
                         float_attr(n, "slope"));
}

void batchnorm_backward(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  const auto& out = n.outputs;
  cpu::batchnorm_backward(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(in[3]), e.f32(in[4]), e.f32(in[5]),
                          e.f32(out[0]), e.f32(out[1]), e.f32(out[2]), size_attr(n, "rows"), size_attr(n, "channels"),
                          size_attr(n, "groups"), bn_activation(n), float_attr(n, "slope"));
}

cpu::ResizeGeometry resize_geometry(const Node& n) {
  return cpu::ResizeGeometry{size_attr(n, "batch"), size_attr(n, "in_h"),  size_attr(n, "in_w"),
                             size_attr(n, "channels"), size_attr(n, "out_h"), size_attr(n, "out_w")};
}

std::vector<int64_t> widths(const Node& n) {
  std::vector<int64_t> w;
  for (int64_t k = 0; k < size_attr(n, "parts"); ++k) w.push_back(size_attr(n, ("w" + std::to_string(k)).c_str()));
  return w;
}

void concat(CpuExecutor& e, const Node& n) {
  std::vector<const float*> parts;
  for (TensorId id : n.inputs) parts.push_back(e.f32(id));
  cpu::concat_last(parts, widths(n), e.f32(n.outputs[0]), size_attr(n, "rows"));
}

void split(CpuExecutor& e, const Node& n) {
  std::vector<float*> parts;
  for (TensorId id : n.outputs) parts.push_back(e.f32(id));
  cpu::split_last(e.f32(n.inputs[0]), parts, widths(n), size_attr(n, "rows"));
}

cpu::YoloGeometry yolo_geometry(const Node& n) {
  cpu::YoloGeometry g;
  g.batch = size_attr(n, "batch"), g.classes = size_attr(n, "classes"), g.boxes = size_attr(n, "boxes");
  g.grid[0] = size_attr(n, "g0"), g.grid[1] = size_attr(n, "g1"), g.grid[2] = size_attr(n, "g2");
  return g;
}

void yolo_loss(CpuExecutor& e, const Node& n) {
  const float* heads[3] = {e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2])};
  *e.f32(n.outputs[0]) = static_cast<float>(cpu::yolo_loss_forward(heads, e.f32(n.inputs[3]), yolo_geometry(n)));
}

void yolo_loss_backward(CpuExecutor& e, const Node& n) {  // the loss starts the backward pass: dloss = 1
  const float* heads[3] = {e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2])};
  float* const dheads[3] = {e.f32(n.outputs[0]), e.f32(n.outputs[1]), e.f32(n.outputs[2])};
  const auto weight = n.attributes.find("gradient_weight");  // inside a weighted sum of losses
  const float seed = (weight == n.attributes.end() ? 1.0f : static_cast<float>(weight->second));
  cpu::yolo_loss_backward(heads, e.f32(n.inputs[3]), dheads, yolo_geometry(n), seed * e.loss_weight(n.inputs[3]));
}

}  // namespace

const CpuKernelTable& cnn_cpu_kernels() {
  static const CpuKernelTable table = {
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
      {"upsample_nearest",
       [](CpuExecutor& e, const Node& n) {
         cpu::upsample_nearest_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), resize_geometry(n));
       }},
      {"upsample_nearest_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::upsample_nearest_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), resize_geometry(n));
       }},
      {"upsample_bilinear",
       [](CpuExecutor& e, const Node& n) {
         cpu::upsample_bilinear_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), resize_geometry(n),
                                        size_attr(n, "align_corners") != 0);
       }},
      {"upsample_bilinear_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::upsample_bilinear_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), resize_geometry(n),
                                         size_attr(n, "align_corners") != 0);
       }},
      {"concat", concat},
      {"split", split},
      {"drop_path",
       [](CpuExecutor& e, const Node& n) {
         cpu::drop_path_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"),
                                size_attr(n, "per_sample"), float_attr(n, "p"), e.seed(), e.dropout_offset(n));
       }},
      {"yolo_loss", yolo_loss},
      {"yolo_loss_backward", yolo_loss_backward},
  };
  return table;
}

}  // namespace sb::detail
