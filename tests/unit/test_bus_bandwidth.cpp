// Names, bus-bandwidth factors (nccl-tests doc/PERFORMANCE.md) and the sizes a bandwidth sweep visits,
// including rounding to whole per-rank blocks for odd rank counts and 2-byte types.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "scalebench/bandwidth.h"
#include "scalebench/error.h"

namespace sb {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

BandwidthOptions sizes_options(uint64_t min_bytes, uint64_t max_bytes, double factor, DType type) {
  BandwidthOptions options;
  options.min_bytes = min_bytes;
  options.max_bytes = max_bytes;
  options.factor = factor;
  options.dtypes = {type};
  return options;
}

// The sizes of the options' one element type.
std::vector<uint64_t> sizes_of(const BandwidthOptions& options, CollectiveOp op, int nranks) {
  return sweep_sizes(options, op, options.dtypes.front(), nranks);
}

TEST(BusBandwidth, FactorsMatchNcclTests) {
  struct Case {
    CollectiveOp op;
    double n1, n2, n4, n8;
  };
  const Case cases[] = {
      {CollectiveOp::kAllReduce, 0.0, 1.0, 1.5, 1.75},      // 2(n-1)/n
      {CollectiveOp::kReduceScatter, 0.0, 0.5, 0.75, 0.875},  // (n-1)/n
      {CollectiveOp::kAllGather, 0.0, 0.5, 0.75, 0.875},
      {CollectiveOp::kAllToAll, 0.0, 0.5, 0.75, 0.875},
      {CollectiveOp::kBroadcast, 1.0, 1.0, 1.0, 1.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(collective_name(c.op));
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(c.op, 1), c.n1);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(c.op, 2), c.n2);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(c.op, 4), c.n4);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(c.op, 8), c.n8);
  }
  EXPECT_THROW(bus_bandwidth_factor(CollectiveOp::kAllReduce, 0), std::invalid_argument);
}

TEST(BusBandwidth, SweepOneMebibyteToTwoGibibytes) {
  std::vector<uint64_t> expected;
  for (uint64_t size = kMiB; size <= 2 * kGiB; size *= 2) expected.push_back(size);
  ASSERT_EQ(expected.size(), 12u);
  const BandwidthOptions options = sizes_options(kMiB, 2 * kGiB, 2, DType::kFloat32);
  for (CollectiveOp op : all_collectives()) {
    SCOPED_TRACE(collective_name(op));
    EXPECT_EQ(sizes_of(options, op, 2), expected);
    EXPECT_EQ(sizes_of(options, op, 8), expected);
  }
}

// Three ranks: the split collectives need multiples of 3 * 4 bytes; the others only whole elements.
TEST(BusBandwidth, SweepRoundsDownForOddRankCounts) {
  const BandwidthOptions options = sizes_options(1024, 8192, 2, DType::kFloat32);
  const std::vector<uint64_t> split = {1020, 2040, 4092, 8184};
  EXPECT_EQ(sizes_of(options, CollectiveOp::kReduceScatter, 3), split);
  EXPECT_EQ(sizes_of(options, CollectiveOp::kAllGather, 3), split);
  EXPECT_EQ(sizes_of(options, CollectiveOp::kAllToAll, 3), split);
  const std::vector<uint64_t> whole = {1024, 2048, 4096, 8192};
  EXPECT_EQ(sizes_of(options, CollectiveOp::kAllReduce, 3), whole);
  EXPECT_EQ(sizes_of(options, CollectiveOp::kBroadcast, 3), whole);
}

TEST(BusBandwidth, SweepDropsSizesThatRoundToZero) {
  const BandwidthOptions options = sizes_options(1, 64, 2, DType::kFloat32);
  // 1, 2, 4, 8 hold no whole 12-byte block; 16, 32, 64 round to 12, 24, 60.
  EXPECT_EQ(sizes_of(options, CollectiveOp::kAllGather, 3), (std::vector<uint64_t>{12, 24, 60}));
  EXPECT_EQ(sizes_of(options, CollectiveOp::kAllReduce, 1), (std::vector<uint64_t>{4, 8, 16, 32, 64}));
}

TEST(BusBandwidth, SweepDropsDuplicatesAfterRounding) {
  const BandwidthOptions options = sizes_options(10, 40, 1.1, DType::kFloat32);
  const std::vector<uint64_t> sizes = sizes_of(options, CollectiveOp::kAllReduce, 2);
  EXPECT_EQ(sizes, (std::vector<uint64_t>{8, 12, 16, 20, 24, 28, 32, 36}));
}

TEST(BusBandwidth, SweepUsesTwoByteGranularityForFp16) {
  const BandwidthOptions options = sizes_options(1001, 4004, 2, DType::kFloat16);
  EXPECT_EQ(sizes_of(options, CollectiveOp::kAllReduce, 4), (std::vector<uint64_t>{1000, 2002, 4004}));
  EXPECT_EQ(sizes_of(options, CollectiveOp::kAllGather, 4), (std::vector<uint64_t>{1000, 2000, 4000}));
}

TEST(BusBandwidth, SweepOfEqualMinAndMaxIsOneSize) {
  const BandwidthOptions options = sizes_options(4096, 4096, 2, DType::kBFloat16);
  EXPECT_EQ(sizes_of(options, CollectiveOp::kAllReduce, 2), (std::vector<uint64_t>{4096}));
}

TEST(BusBandwidth, SweepRejectsMinAboveMax) {
  const BandwidthOptions options = sizes_options(8192, 1024, 2, DType::kFloat32);
  try {
    sizes_of(options, CollectiveOp::kAllReduce, 2);
    FAIL() << "expected UsageError";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("8192"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("1024"), std::string::npos) << error.what();
  }
}

TEST(BusBandwidth, SweepRejectsFactorNotAboveOne) {
  for (double factor : {1.0, 0.5, 0.0, -2.0}) {
    EXPECT_THROW(sizes_of(sizes_options(1024, 8192, factor, DType::kFloat32), CollectiveOp::kAllReduce, 2),
                 UsageError)
        << factor;
  }
}

TEST(BusBandwidth, SweepRejectsUnresolvedMaximum) {
  EXPECT_THROW(sizes_of(sizes_options(1024, 0, 2, DType::kFloat32), CollectiveOp::kAllReduce, 2),
               std::invalid_argument);
}

TEST(BusBandwidth, CollectiveNamesRoundTripInOrder) {
  const std::vector<CollectiveOp> ops = all_collectives();
  const std::vector<std::string> names = {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "alltoall"};
  ASSERT_EQ(ops.size(), names.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(collective_name(ops[i]), names[i]);
    EXPECT_EQ(parse_collective(names[i]), ops[i]);
  }
}

TEST(BusBandwidth, ParseCollectiveAcceptsAliases) {
  EXPECT_EQ(parse_collective("allreduce"), CollectiveOp::kAllReduce);
  EXPECT_EQ(parse_collective("reducescatter"), CollectiveOp::kReduceScatter);
  EXPECT_EQ(parse_collective("allgather"), CollectiveOp::kAllGather);
  EXPECT_EQ(parse_collective("bcast"), CollectiveOp::kBroadcast);
  EXPECT_EQ(parse_collective("all_to_all"), CollectiveOp::kAllToAll);
}

TEST(BusBandwidth, ParseCollectiveRejectsUnknownNamesListingAccepted) {
  try {
    parse_collective("allreduse");
    FAIL() << "expected UsageError";
  } catch (const UsageError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("allreduse"), std::string::npos) << message;
    for (CollectiveOp op : all_collectives()) {
      EXPECT_NE(message.find(collective_name(op)), std::string::npos) << message;
    }
  }
  EXPECT_THROW(parse_collective(""), UsageError);
  EXPECT_THROW(parse_collective("All_Reduce"), UsageError);
}

TEST(BusBandwidth, ReduceOpNamesRoundTripInNcclTestsOrder) {
  const std::vector<ReduceOp> ops = all_reduce_ops();
  const std::vector<std::string> names = {"sum", "prod", "max", "min", "avg"};
  ASSERT_EQ(ops.size(), names.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(reduce_op_name(ops[i]), names[i]);
    EXPECT_EQ(parse_reduce_op(names[i]), ops[i]);
  }
  try {
    parse_reduce_op("xor");
    FAIL() << "expected UsageError";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("sum, prod, max, min, avg"), std::string::npos) << error.what();
  }
}

TEST(BusBandwidth, CollectiveDTypesAreEveryTypeButTheMaskType) {
  EXPECT_EQ(collective_dtypes(), (std::vector<DType>{DType::kFloat32, DType::kBFloat16, DType::kFloat16,
                                                     DType::kFloat64, DType::kInt32}));
}

// -o all: the reducing collectives run every reduce op, the others once (the op does not apply to them).
TEST(BusBandwidth, SweepReduceOpsApplyToReducingCollectivesOnly) {
  BandwidthOptions options;
  options.reduces = all_reduce_ops();
  EXPECT_EQ(sweep_reduce_ops(options, CollectiveOp::kAllReduce), all_reduce_ops());
  EXPECT_EQ(sweep_reduce_ops(options, CollectiveOp::kReduceScatter), all_reduce_ops());
  for (CollectiveOp op : {CollectiveOp::kAllGather, CollectiveOp::kBroadcast, CollectiveOp::kAllToAll}) {
    EXPECT_EQ(sweep_reduce_ops(options, op).size(), 1u) << collective_name(op);
  }
}

}  // namespace
}  // namespace sb
