// A device array for the GPU op tests: cudaMalloc'd, filled from / copied back to a host vector, and poisoned
// with 0xFF bytes (a NaN in every float, -1 in every integer) before a kernel writes it (STYLE.md rule 4).
// Transfers are synchronous cudaMemcpy, so call cudaStreamSynchronize on the kernel's stream first.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "src/cuda/cuda_check.h"

namespace sb::test {

template <typename T>
class CudaArray {
 public:
  explicit CudaArray(size_t count) : count_(count) {
    if (count_ > 0) SB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
  }
  explicit CudaArray(const std::vector<T>& host) : CudaArray(host.size()) { upload(host); }
  ~CudaArray() {
    if (data_ != nullptr) cudaFree(data_);
  }
  CudaArray(const CudaArray&) = delete;
  CudaArray& operator=(const CudaArray&) = delete;

  T* get() const { return data_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

  void upload(const std::vector<T>& host) {
    SB_CHECK(host.size() == count_, "CudaArray::upload: size mismatch");
    if (count_ > 0) SB_CUDA_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  void poison() {
    if (count_ > 0) SB_CUDA_CHECK(cudaMemset(data_, 0xFF, bytes()));
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    if (count_ > 0) SB_CUDA_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  size_t count_ = 0;
  T* data_ = nullptr;
};

// A stream for one test, destroyed with it.
class TestStream {
 public:
  TestStream() { SB_CUDA_CHECK(cudaStreamCreate(&stream_)); }
  ~TestStream() { cudaStreamDestroy(stream_); }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  cudaStream_t get() const { return stream_; }
  // Waits for the stream's work and surfaces any asynchronous kernel fault.
  void sync() const {
    SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    SB_CUDA_CHECK(cudaGetLastError());
  }

 private:
  cudaStream_t stream_ = nullptr;
};

inline std::vector<double> to_double(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

}  // namespace sb::test
