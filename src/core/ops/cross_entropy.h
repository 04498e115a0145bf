// The cross_entropy family: softmax_cross_entropy over (rows, classes) logits with int32 targets (label
// smoothing; rows whose target is ignore_index do not count), and its backward, which starts the backward pass.
// Kernels: src/cpu/cross_entropy.cpp, src/cuda/cross_entropy.cu.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

struct CrossEntropyParams {
  int64_t rows = 0, classes = 0;
  double label_smoothing = 0;
  int64_t ignore_index = -100;
};
NodeAttributes encode(const CrossEntropyParams& params);
CrossEntropyParams cross_entropy_params(const Node& node);  // of softmax_cross_entropy and its backward

}  // namespace sb
