// BatchNorm CPU reference (batchnorm.h): per-channel two-pass statistics in double, plain loops, one group of
// rows at a time.
#include "src/cpu/batchnorm.h"

#include <cmath>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

double activate(double z, BatchNormActivation activation, double slope) {
  if (activation == BatchNormActivation::kNone || z > 0) return z;
  return activation == BatchNormActivation::kRelu ? 0.0 : slope * z;
}

double derivative_from_output(float y, BatchNormActivation activation, float slope) {
  if (activation == BatchNormActivation::kNone || y > 0) return 1.0;
  return activation == BatchNormActivation::kRelu ? 0.0 : slope;
}

void check(int64_t rows, int64_t channels, int64_t groups, BatchNormActivation activation, float slope) {
  SB_CHECK(groups >= 1 && rows % groups == 0, "batchnorm: the groups must divide the rows");
  SB_CHECK(rows / groups >= 2 && channels > 0, "batchnorm: needs rows >= 2 per group and channels > 0");
  SB_CHECK(activation != BatchNormActivation::kLeakyRelu || slope > 0, "batchnorm: LeakyReLU slope must be > 0");
}

// One group of `rows` rows; running_mean and running_var null: left as they are.
void forward_group(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* invstd,
                   float* running_mean, float* running_var, int64_t rows, int64_t channels, float epsilon,
                   float momentum, BatchNormActivation activation, float slope) {
  std::vector<double> sum(size_t(channels), 0.0), sq(size_t(channels), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) sum[c] += x[r * channels + c];
  }
  std::vector<double> mu(static_cast<size_t>(channels)), inv(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) mu[c] = sum[c] / double(rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const double d = x[r * channels + c] - mu[c];
      sq[c] += d * d;
    }
  }
  for (int64_t c = 0; c < channels; ++c) {
    const double var = sq[c] / double(rows);
    inv[c] = 1.0 / std::sqrt(var + double(epsilon));
    mean[c] = float(mu[c]);
    invstd[c] = float(inv[c]);
    if (running_mean == nullptr) continue;
    running_mean[c] = float((1.0 - momentum) * running_mean[c] + double(momentum) * mu[c]);
    running_var[c] = float((1.0 - momentum) * running_var[c] + double(momentum) * sq[c] / double(rows - 1));
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const double z = (x[r * channels + c] - mu[c]) * inv[c] * gamma[c] + beta[c];
      y[r * channels + c] = float(activate(z, activation, slope));
    }
  }
}

// One group of `rows` rows; its dgamma and dbeta are overwritten.
void backward_group(const float* dy, const float* x, const float* y, const float* gamma, const float* mean,
                    const float* invstd, float* dx, float* dgamma, float* dbeta, int64_t rows, int64_t channels,
                    BatchNormActivation activation, float slope) {
  std::vector<double> sum_dz(size_t(channels), 0.0), sum_dz_xhat(size_t(channels), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t i = r * channels + c;
      const double dz = dy[i] * derivative_from_output(y[i], activation, slope);
      sum_dz[c] += dz;
      sum_dz_xhat[c] += dz * (x[i] - double(mean[c])) * invstd[c];
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t i = r * channels + c;
      const double dz = dy[i] * derivative_from_output(y[i], activation, slope);
      const double xhat = (x[i] - double(mean[c])) * invstd[c];
      dx[i] = float(double(gamma[c]) * invstd[c] *
                    (dz - sum_dz[c] / double(rows) - xhat * sum_dz_xhat[c] / double(rows)));
    }
  }
  for (int64_t c = 0; c < channels; ++c) {
    dgamma[c] = float(sum_dz_xhat[c]);
    dbeta[c] = float(sum_dz[c]);
  }
}

}  // namespace

void batchnorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* invstd,
                       float* running_mean, float* running_var, int64_t rows, int64_t channels, int64_t groups,
                       float epsilon, float momentum, BatchNormActivation activation, float slope) {
  check(rows, channels, groups, activation, slope);
  const int64_t n = rows / groups;
  for (int64_t g = 0; g < groups; ++g) {
    const bool first = g == 0;  // the running statistics follow group 0 only (batchnorm.h)
    forward_group(x + g * n * channels, gamma, beta, y + g * n * channels, mean + g * channels,
                  invstd + g * channels, first ? running_mean : nullptr, first ? running_var : nullptr, n, channels,
                  epsilon, momentum, activation, slope);
  }
}

void batchnorm_backward(const float* dy, const float* x, const float* y, const float* gamma, const float* mean,
                        const float* invstd, float* dx, float* dgamma, float* dbeta, int64_t rows, int64_t channels,
                        int64_t groups, BatchNormActivation activation, float slope) {
  check(rows, channels, groups, activation, slope);
  const int64_t n = rows / groups;
  if (groups == 1) {
    backward_group(dy, x, y, gamma, mean, invstd, dx, dgamma, dbeta, rows, channels, activation, slope);
    return;
  }
  std::vector<float> group_dgamma(static_cast<size_t>(channels)), group_dbeta(static_cast<size_t>(channels));
  std::vector<double> sum_dgamma(size_t(channels), 0.0), sum_dbeta(size_t(channels), 0.0);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t at = g * n * channels;
    backward_group(dy + at, x + at, y + at, gamma, mean + g * channels, invstd + g * channels, dx + at,
                   group_dgamma.data(), group_dbeta.data(), n, channels, activation, slope);
    for (int64_t c = 0; c < channels; ++c) sum_dgamma[c] += group_dgamma[c], sum_dbeta[c] += group_dbeta[c];
  }
  for (int64_t c = 0; c < channels; ++c) {
    dgamma[c] = float(sum_dgamma[c]);
    dbeta[c] = float(sum_dbeta[c]);
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

namespace {

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

}  // namespace

void bind_batchnorm_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"batchnorm", batchnorm},
      {"batchnorm_backward", batchnorm_backward},
  });
}

}  // namespace sb::detail
