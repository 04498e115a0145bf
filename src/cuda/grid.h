// Grid sizes for the grid-stride kernels of src/cuda: enough blocks to fill every multiprocessor at full
// occupancy (2048 resident threads per SM on sm_90) and no more, the loops stride over the rest; never 0.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "src/cuda/cuda_check.h"

namespace sb::cuda::detail {

// The current device's SM count, cached per thread (the attribute query is cheap but not free).
inline int multiprocessor_count() {
  thread_local int cached_device = -1;
  thread_local int cached_count = 0;
  int device = 0;
  SB_CUDA_CHECK(cudaGetDevice(&device));
  if (device != cached_device) {
    SB_CUDA_CHECK(cudaDeviceGetAttribute(&cached_count, cudaDevAttrMultiProcessorCount, device));
    cached_device = device;
  }
  return cached_count;
}

// Blocks of `threads_per_block` for `items` work items (one per thread), capped at one full wave.
inline int grid_stride_blocks(int64_t items, int threads_per_block) {
  const int64_t needed = (items + threads_per_block - 1) / threads_per_block;
  const int64_t full_wave = int64_t{multiprocessor_count()} * (2048 / threads_per_block);
  return static_cast<int>(std::max<int64_t>(1, std::min(needed, full_wave)));
}

// True when p may be read and written as 16-byte vectors (float4).
inline bool aligned_16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace sb::cuda::detail
