// The softmax family: masked_softmax over the last dimension of (batch, heads, q, k) attention scores, scaled,
// with optional per-sample key lengths and a causal mask, and its backward. Kernels: src/cpu/softmax.cpp,
// src/cuda/softmax.cu.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

struct MaskedSoftmaxParams {
  int64_t batch = 0, heads = 0, q = 0, k = 0;
  double scale = 1.0;
  bool causal = false;
};
NodeAttributes encode(const MaskedSoftmaxParams& params);
MaskedSoftmaxParams masked_softmax_params(const Node& node);  // of masked_softmax and masked_softmax_backward

}  // namespace sb
