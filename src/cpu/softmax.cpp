// Masked attention softmax CPU reference (softmax.h): max-subtracted exponentials and row sums in fp64.
// A key is valid when k < key_length (and k <= q when causal); valid keys of a row are always a prefix
// [0, valid_keys), which both passes use instead of a mask tensor.
#include "src/cpu/softmax.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

void check_arguments(const char* op, int64_t batch, int64_t heads, int64_t q_len, int64_t k_len,
                     const int32_t* key_lengths) {
  SB_CHECK(batch >= 0 && heads >= 0 && q_len >= 0 && k_len >= 0,
           std::string(op) + ": batch, heads, q_len and k_len must be >= 0");
  if (key_lengths == nullptr) return;
  for (int64_t b = 0; b < batch; ++b) {
    SB_CHECK(key_lengths[b] >= 0 && key_lengths[b] <= k_len,
             std::string(op) + ": key_lengths[" + std::to_string(b) + "] = " + std::to_string(key_lengths[b]) +
                 " outside [0, k_len = " + std::to_string(k_len) + "]");
  }
}

// Number of unmasked keys (a prefix) in row q of sequence b.
int64_t valid_keys(int64_t b, int64_t q, int64_t k_len, const int32_t* key_lengths, bool causal) {
  int64_t valid = key_lengths != nullptr ? key_lengths[b] : k_len;
  if (causal) valid = std::min(valid, q + 1);
  return valid;
}

}  // namespace

void masked_softmax_forward(const float* scores, float* probs, int64_t batch, int64_t heads, int64_t q_len,
                            int64_t k_len, float scale, const int32_t* key_lengths, bool causal) {
  check_arguments("masked_softmax_forward", batch, heads, q_len, k_len, key_lengths);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t q = 0; q < q_len; ++q) {
        const int64_t row = ((b * heads + h) * q_len + q) * k_len;
        const float* s = scores + row;
        float* p = probs + row;
        const int64_t valid = valid_keys(b, q, k_len, key_lengths, causal);
        double max_logit = -INFINITY;
        for (int64_t k = 0; k < valid; ++k) max_logit = std::max(max_logit, static_cast<double>(scale) * s[k]);
        double sum = 0;
        for (int64_t k = 0; k < valid; ++k) sum += std::exp(static_cast<double>(scale) * s[k] - max_logit);
        for (int64_t k = 0; k < valid; ++k) {
          p[k] = static_cast<float>(std::exp(static_cast<double>(scale) * s[k] - max_logit) / sum);
        }
        for (int64_t k = valid; k < k_len; ++k) p[k] = 0.0f;  // also the whole row when valid == 0
      }
    }
  }
}

void masked_softmax_backward(const float* probs, const float* dprobs, float* dscores, int64_t batch,
                             int64_t heads, int64_t q_len, int64_t k_len, float scale, const int32_t* key_lengths,
                             bool causal) {
  check_arguments("masked_softmax_backward", batch, heads, q_len, k_len, key_lengths);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t q = 0; q < q_len; ++q) {
        const int64_t row = ((b * heads + h) * q_len + q) * k_len;
        const float* p = probs + row;
        const float* dp = dprobs + row;
        float* ds = dscores + row;
        const int64_t valid = valid_keys(b, q, k_len, key_lengths, causal);
        double dot = 0;
        for (int64_t k = 0; k < valid; ++k) dot += static_cast<double>(p[k]) * dp[k];
        for (int64_t k = 0; k < valid; ++k) {
          ds[k] = static_cast<float>(static_cast<double>(scale) * p[k] * (dp[k] - dot));
        }
        for (int64_t k = valid; k < k_len; ++k) ds[k] = 0.0f;
      }
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_softmax_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"masked_softmax",
       [](CpuExecutor& e, const Node& n) {
         cpu::masked_softmax_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "batch"),
                                     size_attr(n, "heads"), size_attr(n, "q"), size_attr(n, "k"),
                                     float_attr(n, "scale"), n.inputs.size() > 1 ? e.i32(n.inputs[1]) : nullptr,
                                     size_attr(n, "causal") != 0);
       }},
      {"masked_softmax_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::masked_softmax_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                                      size_attr(n, "batch"), size_attr(n, "heads"), size_attr(n, "q"),
                                      size_attr(n, "k"), float_attr(n, "scale"),
                                      n.inputs.size() > 2 ? e.i32(n.inputs[2]) : nullptr, size_attr(n, "causal") != 0);
       }},
  });
}

}  // namespace sb::detail
