// CPU reference weight normalisation (src/cpu/weight_norm.h): one row at a time, double sums.
#include "src/cpu/weight_norm.h"

#include <cmath>
#include <string>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

void check_sizes(const char* op, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 1) {
    throw UsageError(std::string(op) + ": invalid size " + std::to_string(rows) + " x " + std::to_string(cols));
  }
}

}  // namespace

void weight_norm_forward(const float* v, const float* g, float* w, float* norms, int64_t rows, int64_t cols) {
  check_sizes("weight_norm_forward", rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = v + r * cols;
    double squares = 0;
    for (int64_t c = 0; c < cols; ++c) squares += static_cast<double>(row[c]) * row[c];
    const double norm = std::sqrt(squares), factor = g[r] / norm;
    norms[r] = static_cast<float>(norm);
    for (int64_t c = 0; c < cols; ++c) w[r * cols + c] = static_cast<float>(factor * row[c]);
  }
}

void weight_norm_backward(const float* dw, const float* v, const float* g, const float* norms, float* dv,
                          float* dg, int64_t rows, int64_t cols) {
  check_sizes("weight_norm_backward", rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float* v_row = v + r * cols;
    const float* dw_row = dw + r * cols;
    double dot = 0;
    for (int64_t c = 0; c < cols; ++c) dot += static_cast<double>(dw_row[c]) * v_row[c];
    const double norm = norms[r], gradient_g = dot / norm, factor = g[r] / norm;
    dg[r] = static_cast<float>(gradient_g);
    for (int64_t c = 0; c < cols; ++c) {
      dv[r * cols + c] = static_cast<float>(factor * (dw_row[c] - v_row[c] * gradient_g / norm));
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

namespace {

void weight_norm_backward(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  cpu::weight_norm_backward(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(in[3]), e.f32(n.outputs[0]),
                            e.f32(n.outputs[1]), size_attr(n, "rows"), size_attr(n, "cols"));
}

}  // namespace

void bind_weight_norm_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"weight_norm",
       [](CpuExecutor& e, const Node& n) {
         cpu::weight_norm_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), e.f32(n.outputs[1]),
                                  size_attr(n, "rows"), size_attr(n, "cols"));
       }},
      {"weight_norm_backward", weight_norm_backward},
  });
}

}  // namespace sb::detail
