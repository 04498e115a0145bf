// Minibatch standard deviation on the CPU (src/cpu/minibatch_stddev.h). One group at a time: its members'
// rows of H·W·C values, statistics per position k in double.
#include "src/cpu/minibatch_stddev.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

// Index of member g of group m in part s.
int64_t sample(const MinibatchStddevGeometry& g, int64_t s, int64_t m, int64_t member) {
  return s * g.part() + member * g.groups_per_part() + m;
}

// Per position k of one group: mean and sigma over the members.
void group_statistics(const float* x, const MinibatchStddevGeometry& g, int64_t s, int64_t m, std::vector<double>& mean,
                      std::vector<double>& sigma) {
  const int64_t K = g.positions();
  mean.assign(static_cast<size_t>(K), 0.0);
  sigma.assign(static_cast<size_t>(K), 0.0);
  for (int64_t member = 0; member < g.group; ++member) {
    const float* row = x + sample(g, s, m, member) * K;
    for (int64_t k = 0; k < K; ++k) mean[size_t(k)] += row[k];
  }
  for (double& v : mean) v /= double(g.group);
  for (int64_t member = 0; member < g.group; ++member) {
    const float* row = x + sample(g, s, m, member) * K;
    for (int64_t k = 0; k < K; ++k) {
      const double d = row[k] - mean[size_t(k)];
      sigma[size_t(k)] += d * d;
    }
  }
  for (double& v : sigma) v = std::sqrt(v / double(g.group) + kMinibatchStddevEpsilon);
}

// T: the statistic channel's upstream gradient summed over the group's members and pixels.
double statistic_upstream(const float* dy, const MinibatchStddevGeometry& g, int64_t s, int64_t m) {
  const int64_t pixels = g.height * g.width, C = g.channels;
  double total = 0;
  for (int64_t member = 0; member < g.group; ++member) {
    const float* rows = dy + sample(g, s, m, member) * pixels * (C + 1);
    for (int64_t p = 0; p < pixels; ++p) total += rows[p * (C + 1) + C];
  }
  return total;
}

}  // namespace

void minibatch_stddev_forward(const float* x, float* y, const MinibatchStddevGeometry& g) {
  check_minibatch_stddev_geometry(g);
  const int64_t pixels = g.height * g.width, C = g.channels, K = g.positions();
  std::vector<double> mean, sigma;
  for (int64_t s = 0; s < g.splits; ++s) {
    for (int64_t m = 0; m < g.groups_per_part(); ++m) {
      group_statistics(x, g, s, m, mean, sigma);
      double statistic = 0;
      for (double v : sigma) statistic += v;
      statistic /= double(K);
      for (int64_t member = 0; member < g.group; ++member) {
        const int64_t n = sample(g, s, m, member);
        for (int64_t p = 0; p < pixels; ++p) {
          const float* in = x + (n * pixels + p) * C;
          float* out = y + (n * pixels + p) * (C + 1);
          for (int64_t c = 0; c < C; ++c) out[c] = in[c];
          out[C] = static_cast<float>(statistic);
        }
      }
    }
  }
}

void minibatch_stddev_backward(const float* x, const float* dy, float* dx, const MinibatchStddevGeometry& g) {
  check_minibatch_stddev_geometry(g);
  const int64_t pixels = g.height * g.width, C = g.channels, K = g.positions();
  std::vector<double> mean, sigma;
  for (int64_t s = 0; s < g.splits; ++s) {
    for (int64_t m = 0; m < g.groups_per_part(); ++m) {
      group_statistics(x, g, s, m, mean, sigma);
      const double factor = statistic_upstream(dy, g, s, m) / double(K * g.group);
      for (int64_t member = 0; member < g.group; ++member) {
        const int64_t n = sample(g, s, m, member);
        for (int64_t p = 0; p < pixels; ++p) {
          for (int64_t c = 0; c < C; ++c) {
            const size_t k = size_t(p * C + c);
            const double d = x[n * K + int64_t(k)] - mean[k];
            dx[n * K + int64_t(k)] = static_cast<float>(dy[(n * pixels + p) * (C + 1) + c] + factor * d / sigma[k]);
          }
        }
      }
    }
  }
}

void minibatch_stddev_backward_backward(const float* x, const float* dy, const float* u, float* dx2, float* ddy,
                                        const MinibatchStddevGeometry& g) {
  check_minibatch_stddev_geometry(g);
  const int64_t pixels = g.height * g.width, C = g.channels, K = g.positions();
  const double G = double(g.group);
  std::vector<double> mean, sigma;
  std::vector<double> u_mean(static_cast<size_t>(K)), u_dot_d(static_cast<size_t>(K));
  for (int64_t s = 0; s < g.splits; ++s) {
    for (int64_t m = 0; m < g.groups_per_part(); ++m) {
      group_statistics(x, g, s, m, mean, sigma);
      const double factor = statistic_upstream(dy, g, s, m) / (double(K) * G);
      std::fill(u_mean.begin(), u_mean.end(), 0.0);
      std::fill(u_dot_d.begin(), u_dot_d.end(), 0.0);
      for (int64_t member = 0; member < g.group; ++member) {
        const int64_t n = sample(g, s, m, member);
        for (int64_t k = 0; k < K; ++k) {
          u_mean[size_t(k)] += u[n * K + k] / G;
          u_dot_d[size_t(k)] += double(u[n * K + k]) * (x[n * K + k] - mean[size_t(k)]);
        }
      }
      double r = 0;
      for (int64_t k = 0; k < K; ++k) r += u_dot_d[size_t(k)] / sigma[size_t(k)];
      r /= double(K) * G;
      for (int64_t member = 0; member < g.group; ++member) {
        const int64_t n = sample(g, s, m, member);
        for (int64_t p = 0; p < pixels; ++p) {
          for (int64_t c = 0; c < C; ++c) {
            const int64_t k = p * C + c;
            const double sg = sigma[size_t(k)], d = x[n * K + k] - mean[size_t(k)];
            dx2[n * K + k] = static_cast<float>(
                factor * ((u[n * K + k] - u_mean[size_t(k)]) / sg - d * u_dot_d[size_t(k)] / (G * sg * sg * sg)));
            ddy[(n * pixels + p) * (C + 1) + c] = u[n * K + k];
          }
          ddy[(n * pixels + p) * (C + 1) + C] = static_cast<float>(r);
        }
      }
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_minibatch_stddev_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"minibatch_stddev",
       [](CpuExecutor& e, const Node& n) {
         cpu::minibatch_stddev_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), minibatch_stddev_geometry(n));
       }},
      {"minibatch_stddev_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::minibatch_stddev_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                                        minibatch_stddev_geometry(n));
       }},
      {"minibatch_stddev_backward_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::minibatch_stddev_backward_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]),
                                                 e.f32(n.outputs[0]), e.f32(n.outputs[1]), minibatch_stddev_geometry(n));
       }},
  });
}

}  // namespace sb::detail
