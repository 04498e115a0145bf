// StyleGAN's loss ops on the CPU (src/cpu/gan_losses.h), sums in double.
#include "src/cpu/gan_losses.h"

#include <algorithm>
#include <cmath>

#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {

float softplus_loss_forward(const float* scores, int64_t n, float sign) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double z = double(sign) * scores[i];
    sum += std::max(z, 0.0) + std::log1p(std::exp(-std::fabs(z)));
  }
  return static_cast<float>(sum / double(n));
}

void softplus_loss_backward(const float* scores, float* dscores, int64_t n, float sign, float weight) {
  for (int64_t i = 0; i < n; ++i) {
    const double z = double(sign) * scores[i];
    const double sigmoid = 1.0 / (1.0 + std::exp(-z));
    dscores[i] = static_cast<float>(double(weight) * sign * sigmoid / double(n));
  }
}

float squared_norm_loss_forward(const float* x, int64_t elements, int64_t batch, float scale) {
  double sum = 0;
  for (int64_t i = 0; i < elements; ++i) sum += double(x[i]) * x[i];
  return static_cast<float>(double(scale) * sum / double(batch));
}

void squared_norm_loss_backward(const float* x, float* dx, int64_t elements, int64_t batch, float scale,
                                float weight) {
  const double factor = 2.0 * double(weight) * scale / double(batch);
  for (int64_t i = 0; i < elements; ++i) dx[i] = static_cast<float>(factor * x[i]);
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_gan_losses_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"softplus_loss",
       [](CpuExecutor& e, const Node& n) {
         *e.f32(n.outputs[0]) =
             cpu::softplus_loss_forward(e.f32(n.inputs[0]), size_attr(n, "n"), float_attr(n, "sign"));
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
  });
}

}  // namespace sb::detail
