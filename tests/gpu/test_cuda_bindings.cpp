// The CUDA kernel table as its families build it (src/cuda/cuda_bindings.{h,cpp}): a name bound twice is refused,
// the ops that take stream scratch size it in their bindings, and the executor's reserve outside the plan is the
// largest of those sizes over the graph. Nothing here touches a GPU (building the table makes std::functions only),
// so these run without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

#include "scalebench/executor.h"
#include "src/cuda/bias.h"
#include "src/cuda/cross_entropy.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/gemm.h"
#include "src/cuda/layernorm.h"

namespace sb {
namespace {

TEST(CudaBindings, RefusesAnOpBoundTwice) {
  CudaKernelTable table;
  const CudaKernel nothing = [](CudaExecutor&, const Node&) {};
  cuda_binding::add_kernels(table, {{"first", nothing}, {"second", nothing}});
  EXPECT_EQ(table.size(), 2u);
  EXPECT_THROW(cuda_binding::add_kernels(table, {{"second", nothing}}), std::logic_error);
  EXPECT_THROW(cuda_binding::add_kernels(table, {{"third", nothing}, {"third", nothing}}), std::logic_error);
}

TEST(CudaBindings, EveryOpHasAKernelAndTheScratchTakersSizeIt) {
  const std::set<std::string> scratch_takers = {"bias_backward",  "softmax_cross_entropy", "layernorm_backward",
                                                "rpn_proposals",  "rpn_targets",           "roi_sample",
                                                "bce_with_logits_loss", "smooth_l1_loss"};
  std::set<std::string> sized;
  for (const auto& [op, binding] : cuda_kernel_table()) {
    EXPECT_TRUE(static_cast<bool>(binding.kernel)) << op;
    if (binding.scratch_bytes) sized.insert(op);
  }
  EXPECT_EQ(sized, scratch_takers);
  EXPECT_GE(cuda_kernel_table().size(), 120u);
}

Node node(const std::string& op, NodeAttributes attributes = {}) { return Node{op, {}, {}, std::move(attributes)}; }

TEST(CudaBindings, OutsidePlanBytesAreTheGemmWorkspaceAndTheLargestScratch) {
  Graph graph;
  graph.add_node(node("gemm"));
  graph.add_node(node("not_bound_anywhere"));  // sized as nothing, as before the table had a scratch column
  EXPECT_EQ(cuda_outside_plan_bytes(graph), cuda::gemm_workspace_bytes());

  graph.add_node(node("softmax_cross_entropy"));
  EXPECT_EQ(cuda_outside_plan_bytes(graph),
            cuda::gemm_workspace_bytes() + cuda::cross_entropy_forward_scratch_bytes());

  graph.add_node(node("layernorm_backward", {{"cols", 1024}}));
  graph.add_node(node("bias_backward", {{"cols", 4096}}));
  const uint64_t largest = std::max({cuda::cross_entropy_forward_scratch_bytes(),
                                     cuda::layernorm_backward_scratch_bytes(1024),
                                     cuda::bias_backward_scratch_bytes(4096)});
  ASSERT_GT(largest, cuda::cross_entropy_forward_scratch_bytes());  // the sizes differ: the max is tested
  EXPECT_EQ(cuda_outside_plan_bytes(graph), cuda::gemm_workspace_bytes() + largest);
}

}  // namespace
}  // namespace sb
