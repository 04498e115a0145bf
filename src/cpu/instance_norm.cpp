// Instance normalisation, CPU reference (src/cpu/instance_norm.h): two passes per (sample, channel), the mean
// first and then the centred squares, so no E[x²] − E[x]² cancellation.
#include "src/cpu/instance_norm.h"

#include <cmath>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

void check_sizes(const char* op, int64_t batch, int64_t pixels, int64_t channels) {
  if (batch < 1 || pixels < 2 || channels < 1) {
    throw UsageError(std::string(op) + ": needs batch >= 1, pixels >= 2 and channels >= 1, got " +
                     std::to_string(batch) + ", " + std::to_string(pixels) + ", " + std::to_string(channels));
  }
}

}  // namespace

void instance_norm_forward(const float* x, float* y, float* mean, float* invstd, int64_t batch, int64_t pixels,
                           int64_t channels, float epsilon) {
  check_sizes("instance_norm_forward", batch, pixels, channels);
  for (int64_t n = 0; n < batch; ++n) {
    const float* xs = x + n * pixels * channels;
    float* ys = y + n * pixels * channels;
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0;
      for (int64_t p = 0; p < pixels; ++p) sum += xs[p * channels + c];
      const double m = sum / double(pixels);
      double squares = 0;
      for (int64_t p = 0; p < pixels; ++p) squares += (xs[p * channels + c] - m) * (xs[p * channels + c] - m);
      const double inv = 1.0 / std::sqrt(squares / double(pixels) + double(epsilon));
      for (int64_t p = 0; p < pixels; ++p) ys[p * channels + c] = static_cast<float>((xs[p * channels + c] - m) * inv);
      mean[n * channels + c] = static_cast<float>(m);
      invstd[n * channels + c] = static_cast<float>(inv);
    }
  }
}

void instance_norm_backward(const float* dy, const float* x, const float* mean, const float* invstd, float* dx,
                            int64_t batch, int64_t pixels, int64_t channels) {
  check_sizes("instance_norm_backward", batch, pixels, channels);
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t base = n * pixels * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const double m = mean[n * channels + c], inv = invstd[n * channels + c];
      double sum_dy = 0, sum_dy_xhat = 0;
      for (int64_t p = 0; p < pixels; ++p) {
        const int64_t i = base + p * channels + c;
        sum_dy += dy[i];
        sum_dy_xhat += dy[i] * (x[i] - m) * inv;
      }
      const double mean_dy = sum_dy / double(pixels), mean_dy_xhat = sum_dy_xhat / double(pixels);
      for (int64_t p = 0; p < pixels; ++p) {
        const int64_t i = base + p * channels + c;
        dx[i] = static_cast<float>(inv * (dy[i] - mean_dy - (x[i] - m) * inv * mean_dy_xhat));
      }
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_instance_norm_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
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
  });
}

}  // namespace sb::detail
