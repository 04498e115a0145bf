// Concatenation along the last (channel) axis of tensors viewed as (rows, width_k), and its inverse split:
// NASNet's cell outputs, the ASPP branches, YOLOv3's routes. CPU reference (sb::cuda::concat_last / split_last
// take the same arguments plus a stream). Pure copies.
// Tests: tests/unit/test_cpu_upsample_concat.cpp (suite CpuConcat).
#pragma once

#include <cstdint>
#include <vector>

namespace sb::cpu {

// y (rows, Σ widths) = [parts[0] | parts[1] | ...], parts[k] (rows, widths[k]).
void concat_last(const std::vector<const float*>& parts, const std::vector<int64_t>& widths, float* y, int64_t rows);
// parts[k] (rows, widths[k]) = the k-th column block of x (rows, Σ widths).
void split_last(const float* x, const std::vector<float*>& parts, const std::vector<int64_t>& widths, int64_t rows);

}  // namespace sb::cpu
