// What zero3's parameters at 1/N cost the step, measured on one GPU at full scale (a benchmark, disabled by default:
// gpu_tests --gtest_also_run_disabled_tests --gtest_filter='*ParameterBlocksCost*'). Per workload (SB_COST_WORKLOADS,
// default transformer_big bert_base mt_dnn yolov3), bf16 at the default batch, laid out for two ranks' shards and
// trained by this rank alone: the replica with the parameter region whole against the one with the parameters in
// blocks, each step profiled node by node (median of 10 after 3 warm-up). The blocks' extra time is the backward
// casts of the copies (the dp_only_nodes of run; DESIGN.md "the parameters at 1/N") plus each unit's copy from the
// shard into its blocks (on one rank an on-stream copy; with a reducer, an all-gather on the communication stream),
// the figure plan predicts as dp_only_node_ms. Two ranks sharing one GPU cannot time this; one rank alone can.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "scalebench/device.h"
#include "scalebench/optimizer.h"
#include "scalebench/workload.h"
#include "src/core/backward_parameter_copies.h"
#include "src/train/phase_steps.h"
#include "src/train/replica.h"

namespace sb {
namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct ProfiledStep {
  double step_ms = 0;      // every node and the optimizer, medians summed
  double recasts_ms = 0;   // the backward casts of parameter copies
  size_t recasts = 0;
  double gib = 0;          // the arena (the plan's total bytes; the shards lie beside it)
};

ProfiledStep profile(Device& device, const std::string& workload, GradientLayout layout) {
  ReplicaOptions options;
  options.workload = workload;
  options.batch = find_workload(workload).info().default_batch;
  options.precision = Precision::kBf16;
  options.ranks = 2;  // laid out as one rank of a two-rank job; run here alone
  options.strategy = DataParallelStrategy::kZero3;
  options.gradient_layout = layout;
  std::unique_ptr<Replica> replica = build_replica(options, device, 1, 0, 7);
  EXPECT_EQ(replica->plan.parameters_in_blocks, layout == GradientLayout::kBlocks) << workload;
  weight_losses_locally(*replica);
  const OptimizerSettings settings = default_optimizer(OptimizerKind::kAdamW);
  std::vector<std::vector<double>> node_ms(replica->graph.nodes().size());
  std::vector<double> optimizer_ms;
  for (int step = 1; step <= 13; ++step) {
    replica->executor->set_random_stream(3, static_cast<uint64_t>(step));
    const Executor::StepProfile p = replica->executor->profile_step(settings, step);
    if (step <= 3) continue;
    for (size_t i = 0; i < p.node_ms.size(); ++i) node_ms[i].push_back(p.node_ms[i]);
    optimizer_ms.push_back(p.optimizer_ms);
  }
  ProfiledStep out;
  out.step_ms = median(optimizer_ms);
  out.gib = static_cast<double>(replica->plan.total_bytes) / (1ull << 30);
  const Graph& graph = replica->graph;
  for (size_t i = 0; i < node_ms.size(); ++i) {
    const double ms = median(node_ms[i]);
    out.step_ms += ms;
    if (casts_a_backward_copy(graph, graph.nodes()[i])) {
      out.recasts_ms += ms;
      ++out.recasts;
    }
  }
  return out;
}

TEST(ParameterBlocksCost, DISABLED_FullScaleOnOneGpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const char* chosen = std::getenv("SB_COST_WORKLOADS");
  std::istringstream names(chosen ? chosen : "transformer_big bert_base mt_dnn yolov3");
  auto device = make_cuda_device(0);
  for (std::string workload; names >> workload;) {
    const ProfiledStep whole = profile(*device, workload, GradientLayout::kWhole);
    const ProfiledStep blocks = profile(*device, workload, GradientLayout::kBlocks);
    EXPECT_EQ(whole.recasts, 0u) << workload;
    EXPECT_GT(blocks.recasts, 0u) << workload << ": bf16 weight casts read again by the backward pass";
    std::printf("[ cost     ] %s bf16 batch %lld: regions whole %.2f ms (arena %.2f GiB), parameters in blocks "
                "%.2f ms (arena %.2f GiB): +%.2f ms, of which %zu backward casts of the copies %.2f ms\n",
                workload.c_str(), static_cast<long long>(find_workload(workload).info().default_batch),
                whole.step_ms, whole.gib, blocks.step_ms, blocks.gib, blocks.step_ms - whole.step_ms, blocks.recasts,
                blocks.recasts_ms);
  }
}

}  // namespace
}  // namespace sb
