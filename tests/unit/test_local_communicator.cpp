// The local backend (one rank) on the CPU device: every collective x dtype x placement x block size must
// leave exactly the expected pattern (tests/support/collective_check.h), plus its properties and refusals.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <tuple>

#include "collectives/backends.h"
#include "scalebench/error.h"
#include "tests/support/collective_check.h"

namespace sb::test {
namespace {

struct Variant {
  const char* name;
  CollectiveOp op;
  ReduceOp reduce;
};

constexpr Variant kVariants[] = {
    {"all_reduce_sum", CollectiveOp::kAllReduce, ReduceOp::kSum},
    {"all_reduce_prod", CollectiveOp::kAllReduce, ReduceOp::kProd},
    {"all_reduce_max", CollectiveOp::kAllReduce, ReduceOp::kMax},
    {"all_reduce_min", CollectiveOp::kAllReduce, ReduceOp::kMin},
    {"all_reduce_avg", CollectiveOp::kAllReduce, ReduceOp::kAvg},
    {"reduce_scatter_sum", CollectiveOp::kReduceScatter, ReduceOp::kSum},
    {"reduce_scatter_prod", CollectiveOp::kReduceScatter, ReduceOp::kProd},
    {"reduce_scatter_max", CollectiveOp::kReduceScatter, ReduceOp::kMax},
    {"reduce_scatter_min", CollectiveOp::kReduceScatter, ReduceOp::kMin},
    {"reduce_scatter_avg", CollectiveOp::kReduceScatter, ReduceOp::kAvg},
    {"all_gather", CollectiveOp::kAllGather, ReduceOp::kSum},
    {"broadcast", CollectiveOp::kBroadcast, ReduceOp::kSum},
    {"all_to_all", CollectiveOp::kAllToAll, ReduceOp::kSum},
};
constexpr int kVariantCount = static_cast<int>(sizeof(kVariants) / sizeof(kVariants[0]));

constexpr DType kTypes[] = {DType::kFloat32, DType::kBFloat16, DType::kFloat16, DType::kFloat64,
                            DType::kInt32};
constexpr size_t kBlocks[] = {1, 7, 1000, 65537};  // elements

class LocalCollectives : public ::testing::TestWithParam<std::tuple<int, DType, Placement, size_t>> {};

TEST_P(LocalCollectives, Exact) {
  const Variant& variant = kVariants[std::get<0>(GetParam())];
  CollectiveCase c;
  c.op = variant.op;
  c.reduce = variant.reduce;
  c.type = std::get<1>(GetParam());
  c.placement = std::get<2>(GetParam());
  c.block = std::get<3>(GetParam());
  auto device = make_cpu_device();
  auto comm = make_local_communicator(*device);
  const std::string where = describe(c, 0);

  const CaseOutcome outcome = run_collective_case(*comm, *device, c, nullptr);
  EXPECT_GT(outcome.compared, 0u) << where;
  EXPECT_GT(outcome.nonzero_expected, 0u) << where;
  EXPECT_EQ(outcome.mismatches, 0u) << where << ": " << outcome.mismatches << " of " << outcome.compared
                                    << " elements differ from the expected pattern";
  EXPECT_EQ(outcome.caught_corruption, 1u) << where;
}

std::string case_name(const ::testing::TestParamInfo<LocalCollectives::ParamType>& info) {
  return std::string(kVariants[std::get<0>(info.param)].name) + "_" + dtype_name(std::get<1>(info.param)) +
         "_" + placement_name(std::get<2>(info.param)) + "_" + std::to_string(std::get<3>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Matrix, LocalCollectives,
                         ::testing::Combine(::testing::Range(0, kVariantCount), ::testing::ValuesIn(kTypes),
                                            ::testing::Values(Placement::kOutOfPlace, Placement::kInPlace),
                                            ::testing::ValuesIn(kBlocks)),
                         case_name);

TEST(LocalCommunicator, DescribesItself) {
  auto device = make_cpu_device();
  auto comm = make_local_communicator(*device);
  EXPECT_EQ(comm->backend(), Backend::kLocal);
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  EXPECT_EQ(comm->library_version(), "local");
  EXPECT_EQ(comm->transport(), "none");
  EXPECT_EQ(comm->supports_graph_capture(), device->supports_graphs());
  comm->barrier(nullptr);
  comm->wait(nullptr, "nothing");
}

TEST(LocalCommunicator, RefusesOtherRoots) {
  auto device = make_cpu_device();
  auto comm = make_local_communicator(*device);
  float value = 1;
  EXPECT_THROW(comm->broadcast(&value, &value, 1, DType::kFloat32, 1, nullptr), UsageError);
}

// In place must leave the buffer alone, and a zero count must not touch the (absent) buffers.
TEST(LocalCommunicator, InPlaceAndEmptyAreNoOps) {
  auto device = make_cpu_device();
  auto comm = make_local_communicator(*device);
  float values[3] = {1.5f, -2.0f, 3.25f};
  comm->all_reduce(values, values, 3, DType::kFloat32, ReduceOp::kAvg, nullptr);
  EXPECT_EQ(values[0], 1.5f);
  EXPECT_EQ(values[1], -2.0f);
  EXPECT_EQ(values[2], 3.25f);
  comm->all_gather(nullptr, values, 0, DType::kFloat32, nullptr);
  comm->all_to_all(nullptr, values, 0, DType::kFloat64, nullptr);
  EXPECT_EQ(values[0], 1.5f);
}

}  // namespace
}  // namespace sb::test
