// SB_HOST_DEVICE marks inline functions that host code and CUDA kernels share (the Philox generator, the
// loss-scale update rule, the collective check patterns): __host__ __device__ under nvcc, nothing for the host compiler.
#pragma once

#if defined(__CUDACC__)
#define SB_HOST_DEVICE __host__ __device__
#else
#define SB_HOST_DEVICE
#endif
