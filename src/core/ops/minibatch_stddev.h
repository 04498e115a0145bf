// The minibatch-stddev family (minibatch_stddev, its backward and that backward's backward;
// src/core/ops/minibatch_stddev.cpp): StyleGAN's minibatch standard deviation layer (NVlabs/stylegan
// networks_stylegan.py minibatch_stddev_layer, group size 4, one new feature) in NHWC. Its geometry is the
// nodes' params: the graph builder encodes it, the kernels (src/cpu/minibatch_stddev.h, which derives the
// backward passes, and src/cuda/minibatch_stddev.h) read it.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

// The batch is `splits` contiguous parts of equal size P (one part per data-parallel rank in the --check's
// one-rank reference; 1 otherwise). Within a part, sample p = g·M + m (M = P / group) is member g of group m,
// as the reference's reshape to [group, M, ...] makes it. For each group and each k of the H·W·C positions:
// sigma_k = sqrt(var_g(x) + 1e-8) with the biased variance over the group's members; the group's statistic is
// the mean of sigma_k over k, appended to every member's pixels as channel C.
struct MinibatchStddevGeometry {
  int64_t batch = 0, height = 0, width = 0, channels = 0;
  int64_t group = 4;   // members per group, dividing batch / splits
  int64_t splits = 1;  // contiguous parts grouped separately
  int64_t part() const { return batch / splits; }
  int64_t groups_per_part() const { return part() / group; }
  int64_t positions() const { return height * width * channels; }  // K
};

// Throws UsageError on an inconsistent geometry (the graph builder's check, and the kernels' again).
void check_minibatch_stddev_geometry(const MinibatchStddevGeometry& g);

// The nodes' attributes: the map's extent (batch, height, width, channels), "group" and "splits".
NodeAttributes encode(const MinibatchStddevGeometry& g);
MinibatchStddevGeometry minibatch_stddev_geometry(const Node& node);  // of all three ops

}  // namespace sb
