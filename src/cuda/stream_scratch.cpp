// src/cuda/stream_scratch.h
#include "src/cuda/stream_scratch.h"

#include <map>
#include <mutex>
#include <utility>

#include "src/cuda/cuda_check.h"

namespace sb::cuda {
namespace {

std::mutex lent_mutex;
std::map<cudaStream_t, std::pair<void*, size_t>>& lent() {
  static auto* map = new std::map<cudaStream_t, std::pair<void*, size_t>>();  // intentionally leaked
  return *map;
}

}  // namespace

void lend_stream_scratch(cudaStream_t stream, void* scratch, size_t bytes) {
  std::lock_guard<std::mutex> lock(lent_mutex);
  lent()[stream] = {scratch, bytes};
}

void take_back_stream_scratch(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(lent_mutex);
  lent().erase(stream);
}

ScratchLease::ScratchLease(cudaStream_t stream, size_t bytes) : stream_(stream) {
  {
    std::lock_guard<std::mutex> lock(lent_mutex);
    auto found = lent().find(stream);
    if (found != lent().end() && found->second.second >= bytes) {
      data_ = found->second.first;
      return;
    }
  }
  SB_CUDA_CHECK(cudaMallocAsync(&data_, bytes, stream));
  allocated_ = true;
}

ScratchLease::~ScratchLease() {
  if (allocated_) cudaFreeAsync(data_, stream_);
}

}  // namespace sb::cuda
