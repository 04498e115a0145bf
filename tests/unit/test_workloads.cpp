// Every registered workload: its full-scale graph has exactly shared/WORKLOADS.md's parameter count and can
// be differentiated and planned; its tiny graph trains on the CPU device (finite loss near log(vocab) at
// the start, falling on a repeated batch under SGD with gradient clipping).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "scalebench/planner.h"
#include "scalebench/workload.h"

namespace sb {
namespace {

TEST(Workloads, RegistryNamesAndLookup) {
  ASSERT_FALSE(workload_registry().empty());
  EXPECT_EQ(find_workload("transformer_big").info().unit, "tokens");
  EXPECT_THROW(find_workload("resnet9000"), UsageError);
  EXPECT_EQ(parse_workload_scale("tiny"), WorkloadScale::kTiny);
  EXPECT_THROW(parse_workload_scale("huge"), UsageError);
}

class EveryWorkload : public ::testing::TestWithParam<const Workload*> {};

TEST_P(EveryWorkload, FullScaleParameterCountAndPlan) {
  const Workload& workload = *GetParam();
  Graph graph;
  GraphBuilder builder(graph);
  BuiltWorkload built = workload.build(builder, workload.info().default_batch, WorkloadScale::kFull);
  EXPECT_EQ(graph.parameter_count(), workload.info().full_parameters);
  EXPECT_EQ(graph.frozen_parameter_count(), workload.info().frozen_parameters);  // pix2pixhd's VGG19, maskrcnn's res2
  const auto gradients = append_backward(graph, built.loss);
  EXPECT_EQ(gradients.size(), graph.tensors_with_role(TensorRole::kParameter).size());
  MemoryPlan plan = plan_memory(graph);
  EXPECT_EQ(plan.parameter_bytes, plan.gradient_bytes);
  EXPECT_GE(plan.parameter_bytes, static_cast<uint64_t>(workload.info().full_parameters) * 4);
  EXPECT_GT(plan.activation_peak_bytes, 0u);
  EXPECT_GT(built.units_per_step, 0);
}

// A tiny instance on the CPU device with synthetic inputs and small random weights (LayerNorm gains 1). For the
// finite differences (GraphBuilder::use_true_gradients: GradMultiply unscaled, Mask R-CNN's proposals
// undecoded) the ReLU or LeakyReLU fused into each BatchNorm becomes the identity
// (make_batchnorm_activations_linear): a central difference across a kink averages the two slopes, and a
// BatchNorm CNN has thousands of activations within h of theirs (yolov3's tiny graph at widths 2 and 4: 13-23%
// error from the kinks alone, 0.2% without; measured). The fused activation's own backward is checked by
// finite differences in test_engine_batchnorm.cpp; TinyScaleTrainsOnTheCpu trains the graph as built.
struct TinyRun {
  Graph graph;
  BuiltWorkload built;
  std::map<TensorId, TensorId> gradients;
  MemoryPlan plan;
  std::unique_ptr<CpuExecutor> executor;

  // finite_differences: the graph the central differences can follow exactly: GradMultiply (conv_seq2seq) passes
  // gradients unscaled, so they are the loss's true ones, and the activations fused into BatchNorm become linear.
  explicit TinyRun(const Workload& workload, bool finite_differences = false) {
    GraphBuilder builder(graph);
    if (finite_differences) builder.use_true_gradients();
    built = workload.build(builder, 3, WorkloadScale::kTiny);
    if (finite_differences) make_batchnorm_activations_linear(graph);
    gradients = append_backward(graph, built.loss);
    plan = plan_memory(graph);
    executor = std::make_unique<CpuExecutor>(graph, plan);
    workload.synthesize(graph, 42, [&](TensorId id, const void* data, size_t bytes) {
      ASSERT_EQ(bytes, graph.tensor(id).bytes()) << graph.tensor(id).name;
      std::memcpy(executor->f32(id), data, bytes);
    });
    uint32_t seed = 1;
    for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) {
      const TensorInfo& info = graph.tensor(p);
      // A workload's own initial distribution (stylegan's equalized learning rate: N(0, 1) weights), except that
      // zero or constant starts (biases, noise strengths) get a little noise too, so every path is exercised.
      if (const std::optional<ParameterInit> init = workload.parameter_init(info.name)) {
        std::mt19937 random(seed++);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        const float stddev = init->stddev == 0 ? 0.1f : init->stddev;
        for (int64_t i = 0; i < info.elements(); ++i) executor->f32(p)[i] = init->mean + stddev * normal(random);
        continue;
      }
      const bool gain = (info.name.find("norm") != std::string::npos || info.name.find("LayerNorm") != std::string::npos) &&
                        info.name.find("bias") == std::string::npos;
      std::mt19937 random(seed++);
      std::normal_distribution<float> normal(0.0f, 0.1f);
      for (int64_t i = 0; i < info.elements(); ++i) executor->f32(p)[i] = gain ? 1.0f + normal(random) : normal(random);
    }
  }
  float loss() { return *executor->f32(built.loss); }

  // Sub-step k's parts (input switches, unsupmt's decode loop; nothing for a graph without sub-steps), then its
  // training pass: one sub-step as the trainer runs it.
  void run_parts(size_t k) {
    if (graph.sub_steps().empty()) return;
    for (const StepPart& part : graph.sub_steps()[k].parts) {
      for (int64_t r = 0; r < part.repeat; ++r) executor->run_nodes(part.begin, part.end);
    }
  }
  void run_sub_step(size_t k) {
    run_parts(k);
    executor->run_nodes(graph.training_begin(), graph.nodes().size());
  }
};

// The branch each piecewise-linear forward node takes, element by element: the sign of a ReLU's or LeakyReLU's
// output (a BatchNorm's fused one too) and max pooling's argmax, read after a forward run (the backward pass
// reads these outputs, so no later forward node overwrites them). A finite difference whose steps change
// them spans a kink.
std::vector<int32_t> branches_taken(TinyRun& run, size_t forward_nodes) {
  std::vector<int32_t> taken;
  for (size_t n = 0; n < forward_nodes; ++n) {
    const Node& node = run.graph.nodes()[n];
    if (node.outputs.empty()) continue;  // stylegan's ema_update writes its kState in place
    const int64_t elements = run.graph.tensor(node.outputs[0]).elements();
    const bool fused = node.op == "batchnorm" && node.attributes.count("activation") != 0 &&
                       node.attributes.at("activation") != 0;
    if (node.op == "relu" || node.op == "leaky_relu" || fused) {
      const float* y = run.executor->f32(node.outputs[0]);
      for (int64_t i = 0; i < elements; ++i) taken.push_back(y[i] > 0);
    } else if (node.op == "max_pool2d") {
      const int32_t* argmax = run.executor->i32(node.outputs[1]);
      taken.insert(taken.end(), argmax, argmax + elements);
    } else if (node.op == "frozen_affine" && node.attributes.at("relu") != 0) {
      const float* y = run.executor->f32(node.outputs[0]);
      for (int64_t i = 0; i < elements; ++i) taken.push_back(y[i] > 0);
    } else if (node.op == "rpn_proposals" || node.op == "roi_sample") {
      // Mask R-CNN's discrete choices: which anchors become proposals, which candidates are sampled.
      const TensorId chosen = node.outputs[node.op == "rpn_proposals" ? 1 : 4];
      const int32_t* index = run.executor->i32(chosen);
      taken.insert(taken.end(), index, index + run.graph.tensor(chosen).elements());
    }
  }
  return taken;
}

// With sub-steps, the last one's parts run once (unsupmt: the back-translation's greedy generation, which has
// no gradient) and the differences follow its training pass alone, on the inputs the parts switched in.
TEST_P(EveryWorkload, TinyScaleGradientsMatchFiniteDifferences) {
  TinyRun run(*GetParam(), true);
  run.run_sub_step(run.graph.sub_step_count() - 1);
  const size_t begin = run.graph.training_begin();
  const size_t forward = run.executor->forward_node_count();
  run.executor->run_nodes(begin, forward);  // the backward pass reuses some forward outputs' memory
  const std::vector<int32_t> unperturbed = branches_taken(run, forward);
  std::mt19937 random(9);
  double diff_sq = 0, num_sq = 0;
  int checked = 0, skipped = 0;
  for (const auto& [parameter, gradient] : run.gradients) {
    const int64_t n = run.graph.tensor(parameter).elements();
    // The largest-gradient element and two random ones of every parameter tensor.
    int64_t largest = 0;
    for (int64_t i = 1; i < n; ++i) {
      if (std::fabs(run.executor->f32(gradient)[i]) > std::fabs(run.executor->f32(gradient)[largest])) largest = i;
    }
    for (int64_t i : {largest, static_cast<int64_t>(random() % n), static_cast<int64_t>(random() % n)}) {
      const double analytic = run.executor->f32(gradient)[i];
      float& value = run.executor->f32(parameter)[i];
      const float saved = value;
      bool spans_kink = false;
      auto loss_at = [&](double offset) {
        value = static_cast<float>(saved + offset);
        run.executor->run_nodes(begin, forward);
        spans_kink = spans_kink || branches_taken(run, forward) != unperturbed;
        return static_cast<double>(run.loss());
      };
      auto central_difference = [&](double eps) { return (loss_at(eps) - loss_at(-eps)) / (2 * eps); };
      // Richardson extrapolation of two central differences cancels their h^2 term. h = 1e-2 spans kinks
      // (ReLU, max) for some elements of mt_dnn's SAN and embeddings (5% off, converging as h shrinks);
      // 1e-3 keeps every workload below 0.7% while fp32 rounding of the loss stays far below that. Where a
      // ReLU or max pool changes branch within the steps, the step shrinks 4x: a tiny BatchNorm CNN is too
      // rough for 1e-3 (deeplabv3: 9-15% off over five weight seeds, 0.6-0.8% with kinks avoided). Below
      // 6.25e-5 the fp32 loss's rounding (~1e-7) would dominate, so an element still spanning a kink there
      // is left out (deeplabv3: 9-26% of them), and at most half may be.
      double numeric = 0;
      bool compared = false;
      for (double h = 1e-3; h >= 6.25e-5 && !compared; h /= 4) {
        spans_kink = false;
        numeric = (4 * central_difference(h) - central_difference(2 * h)) / 3;
        compared = !spans_kink;
      }
      value = saved;
      if (!compared) {
        ++skipped;
        continue;
      }
      diff_sq += (numeric - analytic) * (numeric - analytic);
      num_sq += numeric * numeric;
      ++checked;
    }
  }
  ASSERT_GT(num_sq, 0);
  const std::string counts = std::to_string(checked) + " elements compared, " + std::to_string(skipped) + " left out";
  EXPECT_LE(skipped, checked) << GetParam()->info().name << ": " << counts;
  EXPECT_LT(std::sqrt(diff_sq / num_sq), 2e-2) << GetParam()->info().name << ": " << counts;
}

// SGD with lr 0.5 and the global gradient norm clipped to 1 (BERT's clip_by_global_norm, mt-dnn's
// --global_grad_clipping 1.0): without the clip mt_dnn's first step (gradient norm 3.9) overshoots and diverges.
// A graph of S sub-steps takes 20 steps of each in turn; the loss compared is the first sub-step's.
//
// stylegan's loss is loss_D + loss_G, a saddle: each network's gradient comes from its own loss only, and what D
// gains G loses (the sum tends to 3 ln 2 however well both train). There the discriminator alone is updated
// (parameter group "D", G fixed) and the loss compared is the D part's (the first term of the sum): D learns
// to tell the repeated batch's reals from G's fakes.
TEST_P(EveryWorkload, TinyScaleTrainsOnTheCpu) {
  TinyRun run(*GetParam());
  const bool adversarial = GetParam()->info().name == "stylegan";
  TensorId watched = run.built.loss;
  if (adversarial) {
    for (const Node& node : run.graph.nodes()) {
      if (!node.backward && !node.outputs.empty() && node.outputs[0] == run.built.loss) watched = node.inputs[0];
    }
    ASSERT_NE(watched, run.built.loss);
  }
  auto updated = [&](TensorId parameter) { return !adversarial || run.graph.tensor(parameter).parameter_group == "D"; };
  auto loss = [&] { return *run.executor->f32(watched); };
  const size_t sub_steps = run.graph.sub_step_count();
  run.run_sub_step(0);
  const float first = loss();
  ASSERT_TRUE(std::isfinite(first));
  for (size_t step = 0; step < 20 * sub_steps; ++step) {
    double norm_sq = 0;
    for (const auto& [parameter, gradient] : run.gradients) {
      if (!updated(parameter)) continue;
      for (int64_t i = 0; i < run.graph.tensor(parameter).elements(); ++i) {
        norm_sq += static_cast<double>(run.executor->f32(gradient)[i]) * run.executor->f32(gradient)[i];
      }
    }
    const float rate = 0.5f * static_cast<float>(std::min(1.0, 1.0 / std::sqrt(norm_sq)));
    for (const auto& [parameter, gradient] : run.gradients) {
      if (!updated(parameter)) continue;
      for (int64_t i = 0; i < run.graph.tensor(parameter).elements(); ++i) {
        run.executor->f32(parameter)[i] -= rate * run.executor->f32(gradient)[i];
      }
    }
    run.run_sub_step((step + 1) % sub_steps);
  }
  const float last = loss();
  EXPECT_TRUE(std::isfinite(last));
  EXPECT_LT(last, 0.8f * first) << GetParam()->info().name << ": first " << first << " last " << last;
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryWorkload, ::testing::ValuesIn(workload_registry()),
                         [](const auto& info) { return info.param->info().name; });

}  // namespace
}  // namespace sb
