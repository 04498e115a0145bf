// LayerNorm CPU reference (layernorm.h): plain loops, fp64 statistics, two-pass variance so that rows with a
// large mean (embedding sums before the first LN) do not lose the variance to cancellation.
#include "src/cpu/layernorm.h"

#include <cmath>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {

void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                       int64_t rows, int64_t cols, float epsilon) {
  SB_CHECK(rows >= 0 && cols > 0, "layernorm_forward: rows must be >= 0 and cols > 0");
  SB_CHECK(epsilon >= 0.0f, "layernorm_forward: epsilon must be >= 0");
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += xr[c];
    const double mu = sum / static_cast<double>(cols);
    double sq = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double d = xr[c] - mu;
      sq += d * d;
    }
    const double var = sq / static_cast<double>(cols);  // biased, as both reference models
    const double inv_std = 1.0 / std::sqrt(var + static_cast<double>(epsilon));
    for (int64_t c = 0; c < cols; ++c) {
      yr[c] = static_cast<float>((xr[c] - mu) * inv_std * gamma[c] + beta[c]);
    }
    mean[r] = static_cast<float>(mu);
    rstd[r] = static_cast<float>(inv_std);
  }
}

// With xhat = (x - mean) * rstd and g = dy * gamma, per row:
//   dx = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat)),
// and dgamma = sum_rows dy * xhat, dbeta = sum_rows dy. Only the saved fp32 mean/rstd are available here,
// as they will be on the device.
void layernorm_backward(const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd,
                        float* dx, float* dgamma, float* dbeta, int64_t rows, int64_t cols) {
  SB_CHECK(rows >= 0 && cols > 0, "layernorm_backward: rows must be >= 0 and cols > 0");
  std::vector<double> dgamma_sum(static_cast<size_t>(cols), 0.0);
  std::vector<double> dbeta_sum(static_cast<size_t>(cols), 0.0);
  std::vector<double> xhat(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float* dyr = dy + r * cols;
    const double mu = mean[r];
    const double inv_std = rstd[r];
    double g_sum = 0, gx_sum = 0;
    for (int64_t c = 0; c < cols; ++c) {
      xhat[c] = (xr[c] - mu) * inv_std;
      const double g = static_cast<double>(dyr[c]) * gamma[c];
      g_sum += g;
      gx_sum += g * xhat[c];
      dgamma_sum[c] += static_cast<double>(dyr[c]) * xhat[c];
      dbeta_sum[c] += dyr[c];
    }
    const double g_mean = g_sum / static_cast<double>(cols);
    const double gx_mean = gx_sum / static_cast<double>(cols);
    float* dxr = dx + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      const double g = static_cast<double>(dyr[c]) * gamma[c];
      dxr[c] = static_cast<float>(inv_std * (g - g_mean - xhat[c] * gx_mean));
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    dgamma[c] = static_cast<float>(dgamma_sum[c]);
    dbeta[c] = static_cast<float>(dbeta_sum[c]);
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_layernorm_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"layernorm",
       [](CpuExecutor& e, const Node& n) {
         cpu::layernorm_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.outputs[0]),
                                e.f32(n.outputs[1]), e.f32(n.outputs[2]), size_attr(n, "rows"), size_attr(n, "cols"),
                                float_attr(n, "epsilon"));
       }},
      {"layernorm_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::layernorm_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.inputs[3]),
                                 e.f32(n.inputs[4]), e.f32(n.outputs[0]), e.f32(n.outputs[1]), e.f32(n.outputs[2]),
                                 size_attr(n, "rows"), size_attr(n, "cols"));
       }},
  });
}

}  // namespace sb::detail
