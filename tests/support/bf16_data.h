// bf16 test data for the GPU kernel tests (tests/gpu/test_cuda_bf16_*.cpp): host tensors rounded to bf16 as
// bit patterns (uploaded to the device) together with the fp32 values they hold (fed to the CPU reference,
// so both sides see identical inputs), device arrays with poisoned margins, and a bit-for-bit comparison.
// Conversions go through include/scalebench/half_precision.h, bit-exact with the device's round to nearest
// even, so "the CPU result rounded to bf16" is computed on the host exactly as a kernel would round it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "scalebench/half_precision.h"
#include "src/cuda/element.h"

namespace sb::test {

// 0xFF bytes: a NaN in bf16, what CudaArray::poison writes; no finite or infinite value rounds to it.
constexpr uint16_t kBf16Poison = 0xFFFF;

// A host tensor of a 16-bit float type: its bit patterns (uploaded to the device) and the fp32 values they
// hold (fed to the CPU reference). bf16 and fp16 (fp16_data.h) differ only in the conversion pair.
struct HalfTensor {
  std::vector<uint16_t> bits;  // for the device
  std::vector<float> values;   // the same numbers in fp32, for the CPU reference
};
using Bf16Tensor = HalfTensor;

inline std::vector<uint16_t> bits_of(const std::vector<float>& values, uint16_t (*to_bits)(float)) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = to_bits(values[i]);
  return bits;
}

inline std::vector<float> widen_bits(const std::vector<uint16_t>& bits, float (*from_bits)(uint16_t)) {
  std::vector<float> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) values[i] = from_bits(bits[i]);
  return values;
}

inline std::vector<uint16_t> bf16_bits_of(const std::vector<float>& values) {
  return bits_of(values, float_to_bf16_bits);
}
inline std::vector<float> widen(const std::vector<uint16_t>& bits) { return widen_bits(bits, bf16_bits_to_float); }

inline HalfTensor round_to_bf16(const std::vector<float>& values) {
  HalfTensor tensor;
  tensor.bits = bf16_bits_of(values);
  tensor.values = widen(tensor.bits);
  return tensor;
}

// A device buffer of uint16_t holds bf16 elements; the kernels take it as cuda::bf16.
inline cuda::bf16* as_bf16(uint16_t* device_bits) { return reinterpret_cast<cuda::bf16*>(device_bits); }

// `bits` with `front` and `back` poison elements around it: upload it and pass the device pointer + front to
// run a kernel on a view off 16-byte alignment, then check with margins_poisoned that nothing outside was hit.
inline std::vector<uint16_t> with_margins(const std::vector<uint16_t>& bits, size_t front, size_t back) {
  std::vector<uint16_t> padded(front, kBf16Poison);
  padded.insert(padded.end(), bits.begin(), bits.end());
  padded.insert(padded.end(), back, kBf16Poison);
  return padded;
}

inline bool margins_poisoned(const std::vector<uint16_t>& all, size_t front, size_t back) {
  if (all.size() < front + back) return false;
  for (size_t i = 0; i < front; ++i) {
    if (all[i] != kBf16Poison) return false;
  }
  for (size_t i = all.size() - back; i < all.size(); ++i) {
    if (all[i] != kBf16Poison) return false;
  }
  return true;
}

inline std::vector<uint16_t> inside_margins(const std::vector<uint16_t>& all, size_t front, size_t back) {
  if (all.size() < front + back) return {};
  return std::vector<uint16_t>(all.begin() + static_cast<std::ptrdiff_t>(front),
                               all.end() - static_cast<std::ptrdiff_t>(back));
}

struct BitComparison {
  size_t mismatches = 0;
  std::string description;
  bool ok() const { return mismatches == 0; }
};

// Element by element, bit for bit; the description names the first mismatches with their values.
inline BitComparison compare_bits(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want) {
  BitComparison result;
  std::ostringstream pairs;
  pairs.precision(9);
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (result.mismatches < 4) {
      pairs << " [" << i << "] got 0x" << std::hex << got[i] << " (" << std::dec << bf16_bits_to_float(got[i])
            << ") want 0x" << std::hex << want[i] << " (" << std::dec << bf16_bits_to_float(want[i]) << ");";
    }
    ++result.mismatches;
  }
  if (got.size() != want.size()) ++result.mismatches;
  std::ostringstream text;
  text << result.mismatches << " of " << want.size() << " elements differ (got " << got.size() << ")"
       << pairs.str();
  result.description = text.str();
  return result;
}

}  // namespace sb::test
