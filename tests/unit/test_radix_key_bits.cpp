// The segment bits of the detection sorts' keys (src/cuda/radix_key_bits.h): too few would merge the last
// segments into one sort; the count is checked at the edges of each power of two.
#include <gtest/gtest.h>

#include "src/cuda/radix_key_bits.h"

namespace sb::cuda {
namespace {

TEST(RadixKeyBits, TellsEverySegmentApart) {
  EXPECT_EQ(bits_to_tell_apart(1), 0);
  EXPECT_EQ(bits_to_tell_apart(2), 1);
  EXPECT_EQ(bits_to_tell_apart(3), 2);
  EXPECT_EQ(bits_to_tell_apart(4), 2);
  EXPECT_EQ(bits_to_tell_apart(16), 4);
  EXPECT_EQ(bits_to_tell_apart(17), 5);
  EXPECT_EQ(bits_to_tell_apart(80), 7);  // maskrcnn's top-k: 16 images x 5 levels
  for (int64_t count = 1; count <= 4096; ++count) {
    const int bits = bits_to_tell_apart(count);
    EXPECT_LE(count - 1, (int64_t{1} << bits) - 1) << count;  // the last index fits
    if (bits > 0) EXPECT_GT(count - 1, (int64_t{1} << (bits - 1)) - 1) << count;  // and no bit is spare
  }
}

}  // namespace
}  // namespace sb::cuda
