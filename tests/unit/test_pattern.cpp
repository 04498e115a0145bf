// The collective verification pattern (include/scalebench/pattern.h): inputs stay within the amplitude that
// keeps sums exact and are never 0, so even a one-element broadcast or gather expects a nonzero value.
#include <gtest/gtest.h>

#include "scalebench/pattern.h"

namespace sb {
namespace {

TEST(Pattern, InputsAreNonzeroAndWithinTheAmplitude) {
  for (int amplitude : {1, 2, 8}) {
    int seen_low = 0, seen_high = 0;
    for (int rank = 0; rank < 16; ++rank) {
      for (uint64_t element = 0; element < 2000; ++element) {
        const int v = pattern_input_value(rank, element, amplitude);
        ASSERT_NE(v, 0) << "rank " << rank << " element " << element << " amplitude " << amplitude;
        ASSERT_GE(v, -amplitude);
        ASSERT_LE(v, amplitude);
        seen_low += v == -amplitude;
        seen_high += v == amplitude;
      }
    }
    EXPECT_GT(seen_low, 0) << "amplitude " << amplitude;  // both ends are drawn
    EXPECT_GT(seen_high, 0) << "amplitude " << amplitude;
  }
}

TEST(Pattern, OneElementBroadcastFromAnyRootExpectsNonzero) {
  for (int nranks : {2, 4, 8, 16}) {
    for (int root = 0; root < nranks; ++root) {
      PatternSpec spec;
      spec.role = PatternRole::kExpected;
      spec.op = CollectiveOp::kBroadcast;
      spec.nranks = nranks;
      spec.root = root;
      spec.block = 1;
      EXPECT_NE(pattern_value(spec, 0), 0.0) << nranks << " ranks, root " << root;
    }
  }
}

}  // namespace
}  // namespace sb
