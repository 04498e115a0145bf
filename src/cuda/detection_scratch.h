// Carving one scratch buffer into aligned arrays, for the detection kernels that need several (src/cuda/
// proposals.cu, detection_targets.cu): the same sequence of take() calls sizes the buffer (base null) and then
// hands out the pointers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sb::cuda::detail {

class ScratchCarver {
 public:
  explicit ScratchCarver(void* base = nullptr) : base_(static_cast<unsigned char*>(base)) {}
  template <typename T>
  T* take(size_t count) {
    offset_ = (offset_ + 255) / 256 * 256;
    T* p = base_ == nullptr ? nullptr : reinterpret_cast<T*>(base_ + offset_);
    offset_ += count * sizeof(T);
    return p;
  }
  void* take_bytes(size_t bytes) { return take<unsigned char>(bytes); }
  size_t bytes() const { return offset_ + 256; }

 private:
  unsigned char* base_;
  size_t offset_ = 0;
};

}  // namespace sb::cuda::detail
