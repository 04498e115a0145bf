// The mpi backend, every collective x dtype x placement x block size, verified exactly on every rank
// (tests/support/collective_check.h), on the CPU device and on a device whose memory the host cannot
// address (the staging path a GPU takes). Runs under mpiexec with 2 and 4 ranks (ctest -L mpi). Each rank
// checks its own output; the counts are also summed over ranks so that rank 0, the one that prints the
// report, fails the test when any rank does.
#include <gtest/gtest.h>

#include <climits>
#include <memory>
#include <string>
#include <tuple>

#include "collectives/backends.h"
#include "scalebench/error.h"
#include "tests/mpi/mpi_test_world.h"
#include "tests/support/collective_check.h"
#include "tests/support/host_opaque_device.h"

namespace sb::test {
namespace {

// A collective with its reduction or root: the first axis of the test matrix.
struct Variant {
  const char* name;
  CollectiveOp op;
  ReduceOp reduce;
  bool root_is_last;  // broadcast from rank size-1 instead of rank 0
};

constexpr Variant kVariants[] = {
    {"all_reduce_sum", CollectiveOp::kAllReduce, ReduceOp::kSum, false},
    {"all_reduce_prod", CollectiveOp::kAllReduce, ReduceOp::kProd, false},
    {"all_reduce_max", CollectiveOp::kAllReduce, ReduceOp::kMax, false},
    {"all_reduce_min", CollectiveOp::kAllReduce, ReduceOp::kMin, false},
    {"all_reduce_avg", CollectiveOp::kAllReduce, ReduceOp::kAvg, false},
    {"reduce_scatter_sum", CollectiveOp::kReduceScatter, ReduceOp::kSum, false},
    {"reduce_scatter_prod", CollectiveOp::kReduceScatter, ReduceOp::kProd, false},
    {"reduce_scatter_max", CollectiveOp::kReduceScatter, ReduceOp::kMax, false},
    {"reduce_scatter_min", CollectiveOp::kReduceScatter, ReduceOp::kMin, false},
    {"reduce_scatter_avg", CollectiveOp::kReduceScatter, ReduceOp::kAvg, false},
    {"all_gather", CollectiveOp::kAllGather, ReduceOp::kSum, false},
    {"broadcast_root_first", CollectiveOp::kBroadcast, ReduceOp::kSum, false},
    {"broadcast_root_last", CollectiveOp::kBroadcast, ReduceOp::kSum, true},
    {"all_to_all", CollectiveOp::kAllToAll, ReduceOp::kSum, false},
};
constexpr int kVariantCount = static_cast<int>(sizeof(kVariants) / sizeof(kVariants[0]));

constexpr DType kTypes[] = {DType::kFloat32, DType::kBFloat16, DType::kFloat16, DType::kFloat64,
                            DType::kInt32};

// Elements per rank block: one element, an odd size that defeats vector widths, a typical small size, and
// 2^16 + 1, past Open MPI's eager limit and not a multiple of any chunk size.
constexpr size_t kBlocks[] = {1, 7, 1000, 65537};

enum class Memory { kHost, kOpaque };  // CPU device, or HostOpaqueDevice (staged through host copies)

const char* memory_name(Memory memory) { return memory == Memory::kHost ? "cpu" : "staged"; }

using Param = std::tuple<Memory, int, DType, Placement, size_t>;

// One device and communicator per memory kind for the whole suite: creating a communicator is collective.
class MpiCollectives : public ::testing::TestWithParam<Param> {
 protected:
  static void SetUpTestSuite() {
    host_device_ = make_cpu_device();
    host_comm_ = make_mpi_communicator(world(), *host_device_, CommunicatorOptions{});
    opaque_device_ = std::make_unique<HostOpaqueDevice>();
    opaque_comm_ = make_mpi_communicator(world(), *opaque_device_, CommunicatorOptions{});
  }
  static void TearDownTestSuite() {
    opaque_comm_.reset();
    opaque_device_.reset();
    host_comm_.reset();
    host_device_.reset();
  }

  static Device& device() {
    return std::get<0>(GetParam()) == Memory::kHost ? *host_device_ : *opaque_device_;
  }
  static Communicator& comm() {
    return std::get<0>(GetParam()) == Memory::kHost ? *host_comm_ : *opaque_comm_;
  }

  static CollectiveCase current_case() {
    const Variant& variant = kVariants[std::get<1>(GetParam())];
    CollectiveCase c;
    c.op = variant.op;
    c.reduce = variant.reduce;
    c.root = variant.root_is_last ? comm().size() - 1 : 0;
    c.type = std::get<2>(GetParam());
    c.placement = std::get<3>(GetParam());
    c.block = std::get<4>(GetParam());
    return c;
  }

 private:
  static std::unique_ptr<Device> host_device_;
  static std::unique_ptr<Communicator> host_comm_;
  static std::unique_ptr<Device> opaque_device_;
  static std::unique_ptr<Communicator> opaque_comm_;
};

std::unique_ptr<Device> MpiCollectives::host_device_;
std::unique_ptr<Communicator> MpiCollectives::host_comm_;
std::unique_ptr<Device> MpiCollectives::opaque_device_;
std::unique_ptr<Communicator> MpiCollectives::opaque_comm_;

TEST_P(MpiCollectives, ExactOnEveryRank) {
  const CollectiveCase c = current_case();
  const std::string memory = memory_name(std::get<0>(GetParam()));
  const std::string where = describe(c, comm().rank()) + " on " + memory;
  const StreamHandle stream = device().create_stream();

  const CaseOutcome outcome = run_collective_case(comm(), device(), c, stream);
  device().destroy_stream(stream);
  EXPECT_GT(outcome.compared, 0u) << where;
  EXPECT_EQ(outcome.mismatches, 0u) << where << ": " << outcome.mismatches << " of " << outcome.compared
                                    << " elements differ from the expected pattern";
  EXPECT_EQ(outcome.caught_corruption, 1u)
      << where << ": one corrupted element was counted as " << outcome.caught_corruption << " mismatches";

  int64_t totals[] = {static_cast<int64_t>(outcome.mismatches),
                      static_cast<int64_t>(outcome.caught_corruption != 1 ? 1 : 0),
                      static_cast<int64_t>(outcome.nonzero_expected)};
  world().allreduce_sum(totals, 3);
  const std::string job =
      describe_case(c) + " on " + memory + " with " + std::to_string(comm().size()) + " ranks";
  EXPECT_EQ(totals[0], 0) << job << ": mismatched elements summed over all ranks (each rank prints its own)";
  EXPECT_EQ(totals[1], 0) << job << ": ranks on which a corrupted element went unnoticed";
  EXPECT_GT(totals[2], 0) << job << ": every expected value is 0 on every rank, the check proves nothing";
}

std::string case_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(memory_name(std::get<0>(info.param))) + "_" + kVariants[std::get<1>(info.param)].name +
         "_" + dtype_name(std::get<2>(info.param)) + "_" + placement_name(std::get<3>(info.param)) + "_" +
         std::to_string(std::get<4>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Matrix, MpiCollectives,
                         ::testing::Combine(::testing::Values(Memory::kHost, Memory::kOpaque),
                                            ::testing::Range(0, kVariantCount), ::testing::ValuesIn(kTypes),
                                            ::testing::Values(Placement::kOutOfPlace, Placement::kInPlace),
                                            ::testing::ValuesIn(kBlocks)),
                         case_name);

// Properties and refusals; none of these sends a message except the barrier.
TEST(MpiCommunicator, DescribesItself) {
  auto device = make_cpu_device();
  auto comm = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  EXPECT_EQ(comm->backend(), Backend::kMpi);
  EXPECT_EQ(comm->rank(), world().rank());
  EXPECT_EQ(comm->size(), world().size());
  EXPECT_EQ(comm->transport(), "MPI");
  EXPECT_FALSE(comm->supports_graph_capture());
  const std::string version = comm->library_version();
  EXPECT_FALSE(version.empty());
  EXPECT_EQ(version.find_first_of(",\n"), std::string::npos) << version;
  comm->barrier(nullptr);
  comm->wait(nullptr, "nothing");
}

TEST(MpiCommunicator, RefusesCountsBeyondIntMax) {
  auto device = make_cpu_device();
  auto comm = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  const size_t too_many = static_cast<size_t>(INT_MAX) + 1;
  // The count is checked before the (absent) buffers are touched.
  EXPECT_THROW(comm->all_reduce(nullptr, nullptr, too_many, DType::kFloat32, ReduceOp::kSum, nullptr),
               UsageError);
  EXPECT_THROW(comm->reduce_scatter(nullptr, nullptr, too_many, DType::kBFloat16, ReduceOp::kSum, nullptr),
               UsageError);
  EXPECT_THROW(comm->all_gather(nullptr, nullptr, too_many, DType::kFloat16, nullptr), UsageError);
  EXPECT_THROW(comm->broadcast(nullptr, nullptr, too_many, DType::kInt32, 0, nullptr), UsageError);
  EXPECT_THROW(comm->all_to_all(nullptr, nullptr, too_many, DType::kFloat64, nullptr), UsageError);
  try {
    comm->all_reduce(nullptr, nullptr, too_many, DType::kFloat32, ReduceOp::kSum, nullptr);
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("INT_MAX"), std::string::npos) << error.what();
  }
}

TEST(MpiCommunicator, RefusesBadRoot) {
  auto device = make_cpu_device();
  auto comm = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  float value = 1;
  EXPECT_THROW(comm->broadcast(&value, &value, 1, DType::kFloat32, comm->size(), nullptr), UsageError);
  EXPECT_THROW(comm->broadcast(&value, &value, 1, DType::kFloat32, -1, nullptr), UsageError);
}

// An integer average truncates toward zero, as NCCL's (sum, then divide) does: rank 0 gives n + 2, the
// others 1, a sum of 2n + 1 whose average is 2 (and -2 for the negated values). The verification data never
// needs the truncation: its sums are multiples of the rank count.
TEST(MpiCommunicator, IntegerAverageTruncatesTowardZero) {
  auto device = make_cpu_device();
  auto comm = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  const int n = comm->size();
  const int32_t mine = comm->rank() == 0 ? n + 2 : 1;
  int32_t numbers[2] = {mine, -mine};
  comm->all_reduce(numbers, numbers, 2, DType::kInt32, ReduceOp::kAvg, nullptr);
  EXPECT_EQ(numbers[0], 2);
  EXPECT_EQ(numbers[1], -2);
}

}  // namespace
}  // namespace sb::test
