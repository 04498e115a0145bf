// BatchNorm CPU reference (batchnorm.h): per-channel two-pass statistics in double, plain loops.
#include "src/cpu/batchnorm.h"

#include <cmath>
#include <vector>

#include "scalebench/error.h"

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

void check(int64_t rows, int64_t channels, BatchNormActivation activation, float slope) {
  SB_CHECK(rows >= 2 && channels > 0, "batchnorm: needs rows >= 2 and channels > 0");
  SB_CHECK(activation != BatchNormActivation::kLeakyRelu || slope > 0, "batchnorm: LeakyReLU slope must be > 0");
}

}  // namespace

void batchnorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* invstd,
                       float* running_mean, float* running_var, int64_t rows, int64_t channels, float epsilon,
                       float momentum, BatchNormActivation activation, float slope) {
  check(rows, channels, activation, slope);
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

void batchnorm_backward(const float* dy, const float* x, const float* y, const float* gamma, const float* mean,
                        const float* invstd, float* dx, float* dgamma, float* dbeta, int64_t rows, int64_t channels,
                        BatchNormActivation activation, float slope) {
  check(rows, channels, activation, slope);
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

}  // namespace sb::cpu
