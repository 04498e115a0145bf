// CPU executor entries of the ConvS2S ops (src/engine/cpu_kernels_convs2s.h): each node's tensors bound to the
// sb::cpu kernel with the sizes the graph builder stored.
#include "src/engine/cpu_kernels_convs2s.h"

#include <map>

#include "src/cpu/glu.h"
#include "src/cpu/scale_rows.h"
#include "src/cpu/weight_norm.h"

namespace sb::detail {
namespace {

int64_t size_attr(const Node& node, const char* name) { return static_cast<int64_t>(node.attributes.at(name)); }

void weight_norm_backward(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  cpu::weight_norm_backward(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(in[3]), e.f32(n.outputs[0]),
                            e.f32(n.outputs[1]), size_attr(n, "rows"), size_attr(n, "cols"));
}

}  // namespace

const CpuKernelTable& convs2s_cpu_kernels() {
  static const CpuKernelTable table = {
      {"glu",
       [](CpuExecutor& e, const Node& n) {
         cpu::glu_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "rows"), size_attr(n, "cols"));
       }},
      {"glu_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::glu_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "rows"),
                           size_attr(n, "cols"));
       }},
      {"weight_norm",
       [](CpuExecutor& e, const Node& n) {
         cpu::weight_norm_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), e.f32(n.outputs[1]),
                                  size_attr(n, "rows"), size_attr(n, "cols"));
       }},
      {"weight_norm_backward", weight_norm_backward},
      {"grad_multiply", [](CpuExecutor&, const Node&) {}},  // a view of its input (GraphBuilder::grad_multiply)
      {"scale_rows",
       [](CpuExecutor& e, const Node& n) {
         cpu::scale_rows_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "rows"),
                                 size_attr(n, "cols"));
       }},
  };
  return table;
}

}  // namespace sb::detail
