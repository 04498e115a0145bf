// The allocation budget behind `maxbatch --memory`: charges past the ceiling fail as OutOfMemory and charge
// nothing, refunds give the room back, and the CPU executor's arena and optimizer state are charged.
#include <gtest/gtest.h>

#include "scalebench/allocation_budget.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "scalebench/planner.h"

namespace sb {
namespace {

class BudgetTest : public ::testing::Test {
 protected:
  void TearDown() override { set_allocation_budget(0); }
};

TEST_F(BudgetTest, ChargesUpToTheCeilingAndRefusesPastIt) {
  const uint64_t base = allocated_bytes();
  set_allocation_budget(base + 1000);
  {
    AllocationCharge first(600, "first");
    EXPECT_EQ(allocated_bytes(), base + 600);
    EXPECT_THROW(AllocationCharge(401, "second"), OutOfMemory);
    EXPECT_EQ(allocated_bytes(), base + 600) << "a refused charge charges nothing";
    AllocationCharge second(400, "second");
    EXPECT_EQ(allocated_bytes(), base + 1000);
  }
  EXPECT_EQ(allocated_bytes(), base) << "both refunded";
}

TEST_F(BudgetTest, NoCeilingCountsOnly) {
  const uint64_t base = allocated_bytes();
  AllocationCharge big(uint64_t{1} << 40, "a terabyte, counted");
  EXPECT_EQ(allocated_bytes(), base + (uint64_t{1} << 40));
}

TEST_F(BudgetTest, TheMessageNamesWhatAndTheBudget) {
  set_allocation_budget(allocated_bytes() + (3 << 20));
  try {
    charge_allocation(4 << 20, "the plan's arena");
    FAIL() << "no OutOfMemory";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("the plan's arena needs 4.0 MiB"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3.0 MiB budget"), std::string::npos) << e.what();
  }
}

TEST_F(BudgetTest, TheCpuExecutorChargesItsArenaAndOptimizerState) {
  Graph graph;
  TensorInfo w{};
  w.name = "w";
  w.shape = {256};
  w.role = TensorRole::kParameter;
  const TensorId weight = graph.add_tensor(w);
  TensorInfo g = w;
  g.name = "dw";
  g.role = TensorRole::kGradient;
  g.gradient_of = weight;
  const TensorId gradient = graph.add_tensor(g);
  graph.add_node(Node{"relu", {weight}, {gradient}, {}, true});
  const MemoryPlan plan = plan_memory(graph);
  const uint64_t base = allocated_bytes();
  set_allocation_budget(base + plan.total_bytes - 1);
  EXPECT_THROW(CpuExecutor(graph, plan), OutOfMemory);
  set_allocation_budget(base + plan.total_bytes + 1024);  // the arena, and one AdamW state of 2 x 1 KiB does not fit
  CpuExecutor executor(graph, plan);
  EXPECT_EQ(allocated_bytes(), base + plan.total_bytes);
  EXPECT_THROW(executor.optimizer_step(OptimizerSettings{}, 1), OutOfMemory);
}

}  // namespace
}  // namespace sb
