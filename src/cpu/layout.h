// Data-movement kernels of the engine's graph: broadcast add of a trailing block and the swap of the two
// middle dimensions that splits and merges attention heads. CPU reference; the CUDA kernels take the same
// arguments plus a stream.
#pragma once

#include <cstdint>

namespace sb::cpu {

// y[r * block + i] = x[r * block + i] + table[i] for r < repeats. Its table gradient is a column sum
// (bias_backward with rows = repeats, cols = block); its x gradient is dy itself.
void add_broadcast_forward(const float* x, const float* table, float* y, int64_t repeats, int64_t block);

// y (a, c, b, d) = x (a, b, c, d) with dimensions 1 and 2 exchanged; its own inverse with b and c swapped.
void swap_middle(const float* x, float* y, int64_t a, int64_t b, int64_t c, int64_t d);

}  // namespace sb::cpu
