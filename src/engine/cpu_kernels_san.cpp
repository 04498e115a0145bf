// CPU executor entries of the SAN ops (src/engine/cpu_kernels_san.h): each node's tensors bound to the
// sb::cpu kernel of src/cpu/san.h with the sizes the graph builder stored (src/core/ops/san.cpp).
#include "src/engine/cpu_kernels_san.h"

#include <map>

#include "src/cpu/random_uniform.h"
#include "src/cpu/san.h"

namespace sb::detail {
namespace {

int64_t size_attr(const Node& node, const char* name) { return static_cast<int64_t>(node.attributes.at(name)); }

void gru_cell(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  cpu::gru_cell_forward(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(in[3]), e.f32(in[4]), e.f32(in[5]),
                        e.f32(n.outputs[0]), e.f32(n.outputs[1]), size_attr(n, "batch"), size_attr(n, "input_size"),
                        size_attr(n, "hidden_size"));
}

void gru_cell_backward(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  const auto& out = n.outputs;
  cpu::gru_cell_backward(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(in[3]), e.f32(in[4]), e.f32(in[5]),
                         e.f32(out[0]), e.f32(out[1]), e.f32(out[2]), e.f32(out[3]), e.f32(out[4]), e.f32(out[5]),
                         size_attr(n, "batch"), size_attr(n, "input_size"), size_attr(n, "hidden_size"));
}

void self_attention(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  cpu::san_self_attention_forward(e.f32(in[0]), e.u8(in[1]), e.f32(in[2]), e.f32(in[3]), e.f32(n.outputs[0]),
                                  e.f32(n.outputs[1]), size_attr(n, "batch"), size_attr(n, "length"),
                                  size_attr(n, "hidden"));
}

void self_attention_backward(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  const auto& out = n.outputs;
  cpu::san_self_attention_backward(e.f32(in[0]), e.f32(in[1]), e.u8(in[2]), e.f32(in[3]), e.f32(in[4]),
                                   e.f32(out[0]), e.f32(out[1]), e.f32(out[2]), size_attr(n, "batch"),
                                   size_attr(n, "length"), size_attr(n, "hidden"));
}

void bilinear_attention(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  const auto& out = n.outputs;
  cpu::san_bilinear_attention_forward(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.u8(in[3]), e.f32(in[4]),
                                      e.f32(in[5]), e.f32(out[0]), e.f32(out[1]), e.f32(out[2]),
                                      size_attr(n, "batch"), size_attr(n, "length"), size_attr(n, "memory_hidden"),
                                      size_attr(n, "state_hidden"));
}

void bilinear_attention_backward(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  const auto& out = n.outputs;
  cpu::san_bilinear_attention_backward(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(in[3]), e.u8(in[4]),
                                       e.f32(in[5]), e.f32(in[6]), e.f32(in[7]), e.f32(out[0]), e.f32(out[1]),
                                       e.f32(out[2]), e.f32(out[3]), e.f32(out[4]), size_attr(n, "batch"),
                                       size_attr(n, "length"), size_attr(n, "memory_hidden"),
                                       size_attr(n, "state_hidden"));
}

void merge(CpuExecutor& e, const Node& n) {
  cpu::san_merge_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "batch"),
                         size_attr(n, "hidden"));
}

void merge_backward(CpuExecutor& e, const Node& n) {
  cpu::san_merge_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.outputs[0]),
                          e.f32(n.outputs[1]), size_attr(n, "batch"), size_attr(n, "hidden"));
}

// The uniforms are an output of the node (not a scratch buffer) so that tests and the CUDA executor see
// the same draws.
void turn_mask(CpuExecutor& e, const Node& n) {
  cpu::philox_uniform(e.f32(n.outputs[0]), size_attr(n, "n"), e.seed(), e.dropout_offset(n));
  cpu::san_turn_mask(e.f32(n.outputs[0]), e.f32(n.outputs[1]), size_attr(n, "batch"), size_attr(n, "turns"),
                     static_cast<float>(n.attributes.at("p")));
}

void turn_average(CpuExecutor& e, const Node& n) {
  cpu::san_turn_average_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), e.f32(n.outputs[1]),
                                size_attr(n, "turns"), size_attr(n, "batch"), size_attr(n, "classes"));
}

void turn_average_backward(CpuExecutor& e, const Node& n) {
  cpu::san_turn_average_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.outputs[0]),
                                 size_attr(n, "turns"), size_attr(n, "batch"), size_attr(n, "classes"));
}

}  // namespace

const CpuKernelTable& san_cpu_kernels() {
  static const CpuKernelTable table = {
      {"gru_cell", gru_cell},
      {"gru_cell_backward", gru_cell_backward},
      {"san_self_attention", self_attention},
      {"san_self_attention_backward", self_attention_backward},
      {"san_bilinear_attention", bilinear_attention},
      {"san_bilinear_attention_backward", bilinear_attention_backward},
      {"san_merge", merge},
      {"san_merge_backward", merge_backward},
      {"san_turn_mask", turn_mask},
      {"san_turn_average", turn_average},
      {"san_turn_average_backward", turn_average_backward},
  };
  return table;
}

}  // namespace sb::detail
