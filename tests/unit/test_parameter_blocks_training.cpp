// Parameter blocks (PlanOptions::parameter_blocks, --strategy zero3) on one rank of the CPU device, with no reducer:
// the weights live in the parameter shard beside the arena, the executor copies each unit from it into its forward or
// backward block before the node that needs it, and the backward nodes read copies of their own. The weights after
// three steps are those of the same layout with the regions whole, bit for bit, unclipped and clipped; a shard of part
// of the parameters cannot run without a reducer to gather the rest (one line, UsageError), and reading a parameter
// the shard does not hold whole is refused likewise.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "scalebench/error.h"
#include "src/core/backward_parameter_copies.h"
#include "tests/unit/sharded_replica.h"

namespace sb {
namespace {

std::unique_ptr<Replica> zero3_replica(const char* workload, bool blocks) {
  return test::sharded_replica(workload, DataParallelStrategy::kZero3,
                               blocks ? GradientLayout::kBlocks : GradientLayout::kWhole);
}

using test::trained_alone;

class ParameterBlocksTraining : public ::testing::TestWithParam<const char*> {};

TEST_P(ParameterBlocksTraining, OneRankTrainsAsWithTheRegionsWhole) {
  for (double clip : {0.0, 1.0}) {
    const std::unique_ptr<Replica> whole = zero3_replica(GetParam(), false);
    const std::unique_ptr<Replica> blocks = zero3_replica(GetParam(), true);
    ASSERT_TRUE(blocks->plan.parameters_in_blocks);
    ASSERT_FALSE(whole->plan.parameters_in_blocks);
    // The backward copies (none for StyleGAN, whose backward nodes read modulated weights, activations).
    EXPECT_GE(blocks->graph.tensors().size(), whole->graph.tensors().size());
    EXPECT_EQ(read_parameters(*blocks), read_parameters(*whole)) << "the initial weights, through the shard";
    EXPECT_EQ(blocks->executor->parameter_shard_bytes(), blocks->plan.parameter_bytes) << "every weight, one rank";
    const std::vector<float> expected = trained_alone(*whole, clip), got = trained_alone(*blocks, clip);
    ASSERT_EQ(expected.size(), got.size());
    int64_t differ = 0;
    for (size_t i = 0; i < got.size(); ++i) differ += expected[i] != got[i];
    EXPECT_EQ(differ, 0) << "of " << got.size() << " weights, clip " << clip;
    EXPECT_NE(got, read_parameters(*zero3_replica(GetParam(), true))) << "trained, not the initial weights";
  }
}

TEST_P(ParameterBlocksTraining, AShardOfPartOfTheParametersNeedsAReducerToGather) {
  const std::unique_ptr<Replica> blocks = zero3_replica(GetParam(), true);
  blocks->executor->set_optimizer_shard(parameter_shard(blocks->plan, 1, 2).ranges);
  EXPECT_EQ(blocks->executor->parameter_shard_bytes() * 2, blocks->plan.gradient_bytes);
  EXPECT_THROW(blocks->executor->run(), UsageError);
  EXPECT_THROW(read_parameters(*blocks), UsageError) << "no parameter of this workload lies in one chunk alone";
}

INSTANTIATE_TEST_SUITE_P(Workloads, ParameterBlocksTraining,
                         ::testing::Values("bert_base", "transformer_big", "yolov3", "unsupmt", "stylegan", "mt_dnn"));

// Mixed precision (planned only: the CPU device runs fp32): the backward GEMMs read bf16 casts of the weights, so the
// blocks' graph casts each weight's backward copy again, one backward node per weight cast the backward pass reads;
// the nodes it has beyond the regions-whole graph (the trainer's dp_only_nodes) are exactly those casts.
TEST(ParameterBlocksPlan, AMixedPrecisionReplicaCastsItsBackwardCopies) {
  ReplicaOptions options;
  options.workload = "transformer_big";
  options.batch = 2;
  options.scale = WorkloadScale::kTiny;
  options.precision = Precision::kBf16;
  options.bucket_bytes = 4096;
  options.ranks = 2;
  options.strategy = DataParallelStrategy::kZero3;
  options.gradient_layout = GradientLayout::kBlocks;
  const std::unique_ptr<Replica> blocks = plan_replica(options);
  options.gradient_layout = GradientLayout::kWhole;
  const std::unique_ptr<Replica> whole = plan_replica(options);
  ASSERT_TRUE(blocks->plan.parameters_in_blocks);
  size_t recasts = 0;
  for (const Node& node : blocks->graph.nodes()) {
    const bool of_copy = casts_a_backward_copy(blocks->graph, node);
    if (of_copy) EXPECT_TRUE(node.backward);
    recasts += of_copy;
  }
  EXPECT_GT(recasts, 0u);
  EXPECT_EQ(blocks->graph.nodes().size() - whole->graph.nodes().size(), recasts);
}

}  // namespace
}  // namespace sb
