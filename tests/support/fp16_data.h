// fp16 test data for the GPU kernel tests (tests/gpu/test_cuda_fp16_*.cpp), as bf16_data.h does it for bf16:
// host tensors rounded to fp16 as bit patterns (uploaded) together with the fp32 values they hold (fed to the
// CPU reference, so both sides see identical inputs). Conversions go through include/scalebench/half_precision.h,
// bit-exact with the device's __float2half_rn.
#pragma once

#include <cstdint>
#include <vector>

#include "scalebench/half_precision.h"
#include "src/cuda/element.h"
#include "tests/support/bf16_data.h"

namespace sb::test {

using Fp16Tensor = HalfTensor;

inline std::vector<uint16_t> fp16_bits_of(const std::vector<float>& values) {
  return bits_of(values, float_to_fp16_bits);
}
inline std::vector<float> widen_fp16(const std::vector<uint16_t>& bits) {
  return widen_bits(bits, fp16_bits_to_float);
}

inline HalfTensor round_to_fp16(const std::vector<float>& values) {
  HalfTensor tensor;
  tensor.bits = fp16_bits_of(values);
  tensor.values = widen_fp16(tensor.bits);
  return tensor;
}

// A device buffer of uint16_t holds fp16 elements; the kernels take it as cuda::fp16. The 0xFFFF poison of
// CudaArray::poison is a NaN in fp16 too.
inline cuda::fp16* as_fp16(uint16_t* device_bits) { return reinterpret_cast<cuda::fp16*>(device_bits); }

}  // namespace sb::test
