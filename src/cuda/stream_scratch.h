// Scratch memory a stream's owner lends to the kernels it enqueues (the executor lends one buffer sized for the
// largest kernel scratch of its graph), so that no kernel allocates in the middle of a training step, where an
// allocation failure could only be fatal. Kernels called without a lender (the kernel tests) fall back to
// stream-ordered allocation.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace sb::cuda {

void lend_stream_scratch(cudaStream_t stream, void* scratch, size_t bytes);
void take_back_stream_scratch(cudaStream_t stream);

// `bytes` of scratch for work on `stream`: the lent buffer when it is large enough, else cudaMallocAsync.
class ScratchLease {
 public:
  ScratchLease(cudaStream_t stream, size_t bytes);
  ~ScratchLease();  // frees on the stream what it allocated; lent memory stays with its owner
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  void* data() const { return data_; }

 private:
  cudaStream_t stream_;
  void* data_ = nullptr;
  bool allocated_ = false;
};

}  // namespace sb::cuda
