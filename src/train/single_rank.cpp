// The single-rank training loop (include/scalebench/single_rank.h). A step is forward, backward and the
// optimizer, timed between two marks on the executor's own timeline (CUDA events on its stream), so host
// work between steps (reading the loss back, which synchronises) is not counted.
#include "scalebench/single_rank.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "scalebench/autodiff.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "scalebench/planner.h"

namespace sb {
namespace {

// What the CUDA context, cuBLASLt workspaces and NCCL buffers take outside the plan (measured on H200:
// ~0.6 GiB for the context and handles); 2 GiB keeps a margin until the memory issue measures it per run.
constexpr uint64_t kDeviceReserveBytes = 2ull << 30;

struct Planned {
  Graph graph;
  BuiltWorkload built;
  std::map<TensorId, TensorId> gradients;
  MemoryPlan plan;
};

void build_and_plan(const Workload& workload, int64_t batch, WorkloadScale scale, Precision precision,
                    bool recompute, Planned& out) {
  GraphBuilder builder(out.graph, activation_dtype(precision));
  out.built = workload.build(builder, batch, scale);
  out.gradients = append_backward(out.graph, out.built.loss);
  if (recompute) recompute_in_backward(out.graph, {"gelu"});
  out.plan = plan_memory(out.graph);
}

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return text;
}

// Weights as the references initialise them in spirit: N(0, 0.02) everywhere, LayerNorm gains 1 and biases 0.
void initialise_parameters(const Graph& graph, uint64_t seed, Executor& executor) {
  std::mt19937_64 random(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) {
    const TensorInfo& info = graph.tensor(p);
    const bool norm = info.name.find("orm") != std::string::npos;
    const bool bias = info.name.find("bias") != std::string::npos;
    std::vector<float> values(static_cast<size_t>(info.elements()));
    for (float& v : values) v = norm ? (bias ? 0.0f : 1.0f) : (bias ? 0.0f : normal(random));
    executor.write_tensor(p, values.data(), info.bytes());
  }
}

}  // namespace

uint64_t single_rank_bytes(const Workload& workload, int64_t batch, WorkloadScale scale, Precision precision,
                           bool recompute, int state_buffers) {
  Planned planned;
  build_and_plan(workload, batch, scale, precision, recompute, planned);
  return planned.plan.total_bytes + static_cast<uint64_t>(state_buffers) * planned.plan.parameter_bytes;
}

SingleRankResult train_single_rank(const SingleRankOptions& options, Device& device) {
  const Workload& workload = find_workload(options.workload);
  if (options.steps < 1) throw UsageError("--steps must be at least 1");
  if (options.warmup_steps < 0) throw UsageError("--warmup must not be negative");
  if (precision_needs_cuda(options.precision) && device.kind() != DeviceKind::kCuda) {
    throw UsageError(std::string("--precision ") + precision_name(options.precision) +
                     " needs the cuda device (the cpu device is the fp32 reference)");
  }
  validate_optimizer(options.optimizer);
  const int state_buffers = optimizer_state_buffers(options.optimizer.kind);
  const int64_t batch = options.batch > 0 ? options.batch : workload.info().default_batch;
  Planned planned;
  build_and_plan(workload, batch, options.scale, options.precision, options.recompute, planned);

  const uint64_t needed =
      planned.plan.total_bytes + static_cast<uint64_t>(state_buffers) * planned.plan.parameter_bytes;
  const uint64_t total = device.description().total_memory;
  const uint64_t usable = device.kind() == DeviceKind::kCuda && total > kDeviceReserveBytes ? total - kDeviceReserveBytes : total;
  if (needed > usable) {
    const int64_t fits = largest_batch_that_fits(
        [&](int64_t b) {
          return single_rank_bytes(workload, b, options.scale, options.precision, options.recompute, state_buffers);
        },
        usable, batch);
    throw RuntimeFailure(workload.info().name + " at batch " + std::to_string(batch) + " needs " + gib(needed) +
                         ", device has " + gib(usable) + " usable; largest batch that fits: " + std::to_string(fits));
  }
  std::unique_ptr<Executor> executor;
  if (device.kind() == DeviceKind::kCuda) {
    executor = make_cuda_executor(planned.graph, planned.plan, options.precision == Precision::kTf32);
  } else {
    executor = std::make_unique<CpuExecutor>(planned.graph, planned.plan);
  }
  workload.synthesize(planned.graph, options.seed, [&](TensorId id, const void* data, size_t bytes) {
    executor->write_tensor(id, data, bytes);
  });
  initialise_parameters(planned.graph, options.seed + 1000, *executor);

  SingleRankResult result;
  result.workload = workload.info().name;
  result.batch = batch;
  result.parameters = planned.graph.parameter_count();
  result.units_per_step = planned.built.units_per_step;
  result.train_flops_per_step = matmul_flops(planned.graph, true);
  result.plan_bytes = needed;
  auto check_loss = [&](float loss, int step) {
    if (!std::isfinite(loss)) {
      throw RuntimeFailure(result.workload + ": the loss is not finite at step " + std::to_string(step));
    }
    result.losses.push_back(loss);
  };
  const int total_steps = options.warmup_steps + options.steps;
  for (int step = 0; step < total_steps; ++step) {
    executor->set_random_stream(options.seed, static_cast<uint64_t>(step));
    executor->mark(0);
    executor->run();
    executor->optimizer_step(options.optimizer, step + 1);
    executor->mark(1);
    const double ms = executor->elapsed_ms(0, 1);
    float loss = 0;
    executor->read_tensor(planned.built.loss, &loss, sizeof loss);
    check_loss(loss, step);
    if (step >= options.warmup_steps) result.step_ms.push_back(ms);
  }
  if (options.profile_step) {  // one more step, a mark between nodes: where the time goes
    executor->set_random_stream(options.seed, static_cast<uint64_t>(total_steps));
    const Executor::StepProfile profile = executor->profile_step(options.optimizer, total_steps + 1);
    std::map<std::string, double> by_category, by_op;
    for (size_t i = 0; i < profile.node_ms.size(); ++i) {
      const Node& node = planned.graph.nodes()[i];
      by_category[op_category(node)] += profile.node_ms[i];
      by_op[node.op + (node.backward ? " (backward)" : "")] += profile.node_ms[i];
    }
    by_category["optimizer"] += profile.optimizer_ms;
    by_op[optimizer_name(options.optimizer.kind)] += profile.optimizer_ms;
    auto largest_first = [](const std::map<std::string, double>& totals) {
      std::vector<std::pair<std::string, double>> sorted(totals.begin(), totals.end());
      std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
      return sorted;
    };
    result.breakdown_ms = largest_first(by_category);
    result.op_ms = largest_first(by_op);
    float loss = 0;
    executor->read_tensor(planned.built.loss, &loss, sizeof loss);
    check_loss(loss, total_steps);
  }
  return result;
}

}  // namespace sb
