// zero3's schedule (src/core/unit_gathers.h) on hand-built graphs: each bucket gathered before its first reader in
// the forward pass and again before the backward pass first touches it, the unit gathered last kept, a parameter
// cut into several buckets needed by all of them at once, views as their storage, and the parts of a sub-step.
#include <gtest/gtest.h>

#include "scalebench/planner.h"
#include "src/core/unit_gathers.h"

namespace sb {
namespace {

TensorId add(Graph& graph, const std::string& name, std::vector<int64_t> shape, TensorRole role,
             TensorId gradient_of = kNoTensor, TensorId view_of = kNoTensor) {
  TensorInfo info;
  info.name = name;
  info.shape = std::move(shape);
  info.role = role;
  info.gradient_of = gradient_of;
  info.view_of = view_of;
  return graph.add_tensor(info);
}

// x -> h1 = f(x, w1) -> h2 = f(h1, w2) -> y = f(h2, w3), each weight 1 KiB (w1 more when asked); the backward pass
// writes dw3, reads w3, writes dw2, reads w2, writes dw1.
struct ThreeLayer {
  Graph graph;
  TensorId x, w1, w2, w3, h1, h2, y, dy, dh2, dh1, dw1, dw2, dw3;
  explicit ThreeLayer(int64_t w1_rows = 16) {
    x = add(graph, "x", {8, w1_rows}, TensorRole::kInput);
    w1 = add(graph, "w1", {w1_rows, 16}, TensorRole::kParameter);
    w2 = add(graph, "w2", {16, 16}, TensorRole::kParameter);
    w3 = add(graph, "w3", {16, 16}, TensorRole::kParameter);
    h1 = add(graph, "h1", {8, 16}, TensorRole::kActivation);
    h2 = add(graph, "h2", {8, 16}, TensorRole::kActivation);
    y = add(graph, "y", {8, 16}, TensorRole::kActivation);
    dy = add(graph, "dy", {8, 16}, TensorRole::kActivation);
    dh2 = add(graph, "dh2", {8, 16}, TensorRole::kActivation);
    dh1 = add(graph, "dh1", {8, 16}, TensorRole::kActivation);
    dw1 = add(graph, "dw1", {w1_rows, 16}, TensorRole::kGradient, w1);
    dw2 = add(graph, "dw2", {16, 16}, TensorRole::kGradient, w2);
    dw3 = add(graph, "dw3", {16, 16}, TensorRole::kGradient, w3);
  }
  void add_nodes() {
    graph.add_node(Node{"gemm", {x, w1}, {h1}, {}, false});      // 0
    graph.add_node(Node{"gemm", {h1, w2}, {h2}, {}, false});     // 1
    graph.add_node(Node{"gemm", {h2, w3}, {y}, {}, false});      // 2
    graph.add_node(Node{"loss_backward", {y}, {dy}, {}, true});  // 3
    graph.add_node(Node{"gemm", {h2, dy}, {dw3}, {}, true});     // 4
    graph.add_node(Node{"gemm", {dy, w3}, {dh2}, {}, true});     // 5
    graph.add_node(Node{"gemm", {h1, dh2}, {dw2}, {}, true});    // 6
    graph.add_node(Node{"gemm", {dh2, w2}, {dh1}, {}, true});    // 7
    graph.add_node(Node{"gemm", {x, dh1}, {dw1}, {}, true});     // 8
  }
};

size_t forward_end(const Graph& graph) {
  size_t n = 0;
  while (n < graph.nodes().size() && !graph.nodes()[n].backward) ++n;
  return n;
}

// The bucket holding `parameter`'s gradient (its first piece).
size_t bucket_of(const MemoryPlan& plan, const Graph& graph, TensorId parameter) {
  for (size_t b = 0; b < plan.buckets.size(); ++b) {
    for (size_t i = plan.buckets[b].first; i <= plan.buckets[b].last; ++i) {
      if (graph.tensor(plan.gradient_order[i]).gradient_of == parameter) return b;
    }
  }
  return plan.buckets.size();
}

bool bucket_holds(const MemoryPlan& plan, const Graph& graph, size_t bucket, TensorId parameter) {
  for (size_t i = plan.buckets[bucket].first; i <= plan.buckets[bucket].last; ++i) {
    if (graph.tensor(plan.gradient_order[i]).gradient_of == parameter) return true;
  }
  return false;
}

using When = ParameterGather::When;

TEST(UnitGathers, ForwardByFirstReaderThenBackwardByFirstTouchKeepingTheLastUnit) {
  ThreeLayer t;
  t.add_nodes();
  const MemoryPlan plan = plan_memory(t.graph, PlanOptions{1024, 256, 2, true});  // one bucket per gradient
  ASSERT_EQ(plan.buckets.size(), 3u);
  const size_t b1 = bucket_of(plan, t.graph, t.w1), b2 = bucket_of(plan, t.graph, t.w2);
  const size_t b3 = bucket_of(plan, t.graph, t.w3);
  const std::vector<ParameterGather> gathers = unit_gathers(t.graph, plan, plan.buckets, 0, forward_end(t.graph));
  ASSERT_EQ(gathers.size(), 5u);  // three units forward, two again backward: w3's, gathered last, is kept
  const std::vector<std::tuple<When, size_t, size_t>> expected{
      {When::kBeforeForward, b1, 0}, {When::kBeforeForward, b2, 1}, {When::kBeforeForward, b3, 2},
      // w2's gradient is written (node 6) before w2 is read (node 7): the unit is needed from its first touch.
      {When::kBeforeBackward, b2, 6}, {When::kBeforeBackward, b1, 8}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(gathers[i].when, std::get<0>(expected[i])) << i;
    EXPECT_EQ(gathers[i].bucket, std::get<1>(expected[i])) << i;
    EXPECT_EQ(gathers[i].node, std::get<2>(expected[i])) << i;
  }
}

TEST(UnitGathers, AParameterCutIntoSeveralBucketsIsNeededByAllOfThemAndViewsCountAsTheirStorage) {
  ThreeLayer t(64);  // w1: 64 x 16 floats, 4 KiB: four 1 KiB buckets
  const TensorId w2_view = add(t.graph, "w2.view", {256}, TensorRole::kActivation, kNoTensor, t.w2);
  t.graph.add_node(Node{"gemm", {t.x, t.w1}, {t.h1}, {}, false});
  t.graph.add_node(Node{"gemm", {t.h1, w2_view}, {t.h2}, {}, false});  // w2 read through a view
  t.graph.add_node(Node{"gemm", {t.h2, t.w3}, {t.y}, {}, false});
  t.graph.add_node(Node{"loss_backward", {t.y}, {t.dy}, {}, true});
  t.graph.add_node(Node{"gemm", {t.h2, t.dy}, {t.dw3}, {}, true});
  t.graph.add_node(Node{"gemm", {t.dy, t.w3}, {t.dh2}, {}, true});
  t.graph.add_node(Node{"gemm", {t.h1, t.dh2}, {t.dw2}, {}, true});
  t.graph.add_node(Node{"gemm", {t.dh2, t.w2}, {t.dh1}, {}, true});
  t.graph.add_node(Node{"gemm", {t.x, t.dh1}, {t.dw1}, {}, true});
  const MemoryPlan plan = plan_memory(t.graph, PlanOptions{1024, 256, 2, true});
  const std::vector<ParameterGather> gathers = unit_gathers(t.graph, plan, plan.buckets, 0, forward_end(t.graph));
  size_t w1_forward = 0, w1_backward = 0, w2_forward = 0;
  const size_t w2_bucket = bucket_of(plan, t.graph, t.w2);
  for (const ParameterGather& g : gathers) {
    const bool w1_piece = bucket_holds(plan, t.graph, g.bucket, t.w1);
    if (w1_piece && g.when == When::kBeforeForward) w1_forward += g.node == 0 ? 1 : 100;
    if (w1_piece && g.when == When::kBeforeBackward) w1_backward += g.node == 8 ? 1 : 100;
    if (g.bucket == w2_bucket && g.when == When::kBeforeForward) w2_forward += g.node == 1 ? 1 : 100;
  }
  EXPECT_EQ(w1_forward, 4u);  // every piece, before node 0
  EXPECT_EQ(w1_backward, 4u);
  EXPECT_EQ(w2_forward, 1u);  // through its view, before node 1
}

// The parameter read last in the forward pass is cut into pieces (w1 read last here, four 1 KiB buckets): the whole
// parameter is kept into the backward pass, not only the piece gathered last, so that parameter blocks hold it in one
// block that no backward gather writes while it is read.
TEST(UnitGathers, AKeptParameterCutIntoPiecesIsKeptWhole) {
  ThreeLayer t(64);
  t.graph.add_node(Node{"gemm", {t.x, t.w3}, {t.h1}, {}, false});  // shapes do not matter to the schedule
  t.graph.add_node(Node{"gemm", {t.h1, t.w2}, {t.h2}, {}, false});
  t.graph.add_node(Node{"gemm", {t.h2, t.w1}, {t.y}, {}, false});  // w1, in pieces, read last
  t.graph.add_node(Node{"loss_backward", {t.y}, {t.dy}, {}, true});
  t.graph.add_node(Node{"gemm", {t.h2, t.dy}, {t.dw1}, {}, true});
  t.graph.add_node(Node{"gemm", {t.dy, t.w1}, {t.dh2}, {}, true});
  t.graph.add_node(Node{"gemm", {t.h1, t.dh2}, {t.dw2}, {}, true});
  t.graph.add_node(Node{"gemm", {t.dh2, t.w2}, {t.dh1}, {}, true});
  t.graph.add_node(Node{"gemm", {t.x, t.dh1}, {t.dw3}, {}, true});
  const MemoryPlan plan = plan_memory(t.graph, PlanOptions{1024, 256, 2, true});
  size_t w1_forward = 0, w1_backward = 0;
  for (const ParameterGather& g : unit_gathers(t.graph, plan, plan.buckets, 0, forward_end(t.graph))) {
    if (!bucket_holds(plan, t.graph, g.bucket, t.w1)) continue;
    (g.when == When::kBeforeForward ? w1_forward : w1_backward) += 1;
  }
  EXPECT_EQ(w1_forward, 4u);
  EXPECT_EQ(w1_backward, 0u) << "none of its pieces gathered again";
}

TEST(UnitGathers, ASubStepsPartsGatherWhatTheyReadFirst) {
  ThreeLayer t;
  const TensorId g = add(t.graph, "generated", {8, 16}, TensorRole::kActivation);
  t.graph.add_node(Node{"gemm", {t.x, t.w2}, {g}, {}, false});  // 0: a generation part reading w2 alone
  t.add_nodes();                                                  // 1..9
  t.graph.set_sub_steps({SubStep{"plain", {}, 1}, SubStep{"generating", {StepPart{"generate", 0, 1, 1, true}}, 1}});
  const MemoryPlan plan = plan_memory(t.graph, PlanOptions{1024, 256, 2, true});
  const size_t end = forward_end(t.graph);
  EXPECT_EQ(unit_gathers(t.graph, plan, plan.buckets, 0, end).size(), 5u);
  const std::vector<ParameterGather> generating = unit_gathers(t.graph, plan, plan.buckets, 1, end);
  ASSERT_EQ(generating.size(), 6u);
  EXPECT_EQ(generating[0].when, When::kBeforeParts);
  EXPECT_EQ(generating[0].bucket, bucket_of(plan, t.graph, t.w2));
  EXPECT_EQ(generating[0].node, 0u);
  EXPECT_EQ(generating[1].when, When::kBeforeForward);
  EXPECT_EQ(generating[1].node, 1u);  // the training pass starts after the part
}

}  // namespace
}  // namespace sb
