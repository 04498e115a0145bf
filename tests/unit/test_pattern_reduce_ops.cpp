// The verification data of every reduce op (include/scalebench/pattern.h): the expected value of sum, prod,
// max, min and avg equals an independent integer reduction of the ranks' inputs; it is exact in every
// collective type when the reduction is done in that type, step by step, in any order (left to right, right
// to left, as a tree; for avg also NCCL's multiply-by-1/n first at power-of-two rank counts); and a backend
// that applied the wrong op (or summed whatever it was asked) would be caught.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "scalebench/bandwidth.h"
#include "scalebench/pattern.h"
#include "src/cpu/element_access.h"

namespace sb {
namespace {

constexpr uint64_t kElements = 3000;
constexpr int kMaxRanks = 16;

// The value `v` becomes once stored in `type`.
double rounded(DType type, double v) {
  unsigned char bytes[sizeof(double)];
  cpu::store_element(bytes, 0, type, v);
  return cpu::load_element(bytes, 0, type);
}

double combine(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return a + b;
    case ReduceOp::kProd: return a * b;
    case ReduceOp::kMax: return a > b ? a : b;
    case ReduceOp::kMin: return a < b ? a : b;
  }
  return 0;
}

// Reduces values[lo, hi) as a balanced tree, rounding every partial result to `type`.
double tree(ReduceOp op, DType type, const std::vector<double>& values, size_t lo, size_t hi) {
  if (hi - lo == 1) return values[lo];
  const size_t mid = lo + (hi - lo) / 2;
  return rounded(type, combine(op, tree(op, type, values, lo, mid), tree(op, type, values, mid, hi)));
}

int amplitude_of(DType type, int nranks) { return pattern_amplitude(nranks, dtype_exact_integer_limit(type)); }

std::string where(ReduceOp op, DType type, int nranks, uint64_t element) {
  return std::string(reduce_op_name(op)) + " " + dtype_name(type) + " " + std::to_string(nranks) + " ranks element " +
         std::to_string(element);
}

// The formula, written once more in integers: sum, product, max, min, and the average as an exact quotient;
// no result but a sum is ever 0.
TEST(PatternReduceOps, ExpectedValueIsTheIntegerReductionOfTheInputs) {
  for (ReduceOp op : all_reduce_ops()) {
    for (int nranks = 1; nranks <= kMaxRanks; ++nranks) {
      const int amplitude = amplitude_of(DType::kBFloat16, nranks);
      for (uint64_t element = 0; element < kElements; ++element) {
        int64_t sum = 0, product = 1, largest = INT64_MIN, smallest = INT64_MAX;
        for (int r = 0; r < nranks; ++r) {
          const int64_t v = pattern_reduce_input(op, r, nranks, element, amplitude);
          sum += v;
          product *= v;
          largest = v > largest ? v : largest;
          smallest = v < smallest ? v : smallest;
        }
        int64_t want = 0;
        switch (op) {
          case ReduceOp::kSum: want = sum; break;
          case ReduceOp::kProd: want = product; break;
          case ReduceOp::kMax: want = largest; break;
          case ReduceOp::kMin: want = smallest; break;
          case ReduceOp::kAvg:
            ASSERT_EQ(sum % nranks, 0) << where(op, DType::kBFloat16, nranks, element) << ": sum " << sum;
            want = sum / nranks;
            EXPECT_EQ(want, pattern_avg_center(element, amplitude)) << where(op, DType::kBFloat16, nranks, element);
            break;
        }
        ASSERT_EQ(pattern_reduced_value(op, nranks, element, amplitude), static_cast<double>(want))
            << where(op, DType::kBFloat16, nranks, element);
        // Sums may cancel to 0 (the broadcast-style guard is the nonzero inputs); the others never do.
        if (op != ReduceOp::kSum) {
          ASSERT_NE(want, 0) << where(op, DType::kBFloat16, nranks, element) << ": a zeroed output would pass";
        }
      }
    }
  }
}

// Inputs within the amplitude (prod: +-1 and +-2, at most 15 doublings), and the results exact whatever order
// and grouping the library reduces in, rounding to the type at every step.
TEST(PatternReduceOps, ExactInEveryTypeInAnyOrder) {
  for (DType type : collective_dtypes()) {
    for (ReduceOp op : all_reduce_ops()) {
      for (int nranks = 1; nranks <= kMaxRanks; ++nranks) {
        const int amplitude = amplitude_of(type, nranks);
        for (uint64_t element = 0; element < kElements; ++element) {
          std::vector<double> inputs;
          int doublings = 0;
          for (int r = 0; r < nranks; ++r) {
            const int v = pattern_reduce_input(op, r, nranks, element, amplitude);
            if (op == ReduceOp::kProd) {
              ASSERT_TRUE(v == 1 || v == -1 || v == 2 || v == -2) << where(op, type, nranks, element) << ": " << v;
              doublings += v == 2 || v == -2;
            } else {
              ASSERT_LE(v < 0 ? -v : v, amplitude) << where(op, type, nranks, element);
            }
            ASSERT_EQ(rounded(type, v), v) << where(op, type, nranks, element);
            inputs.push_back(v);
          }
          ASSERT_LE(doublings, kPatternMaxProductDoublings) << where(op, type, nranks, element);
          const double want = pattern_reduced_value(op, nranks, element, amplitude);
          const double divisor = op == ReduceOp::kAvg ? nranks : 1;
          double left = inputs.front(), right = inputs.back();
          for (int r = 1; r < nranks; ++r) {
            left = rounded(type, combine(op, left, inputs[r]));
            right = rounded(type, combine(op, inputs[nranks - 1 - r], right));
          }
          const double grouped = tree(op, type, inputs, 0, inputs.size());
          // Sum, then divide (MPI here, NCCL for integers); integer division is exact as the sum is a multiple.
          ASSERT_EQ(rounded(type, left / divisor), want) << where(op, type, nranks, element) << " left to right";
          ASSERT_EQ(rounded(type, right / divisor), want) << where(op, type, nranks, element) << " right to left";
          ASSERT_EQ(rounded(type, grouped / divisor), want) << where(op, type, nranks, element) << " as a tree";
          const bool power_of_two = (nranks & (nranks - 1)) == 0;
          if (op == ReduceOp::kAvg && dtype_is_floating(type) && power_of_two) {
            // NCCL's float average: every input times 1/n in the type, then summed in the type.
            const double scale = rounded(type, 1.0 / nranks);
            double premultiplied = rounded(type, inputs.front() * scale);
            for (int r = 1; r < nranks; ++r) {
              premultiplied = rounded(type, premultiplied + rounded(type, inputs[r] * scale));
            }
            ASSERT_EQ(premultiplied, want) << where(op, type, nranks, element) << " premultiplied";
          }
        }
      }
    }
  }
}

// A backend that reduced with another op than it was asked would leave wrong elements: on 2 and more ranks
// each op's data tells it from every other op's reduction, sum included (a backend that always sums).
TEST(PatternReduceOps, EveryOtherOpGivesWrongElements) {
  for (int nranks : {2, 3, 4, 8}) {
    const int amplitude = amplitude_of(DType::kFloat32, nranks);
    for (ReduceOp asked : all_reduce_ops()) {
      for (ReduceOp applied : all_reduce_ops()) {
        if (applied == asked) continue;
        uint64_t differ = 0;
        for (uint64_t element = 0; element < kElements; ++element) {
          double got = pattern_reduce_input(asked, 0, nranks, element, amplitude);
          for (int r = 1; r < nranks; ++r) {
            got = combine(applied, got, pattern_reduce_input(asked, r, nranks, element, amplitude));
          }
          if (applied == ReduceOp::kAvg) got /= nranks;
          differ += got != pattern_reduced_value(asked, nranks, element, amplitude);
        }
        EXPECT_GT(differ, kElements / 10) << nranks << " ranks: " << reduce_op_name(asked) << " data reduced with "
                                          << reduce_op_name(applied) << " passes too often";
      }
    }
  }
}

// The check spec of a reducing collective carries its op through to the expected values of each rank's block.
TEST(PatternReduceOps, ReduceScatterExpectsItsOwnBlockOfTheReduction) {
  for (ReduceOp op : all_reduce_ops()) {
    for (int nranks : {2, 4}) {
      PatternSpec spec;
      spec.role = PatternRole::kExpected;
      spec.op = CollectiveOp::kReduceScatter;
      spec.reduce = op;
      spec.nranks = nranks;
      spec.block = 5;
      spec.amplitude = amplitude_of(DType::kFloat16, nranks);
      for (int rank = 0; rank < nranks; ++rank) {
        spec.rank = rank;
        for (uint64_t i = 0; i < spec.block; ++i) {
          EXPECT_EQ(pattern_value(spec, i),
                    pattern_reduced_value(op, nranks, static_cast<uint64_t>(rank) * spec.block + i, spec.amplitude))
              << reduce_op_name(op) << " rank " << rank << " element " << i;
        }
        PatternSpec input = spec;
        input.role = PatternRole::kInput;
        EXPECT_EQ(pattern_value(input, 3), pattern_reduce_input(op, rank, nranks, 3, spec.amplitude));
      }
    }
  }
}

// Exact comparison for every reduce op, but for float averages of a rank count that is not a power of two,
// where NCCL's 1/n is rounded.
TEST(PatternReduceOps, ToleranceIsZeroButForFloatAveragesOfOddRankCounts) {
  PatternSpec spec;
  spec.role = PatternRole::kExpected;
  spec.op = CollectiveOp::kAllReduce;
  for (DType type : collective_dtypes()) {
    for (ReduceOp op : all_reduce_ops()) {
      for (int nranks : {1, 2, 3, 4, 6, 8}) {
        spec.reduce = op;
        spec.nranks = nranks;
        const bool rounded_divide =
            op == ReduceOp::kAvg && dtype_is_floating(type) && (nranks & (nranks - 1)) != 0;
        EXPECT_EQ(pattern_tolerance(type, spec) > 0, rounded_divide)
            << reduce_op_name(op) << " " << dtype_name(type) << " " << nranks << " ranks";
      }
    }
  }
}

}  // namespace
}  // namespace sb
