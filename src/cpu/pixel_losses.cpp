// Mean squared and mean absolute losses, CPU reference (src/cpu/pixel_losses.h).
#include "src/cpu/pixel_losses.h"

#include <cmath>
#include <string>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

void check_count(const char* op, int64_t n) {
  if (n < 1) throw UsageError(std::string(op) + ": needs at least one element, got " + std::to_string(n));
}

}  // namespace

float mse_loss_forward(const float* x, int64_t n, float target) {
  check_count("mse_loss", n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += (double(x[i]) - target) * (double(x[i]) - target);
  return static_cast<float>(sum / double(n));
}

void mse_loss_backward(const float* x, float* dx, int64_t n, float target, float seed) {
  check_count("mse_loss_backward", n);
  const double factor = 2.0 * seed / double(n);
  for (int64_t i = 0; i < n; ++i) dx[i] = static_cast<float>(factor * (double(x[i]) - target));
}

float l1_loss_forward(const float* a, const float* b, int64_t n) {
  check_count("l1_loss", n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::fabs(double(a[i]) - b[i]);
  return static_cast<float>(sum / double(n));
}

void l1_loss_backward(const float* a, const float* b, float* da, float* db, int64_t n, float seed) {
  check_count("l1_loss_backward", n);
  const float step = static_cast<float>(double(seed) / double(n));
  for (int64_t i = 0; i < n; ++i) {
    const float g = a[i] > b[i] ? step : a[i] < b[i] ? -step : 0.0f;
    da[i] = g;
    if (db != nullptr) db[i] = -g;
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_pixel_losses_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"mse_loss",
       [](CpuExecutor& e, const Node& n) {
         *e.f32(n.outputs[0]) = cpu::mse_loss_forward(e.f32(n.inputs[0]), size_attr(n, "n"), float_attr(n, "target"));
       }},
      {"mse_loss_backward",  // the loss starts the backward pass: dloss = 1 (times its weight in a sum)
       [](CpuExecutor& e, const Node& n) {
         cpu::mse_loss_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"), float_attr(n, "target"),
                                gradient_weight(n));
       }},
      {"l1_loss",
       [](CpuExecutor& e, const Node& n) {
         *e.f32(n.outputs[0]) = cpu::l1_loss_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), size_attr(n, "n"));
       }},
      {"l1_loss_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::l1_loss_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                               n.outputs.size() > 1 ? e.f32(n.outputs[1]) : nullptr, size_attr(n, "n"),
                               gradient_weight(n));
       }},
  });
}

}  // namespace sb::detail
