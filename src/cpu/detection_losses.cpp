// CPU detection losses (src/cpu/detection_losses.h).
#include "src/cpu/detection_losses.h"

#include <cmath>
#include <cstring>

#include "src/cpu/cpu_bindings.h"
#include "src/core/ops/detection_losses.h"

namespace sb::cpu {
namespace {

// The index into x of target element e.
int64_t input_index(int64_t e, const int32_t* columns, const ClassSelection& s) {
  const int64_t per_group = s.rows * s.inner;
  const int64_t g = e / per_group, rest = e - g * per_group;
  const int64_t row = rest / s.inner, i = rest - row * s.inner;
  const int64_t column = columns != nullptr ? columns[g] : 0;
  return ((g * s.rows + row) * s.classes + column) * s.inner + i;
}

double bce(double x, double t) { return std::fmax(x, 0.0) - x * t + std::log1p(std::exp(-std::fabs(x))); }

double smooth_l1(double d, double beta) {
  const double a = std::fabs(d);
  return a < beta ? 0.5 * d * d / beta : a - 0.5 * beta;
}

}  // namespace

float bce_with_logits_forward(const float* x, const float* targets, const float* weights, const int32_t* columns,
                              const ClassSelection& s) {
  double sum = 0;
  for (int64_t e = 0; e < s.elements(); ++e) {
    if (weights[e] != 0.0f) sum += double(weights[e]) * bce(x[input_index(e, columns, s)], targets[e]);
  }
  return static_cast<float>(sum);
}

float smooth_l1_forward(const float* x, const float* targets, const float* weights, const int32_t* columns,
                        const ClassSelection& s, float beta) {
  double sum = 0;
  for (int64_t e = 0; e < s.elements(); ++e) {
    if (weights[e] != 0.0f) sum += double(weights[e]) * smooth_l1(double(x[input_index(e, columns, s)]) - targets[e], beta);
  }
  return static_cast<float>(sum);
}

void bce_with_logits_backward(const float* x, const float* targets, const float* weights, const int32_t* columns,
                              float* dx, const ClassSelection& s, float seed) {
  std::memset(dx, 0, sizeof(float) * static_cast<size_t>(s.input_elements()));
  for (int64_t e = 0; e < s.elements(); ++e) {
    const int64_t i = input_index(e, columns, s);
    const double sigmoid = 1.0 / (1.0 + std::exp(-double(x[i])));
    dx[i] = static_cast<float>(double(seed) * weights[e] * (sigmoid - targets[e]));
  }
}

void smooth_l1_backward(const float* x, const float* targets, const float* weights, const int32_t* columns, float* dx,
                        const ClassSelection& s, float beta, float seed) {
  std::memset(dx, 0, sizeof(float) * static_cast<size_t>(s.input_elements()));
  for (int64_t e = 0; e < s.elements(); ++e) {
    const int64_t i = input_index(e, columns, s);
    const double d = double(x[i]) - targets[e];
    const double slope = std::fabs(d) < beta ? d / beta : (d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0));
    dx[i] = static_cast<float>(double(seed) * weights[e] * slope);
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

namespace {

const int32_t* columns_of(CpuExecutor& e, const Node& n) { return n.inputs.size() > 3 ? e.i32(n.inputs[3]) : nullptr; }

}  // namespace

void bind_detection_losses_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"bce_with_logits_loss",
       [](CpuExecutor& e, const Node& n) {
         *e.f32(n.outputs[0]) = cpu::bce_with_logits_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]),
                                                             columns_of(e, n), class_selection(n.attributes));
       }},
      {"bce_with_logits_loss_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::bce_with_logits_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), columns_of(e, n),
                                       e.f32(n.outputs[0]), class_selection(n.attributes), gradient_weight(n));
       }},
      {"smooth_l1_loss",
       [](CpuExecutor& e, const Node& n) {
         *e.f32(n.outputs[0]) = cpu::smooth_l1_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]),
                                                       columns_of(e, n), class_selection(n.attributes),
                                                       static_cast<float>(n.attributes.at("beta")));
       }},
      {"smooth_l1_loss_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::smooth_l1_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), columns_of(e, n),
                                 e.f32(n.outputs[0]), class_selection(n.attributes),
                                 static_cast<float>(n.attributes.at("beta")), gradient_weight(n));
       }},
  });
}

}  // namespace sb::detail
