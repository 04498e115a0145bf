// GoogleTest main for the mpi suite, run as `mpiexec -n N mpi_tests`. Rank 0 prints the usual report;
// other ranks print only their failures, prefixed with the rank, and every rank exits with the worst
// exit code of the job so that a failure on any rank fails the ctest run.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "scalebench/process_group.h"
#include "tests/mpi/mpi_test_world.h"

namespace sb::test {
namespace {

std::unique_ptr<ProcessGroup>& world_storage() {
  static std::unique_ptr<ProcessGroup> group;
  return group;
}

// Without this, a failure seen only on a rank other than 0 would be silent once the default printer is
// removed there.
class FailurePrinter final : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}

  void OnTestStart(const ::testing::TestInfo& info) override {
    test_name_ = std::string(info.test_suite_name()) + "." + info.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s: %s:%d: Failure\n%s\n", rank_, test_name_.c_str(),
                 result.file_name() != nullptr ? result.file_name() : "?", result.line_number(),
                 result.message());
    std::fflush(stderr);
  }

 private:
  int rank_;
  std::string test_name_;
};

}  // namespace

ProcessGroup& world() { return *world_storage(); }

}  // namespace sb::test

int main(int argc, char** argv) {
  auto& group = sb::test::world_storage();
  group = sb::start_process_group(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (group->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new sb::test::FailurePrinter(group->rank()));
  }
  const int exit_code = static_cast<int>(group->max_across_ranks(RUN_ALL_TESTS()));
  group->finalize();
  return exit_code;
}
