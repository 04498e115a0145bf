// The op catalogue (src/core/ops/op_catalogue.h) against every op lookup table (src/core/ops/op_bindings.h) and
// every workload's graphs, without a GPU: an op a graph builder emits but nobody catalogued, a catalogued op
// without its CPU kernel, CUDA kernel or backward rule (or with a rule the catalogue says it lacks), a name in
// two tables of one chain, and a catalogue name no table knows all fail here instead of at run time.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/dtype.h"
#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "scalebench/workload.h"
#include "src/core/ops/op_bindings.h"
#include "src/core/ops/op_catalogue.h"
#include "src/core/ops/op_registry.h"

namespace sb {
namespace {

// Ops the CPU executor has no kernel for, on purpose. The CPU device is the fp32 reference: CpuExecutor refuses
// any bf16/fp16 tensor before it looks at a node, and cast only appears in mixed-precision graphs
// (GraphBuilder::in_compute_dtype), so a cast node never reaches it.
const std::set<std::string> kNoCpuKernel = {"cast"};
// Ops of the workloads' graphs that the CUDA executor has no kernel for, on purpose: none today.
const std::set<std::string> kNoCudaKernel = {};
// Catalogued ops that no workload's graph contains today. They stay: each has its builder or rule, kernels and
// tests of its own (tests/unit/test_engine_batchnorm.cpp, test_engine_cnn_losses.cpp, test_cpu_stylegan_g_ops.cpp).
const std::set<std::string> kInNoWorkload = {
    "sigmoid", "sigmoid_backward",  // GraphBuilder::sigmoid has no caller: yolov3's sigmoids are inside yolo_loss
    "drop_path",                    // NASNet-A Large trains as timm's nasnetalarge does, without drop-path
    "pixel_norm_backward",          // StyleGAN normalises only the latents z, which need no gradient
};

// op -> the first workload graph it appears in ("yolov3 bf16"), over the 12 workloads at tiny scale, forward
// and backward, in fp32 and in bf16 (mixed precision adds the casts), as built and with true gradients
// (GraphBuilder::use_true_gradients: Mask R-CNN's undecoded proposals, ConvS2S's unscaled GradMultiply).
const std::map<std::string, std::string>& workload_ops() {
  static const std::map<std::string, std::string> ops = [] {
    std::map<std::string, std::string> found;
    for (const Workload* workload : workload_registry()) {
      for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
        for (bool true_gradients : {false, true}) {
          Graph graph;
          GraphBuilder builder(graph, dtype);
          if (true_gradients) builder.use_true_gradients();
          const BuiltWorkload built = workload->build(builder, std::max<int64_t>(2, workload->info().min_batch),
                                                      WorkloadScale::kTiny);
          append_backward(graph, built.loss);
          const std::string where = workload->info().name + " " + dtype_name(dtype) +
                                    (true_gradients ? " true-gradients" : "");
          for (const Node& node : graph.nodes()) found.emplace(node.op, where);
        }
      }
    }
    return found;
  }();
  return ops;
}

std::set<std::string> as_set(const std::vector<std::string>& names) { return {names.begin(), names.end()}; }

// Names listed more than once (a later table's entry shadowed by an earlier one).
std::vector<std::string> repeated(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::vector<std::string> twice;
  for (size_t i = 1; i < names.size(); ++i) {
    if (names[i] == names[i - 1] && (twice.empty() || twice.back() != names[i])) twice.push_back(names[i]);
  }
  return twice;
}

TEST(OpCatalogue, NamesAreUniqueAndRowsFilledIn) {
  std::vector<std::string> names;
  for (const OpInfo& op : op_catalogue()) {
    names.emplace_back(op.name);
    EXPECT_FALSE(op.family.empty()) << op.name;
    EXPECT_EQ(find_op_info(op.name), &op);
  }
  EXPECT_GT(names.size(), 100u);
  EXPECT_EQ(repeated(names), std::vector<std::string>{});
  EXPECT_EQ(find_op_info("no_such_op"), nullptr);
}

TEST(OpCatalogue, EveryOpOfEveryWorkloadGraphIsCatalogued) {
  ASSERT_EQ(workload_registry().size(), 12u);
  ASSERT_GT(workload_ops().size(), 100u);
  for (const auto& [op, where] : workload_ops()) {
    EXPECT_NE(find_op_info(op), nullptr) << "op '" << op << "' (in " << where << ") is not in the op catalogue";
  }
}

// The reverse direction for the tables: a kernel or rule under a name nobody catalogued is an op added halfway
// (or a typo that no graph would ever reach).
TEST(OpCatalogue, EveryTableNamesOnlyCataloguedOps) {
  for (const std::string& op : cpu_kernel_ops()) EXPECT_NE(find_op_info(op), nullptr) << "cpu kernel '" << op << "'";
  for (const std::string& op : backward_rule_ops()) {
    EXPECT_NE(find_op_info(op), nullptr) << "backward rule '" << op << "'";
  }
  if (const auto cuda = cuda_kernel_ops()) {
    for (const std::string& op : *cuda) EXPECT_NE(find_op_info(op), nullptr) << "cuda kernel '" << op << "'";
  }
}

TEST(OpCatalogue, EveryCataloguedOpHasACpuKernel) {
  const std::set<std::string> cpu = as_set(cpu_kernel_ops());
  for (const OpInfo& op : op_catalogue()) {
    const std::string name(op.name);
    EXPECT_EQ(has_cpu_kernel(name), cpu.count(name) == 1) << name;  // the list and the lookup agree
    if (kNoCpuKernel.count(name) != 0) {
      EXPECT_FALSE(has_cpu_kernel(name)) << "'" << name << "' has a CPU kernel now: drop it from kNoCpuKernel";
    } else {
      EXPECT_TRUE(has_cpu_kernel(name)) << "op '" << name << "' has no CPU kernel (src/cpu/cpu_bindings.cpp)";
    }
  }
}

// A differentiable op has a rule; an op marked not differentiable has none (a rule added for it means the
// catalogue's mark is stale); an op that stops the gradient has a rule that says so.
TEST(OpCatalogue, BackwardRulesMatchTheGradientMarks) {
  const std::set<std::string> rules = as_set(backward_rule_ops());
  for (const OpInfo& op : op_catalogue()) {
    const std::string name(op.name);
    EXPECT_EQ(has_backward_rule(name), rules.count(name) == 1) << name;
    EXPECT_EQ(has_backward_rule(name), op.gradient != OpGradient::kNotDifferentiable)
        << "op '" << name << "' is marked " << op_gradient_name(op.gradient) << " but "
        << (has_backward_rule(name) ? "has" : "has no") << " backward rule (src/engine/backward_rules.cpp chain)";
  }
}

TEST(OpCatalogue, EveryWorkloadOpHasACudaKernel) {
  const auto cuda = cuda_kernel_ops();
  if (!cuda) GTEST_SKIP() << "built without the CUDA toolkit: there is no CUDA kernel table";
  const std::set<std::string> bound = as_set(*cuda);
  for (const auto& [op, where] : workload_ops()) {
    if (kNoCudaKernel.count(op) != 0) continue;
    EXPECT_EQ(bound.count(op), 1u) << "op '" << op << "' (in " << where << ") has no CUDA kernel "
                                   << "(src/cuda/cuda_bindings.cpp: its family's bindings)";
  }
  for (const std::string& op : kNoCudaKernel) {
    EXPECT_EQ(bound.count(op), 0u) << "'" << op << "' has a CUDA kernel now: drop it from kNoCudaKernel";
  }
}

TEST(OpCatalogue, EveryCataloguedOpHasACudaKernel) {
  const auto cuda = cuda_kernel_ops();
  if (!cuda) GTEST_SKIP() << "built without the CUDA toolkit: there is no CUDA kernel table";
  const std::set<std::string> bound = as_set(*cuda);
  for (const OpInfo& op : op_catalogue()) {
    EXPECT_EQ(bound.count(std::string(op.name)), 1u) << "op '" << op.name << "' has no CUDA kernel";
  }
}

// Stale names: a catalogue row that no table binds, or that no workload graph contains (an op left behind
// after its last user moved on) unless kInNoWorkload says why.
TEST(OpCatalogue, NoCatalogueEntryIsUnused) {
  const std::set<std::string> cpu = as_set(cpu_kernel_ops()), rules = as_set(backward_rule_ops());
  const auto cuda = cuda_kernel_ops();
  const std::set<std::string> bound_cuda = cuda ? as_set(*cuda) : std::set<std::string>{};
  for (const OpInfo& op : op_catalogue()) {
    const std::string name(op.name);
    EXPECT_TRUE(cpu.count(name) + rules.count(name) + bound_cuda.count(name) > 0)
        << "catalogued op '" << name << "' is in no table";
    if (kInNoWorkload.count(name) != 0) {
      EXPECT_EQ(workload_ops().count(name), 0u)
          << "'" << name << "' is in a workload graph now: drop it from kInNoWorkload";
    } else {
      EXPECT_EQ(workload_ops().count(name), 1u) << "catalogued op '" << name << "' is in no workload's graph";
    }
  }
}

// Each chain is walked in a fixed order and stops at the first table that knows the op: a name in two tables
// would make the second entry dead code.
TEST(OpCatalogue, NoOpIsInTwoTablesOfAChain) {
  EXPECT_EQ(repeated(cpu_kernel_ops()), std::vector<std::string>{});
  EXPECT_EQ(repeated(backward_rule_ops()), std::vector<std::string>{});
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

// Autodiff seeds the unit gradient at a loss: which ops are losses is their rows' `loss` flag, nowhere else.
TEST(OpCatalogue, LossOpsAreMarkedInTheirRowsAndNamedInTheError) {
  std::set<std::string> losses;
  for (const OpDef& op : op_registry()) {
    if (op.loss) losses.insert(std::string(op.name));
  }
  EXPECT_EQ(losses, (std::set<std::string>{"bce_with_logits_loss", "l1_loss", "mse_loss", "smooth_l1_loss",
                                           "softmax_cross_entropy", "softplus_loss", "span_loss",
                                           "squared_norm_loss", "yolo_loss"}));
  for (const std::string& name : losses) {
    EXPECT_NE(loss_op_names().find(name), std::string::npos) << name;
    EXPECT_TRUE(is_loss_node(Node{name, {}, {}, {}, false})) << name;
  }
  EXPECT_TRUE(is_loss_node(Node{"add", {}, {}, {{"loss_sum", 1.0}}, false}));
  EXPECT_FALSE(is_loss_node(Node{"add", {}, {}, {}, false}));
  EXPECT_FALSE(is_loss_node(Node{"softmax_cross_entropy_backward", {}, {}, {}, false}));
  // A graph whose "loss" is no loss op is refused with the list.
  Graph graph;
  GraphBuilder builder(graph, DType::kFloat32);
  const TensorId x = builder.input("x", {2, 3});
  const TensorId y = builder.gelu(x);
  try {
    append_backward(graph, y);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "the loss must be the output of a loss op (" + loss_op_names() + ")");
  }
}

}  // namespace
}  // namespace sb
