// cuda::zero_byte_ranges (src/cuda/fill.h), the gradient blocks' gaps: exactly the listed ranges of a buffer of ones
// become zero, every other byte keeps its value, whatever the ranges' lengths (one word, a block's padding longer than
// a thread block's stride) and order. Skips without a GPU. Run: gpu_tests --gtest_filter='CudaZeroByteRanges*'.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "scalebench/device.h"
#include "src/cuda/fill.h"
#include "tests/support/cuda_array.h"

namespace sb::test {
namespace {

TEST(CudaZeroByteRanges, ZeroesTheRangesAndNothingElse) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  constexpr size_t kWords = 1 << 16;
  std::mt19937 random(5);
  std::vector<uint64_t> offsets;
  std::vector<uint32_t> bytes;
  std::vector<uint32_t> expected(kWords, 0x3f800000u);  // 1.0f everywhere
  // Ranges apart, in increasing order but for the last, which lies first: one word, a few hundred bytes, and 8 KiB
  // (longer than 256 threads' stride of words).
  for (size_t word = 64; word + 2048 < kWords; word += 3000) {
    const uint32_t words = word < 20000 ? 1 + static_cast<uint32_t>(random() % 100) : 2048;
    offsets.push_back(word * 4);
    bytes.push_back(words * 4);
    for (uint32_t i = 0; i < words; ++i) expected[word + i] = 0;
  }
  offsets.push_back(0);
  bytes.push_back(4);
  expected[0] = 0;
  CudaArray<uint32_t> buffer(std::vector<uint32_t>(kWords, 0x3f800000u));
  CudaArray<uint64_t> device_offsets(offsets);
  CudaArray<uint32_t> device_bytes(bytes);
  TestStream stream;
  cuda::zero_byte_ranges(buffer.get(), device_offsets.get(), device_bytes.get(), offsets.size(), stream.get());
  stream.sync();
  EXPECT_EQ(buffer.download(), expected);
  cuda::zero_byte_ranges(buffer.get(), device_offsets.get(), device_bytes.get(), 0, stream.get());  // nothing to do
  stream.sync();
  EXPECT_EQ(buffer.download(), expected);
}

}  // namespace
}  // namespace sb::test
