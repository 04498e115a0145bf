// One prediction of `scalebench plan` (include/scalebench/plan.h): memory from the real plan, the solo step from
// a roofline per node, the data-parallel step from the bucket timeline on the chosen path.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "scalebench/byte_text.h"
#include "scalebench/error.h"
#include "scalebench/plan.h"
#include "scalebench/replica_plan.h"
#include "src/core/backward_parameter_copies.h"
#include "src/core/unit_gathers.h"
#include "src/plan/paths.h"
#include "src/plan/pytorch_memory.h"

namespace sb {
namespace {

ReplicaPlanOptions replica_options(const std::string& workload, Precision precision, int64_t batch,
                                   double bucket_mb, OptimizerKind optimizer) {
  ReplicaPlanOptions options;
  options.workload = workload;
  options.batch = batch;
  options.precision = precision;
  options.bucket_bytes = static_cast<uint64_t>(bucket_mb * (1 << 20));
  options.optimizer_state_buffers = optimizer_state_buffers(optimizer);
  return options;
}

// The memory of a batch as `gpus` GPUs under `strategy` hold it: ddp plans one replica alone (the graph of one rank;
// more ranks only split a tied table, a few bytes), a sharded strategy for its shards.
struct Sharding {
  DataParallelStrategy strategy = DataParallelStrategy::kDdp;
  int gpus = 1;
  bool operator<(const Sharding& other) const {
    return std::tie(strategy, gpus) < std::tie(other.strategy, other.gpus);
  }
};

Sharding memory_sharding(DataParallelStrategy strategy, int gpus) {
  return shards_optimizer(strategy) && gpus > 1 ? Sharding{strategy, gpus} : Sharding{};
}

// Planning a full graph takes a noticeable fraction of a second; --table and the batch searches repeat them.
uint64_t planned_bytes(const std::string& workload, Precision precision, int64_t batch, const Sharding& sharding,
                       OptimizerKind optimizer) {
  static std::map<std::tuple<std::string, Precision, int64_t, Sharding, OptimizerKind>, uint64_t> cache;
  const auto key = std::make_tuple(workload, precision, batch, sharding, optimizer);
  auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  ReplicaPlanOptions options = replica_options(workload, precision, batch, 25, optimizer);
  options.strategy = sharding.strategy;
  options.ranks = sharding.gpus;
  const uint64_t bytes = plan_replica_graph(options).cuda_needed_bytes;
  cache.emplace(key, bytes);
  return bytes;
}

// The plan's buckets in the order the trainer issues their reductions: by the node that completes each.
std::vector<GradientBucket> buckets_in_issue_order(const MemoryPlan& plan) {
  std::vector<GradientBucket> buckets = plan.buckets;
  std::stable_sort(buckets.begin(), buckets.end(), [](const GradientBucket& a, const GradientBucket& b) {
    return a.ready_after_node < b.ready_after_node;
  });
  return buckets;
}

// One ring all-gather of `bytes` (every rank's chunk together) on `path`, in ms.
double all_gather_ms(const CommPath& path, double bytes, const Calibration& calibration) {
  return 1e-3 * ring_scatter_gather_cost(path, bytes, calibration.latency).us();
}

// A sharded strategy's step: each GPU updates its shard's part of every bucket (issue order as in `input`), then
// all-gathers the updated shards: zero1 one gather of the padded region after its last update, zero2 one per
// bucket after that bucket's update; zero3 gathers each bucket before its use instead (src/core/unit_gathers.h,
// the training pass of sub-step 0: the parts' gathers are added to the parts by the caller). zero1's GPUs differ
// (GPU r updates the buckets of its range, which the backward pass finishes at different times), so each is
// simulated and the slowest kept; zero2's and zero3's are alike. *wire_bytes grows by the gathered bytes.
TimelineResult sharded_step_timeline(const TimelineInput& input, int first_backward, const Graph& graph,
                                     const MemoryPlan& plan, const CommPath& path, const GpuSpec& gpu,
                                     const Calibration& calibration, DataParallelStrategy strategy, int gpus,
                                     OptimizerKind optimizer, double* wire_bytes) {
  const std::vector<GradientBucket> buckets = buckets_in_issue_order(plan);
  auto update_ms = [&](double bytes) {
    return bytes > 0 ? optimizer_ms(bytes, optimizer_bytes_per_gradient_byte(optimizer), gpu, calibration.compute)
                     : 0.0;
  };
  auto gather_ms = [&](double bytes) { return all_gather_ms(path, bytes, calibration); };
  const bool by_bucket = shards_by_bucket(strategy), before_use = gathers_before_use(strategy);
  // Every bucket's chunks (zero2) or the padded parameter region (zero1), as the trainer gathers them; zero3's below.
  if (!before_use) *wire_bytes += static_cast<double>(by_bucket ? plan.gradient_bytes : plan.gradient_region_offset);
  TimelineResult slowest;
  bool first = true;
  for (int rank = 0; rank < (by_bucket ? 1 : gpus); ++rank) {
    const ParameterShard shard = parameter_shard(plan, rank, gpus);
    TimelineInput mine = input;
    mine.bucket_update_ms.clear();
    mine.dp_whole_update_ms = update_ms(static_cast<double>(shard.count) * sizeof(float));
    int last_owned = -1;
    for (size_t b = 0; b < buckets.size(); ++b) {
      const auto begin = static_cast<int64_t>((buckets[b].offset - plan.gradient_region_offset) / sizeof(float));
      const auto end = begin + static_cast<int64_t>(buckets[b].bytes / sizeof(float));
      int64_t owned = 0;
      for (const ShardRange& r : shard.ranges) {
        owned += std::max<int64_t>(0, std::min(end, r.first + r.count) - std::max(begin, r.first));
      }
      mine.bucket_update_ms.push_back(update_ms(static_cast<double>(owned) * sizeof(float)));
      if (owned > 0) last_owned = static_cast<int>(b);
      if (by_bucket && !before_use) {
        mine.gather_ms.push_back(gather_ms(static_cast<double>(buckets[b].bytes)));
        mine.gather_after_update.push_back(static_cast<int>(b));
      }
    }
    if (before_use) {
      int issue = -1;  // the first unit at the step's start, each next one at the node of the one before
      for (const ParameterGather& g : unit_gathers(graph, plan, buckets, 0, static_cast<size_t>(first_backward))) {
        if (g.when == ParameterGather::When::kBeforeParts) continue;
        const auto bytes = static_cast<double>(buckets[g.bucket].bytes);
        mine.gather_ms.push_back(gather_ms(bytes));
        mine.gather_issue_node.push_back(issue);
        mine.gather_needed_node.push_back(static_cast<int>(g.node));
        issue = static_cast<int>(g.node);
        *wire_bytes += bytes;
      }
    }
    if (!by_bucket) {
      mine.gather_ms.push_back(gather_ms(static_cast<double>(plan.gradient_region_offset)));
      mine.gather_after_update.push_back(last_owned);
    }
    // Gradient blocks: the node after a block's release waits for its buckets' reduce-scatters, as the reducer's
    // compute stream does (with overlap; without, every block lives until the reductions after the last node).
    if (plan.gradients_in_blocks && input.overlap) {
      for (const GradientBucket& bucket : buckets) {
        const GradientBlock& block = plan.gradient_blocks.at(static_cast<size_t>(bucket.block));
        mine.bucket_needed_node.push_back(block.released_after_node + 1);
      }
    }
    const TimelineResult result = simulate_step(mine, first_backward);
    if (first || result.step_ms > slowest.step_ms) slowest = result;
    first = false;
  }
  return slowest;
}

}  // namespace

double optimizer_bytes_per_gradient_byte(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kAdamW:
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamax:
      return kAdamwBytesPerGradientByte;
    case OptimizerKind::kSgdMomentum:
    case OptimizerKind::kNag:
      return 5.0;
  }
  return kAdamwBytesPerGradientByte;
}

uint64_t usable_bytes(const GpuSpec& gpu, double memory_gib) {
  const double total = (memory_gib > 0 ? memory_gib : gpu.memory_gb) * static_cast<double>(1ull << 30);
  return total > kPlanDeviceReserveBytes ? static_cast<uint64_t>(total) - kPlanDeviceReserveBytes : 0;
}

int64_t plan_max_batch(const std::string& workload, Precision precision, uint64_t capacity_bytes,
                       DataParallelStrategy strategy, int gpus, OptimizerKind optimizer) {
  const Sharding sharding = memory_sharding(strategy, gpus);
  static std::map<std::tuple<std::string, Precision, uint64_t, Sharding, OptimizerKind>, int64_t> cache;
  const auto key = std::make_tuple(workload, precision, capacity_bytes, sharding, optimizer);
  if (auto found = cache.find(key); found != cache.end()) return found->second;
  auto bytes = [&](int64_t batch) { return planned_bytes(workload, precision, batch, sharding, optimizer); };
  // Bytes grow about linearly with the batch: two plans give the slope, the search then plans near the answer.
  const int64_t reference = find_workload(workload).info().default_batch;
  const double at_ref = static_cast<double>(bytes(reference));
  const double at_double = static_cast<double>(bytes(2 * reference));
  const double per_sample = std::max(1.0, (at_double - at_ref) / reference);
  const double guess = reference + (static_cast<double>(capacity_bytes) - at_ref) / per_sample;
  int64_t upper = std::max<int64_t>(2, static_cast<int64_t>(guess * 1.05) + 2);
  while (bytes(upper) <= capacity_bytes) upper *= 2;
  const int64_t fits = largest_batch_that_fits(bytes, capacity_bytes, upper, find_workload(workload).info().min_batch);
  cache.emplace(key, fits);
  return fits;
}

Precision resolve_plan_precision(const GpuSpec& gpu, const std::string& text) {
  if (text == "auto") return gpu.tensor_cores_for("bf16") ? Precision::kBf16 : Precision::kFp16;
  const Precision precision = parse_precision(text);
  if (precision == Precision::kBf16 && !gpu.tensor_cores_for("bf16")) {
    throw UsageError(gpu.name + " (" + gpu.architecture + ") has no bf16; use --precision fp16");
  }
  if (precision == Precision::kTf32 && !gpu.tensor_cores_for("tf32")) {
    throw UsageError(gpu.name + " (" + gpu.architecture + ") has no TF32 tensor cores; use --precision fp32");
  }
  return precision;
}

PlanPrediction predict_plan(const PlanRequest& request, const HardwareDatabase& db, const Calibration& calibration,
                            const PytorchMemoryTable* pytorch) {
  PlanPrediction out;
  out.request = request;
  out.gpu = &db.gpu(request.gpu);
  const GpuSpec& gpu = *out.gpu;
  out.precision = resolve_plan_precision(gpu, request.precision);
  if (request.grad_dtype != "fp32" && request.grad_dtype != "bf16") {
    throw UsageError("--grad-dtype must be fp32 or bf16");
  }
  const DataParallelStrategy strategy = parse_strategy(request.strategy);
  const bool sharded = shards_optimizer(strategy) && request.gpus > 1;
  const Workload& workload = find_workload(request.workload);
  out.optimizer = request.optimizer == "reference" ? workload.reference_optimizer().kind
                                                   : parse_optimizer_kind(request.optimizer);
  out.unit = workload.info().unit;
  out.batch_unit = workload.info().batch_unit_name();
  out.capacity_bytes = usable_bytes(gpu, request.memory_gib);
  if (request.framework == "pytorch") {
    const std::vector<const PytorchMemoryFit*> lines = (pytorch ? *pytorch : builtin_pytorch_memory()).of(request.workload);
    if (lines.empty()) throw UsageError(no_pytorch_measurement(request.workload));
    for (const PytorchMemoryFit* line : lines) {
      out.pytorch_fits.push_back({line->mode, line->precision, pytorch_max_batch(*line, out.capacity_bytes),
                                  line->gpu + ", torch " + line->torch + ", " + line->date});
    }
  } else if (request.framework != "scalebench") {
    throw UsageError("--framework must be scalebench or pytorch, not '" + request.framework + "'");
  }

  // Memory: the largest batch per precision this GPU runs (bf16 and fp16 plan alike; tf32 as fp32).
  std::vector<Precision> precisions{Precision::kFp32};
  if (gpu.tensor_cores_for("bf16")) precisions.push_back(Precision::kBf16);
  precisions.push_back(Precision::kFp16);
  for (Precision p : precisions) {
    out.fits.push_back(
        {p, plan_max_batch(request.workload, p, out.capacity_bytes, strategy, request.gpus, out.optimizer)});
  }
  const int64_t largest =
      plan_max_batch(request.workload, out.precision, out.capacity_bytes, strategy, request.gpus, out.optimizer);
  if (largest == 0) {
    const int64_t smallest = find_workload(request.workload).info().min_batch;
    const uint64_t needed = planned_bytes(request.workload, out.precision, smallest,
                                          memory_sharding(strategy, request.gpus), out.optimizer);
    throw UsageError(request.workload + " does not fit on " + gpu.name + " even at batch " + std::to_string(smallest) +
                     " (" + gib_text(needed) + " needed, " + gib_text(out.capacity_bytes) + " usable)");
  }
  if (request.batch > 0) {
    out.batch = request.batch;
    if (request.batch > largest) {
      out.notes.push_back("batch " + std::to_string(request.batch) +
                          " does not fit (largest: " + std::to_string(largest) + "); predicted as if it did");
    }
  } else {
    out.batch = std::min<int64_t>(workload.info().default_batch, largest);
    out.batch_reduced = out.batch < workload.info().default_batch;
  }

  ReplicaPlanOptions planned =
      replica_options(request.workload, out.precision, out.batch, request.bucket_mb, out.optimizer);
  planned.ranks = request.gpus;  // the graph as the job's ranks train it (a tied table split or not)
  planned.overlap = request.overlap;
  planned.strategy = strategy;
  const ReplicaPlan replica = plan_replica_graph(planned);
  const Graph& graph = replica.graph;
  const MemoryPlan& plan = replica.plan;
  out.needed_bytes = replica.cuda_needed_bytes;
  out.units_per_step = replica.built.units_per_step;
  out.train_flops_per_step = step_matmul_flops(graph);

  // The solo step: every node's roofline, then the optimizer. With sub-steps the training pass is the nodes from
  // training_begin() on; the parts before it (input switches, decode loops) run per sub-step, outside the pass.
  std::vector<double> node_ms;
  for (const NodeWork& work : node_work(graph, gpu, out.precision)) {
    node_ms.push_back(roofline_ms(work, gpu, calibration.compute));
  }
  TimelineInput input;
  input.node_ms = node_ms;
  std::fill(input.node_ms.begin(), input.node_ms.begin() + static_cast<std::ptrdiff_t>(graph.training_begin()), 0.0);
  int first_backward = static_cast<int>(graph.nodes().size());
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    if (graph.nodes()[i].backward) {
      first_backward = static_cast<int>(i);
      break;
    }
  }
  const double update_bytes_per_gradient_byte = optimizer_bytes_per_gradient_byte(out.optimizer);
  input.whole_update_ms = optimizer_ms(static_cast<double>(plan.gradient_bytes), update_bytes_per_gradient_byte, gpu,
                                       calibration.compute);
  for (size_t i = 0; i < graph.nodes().size() && plan.parameters_in_blocks; ++i) {
    if (casts_a_backward_copy(graph, graph.nodes()[i])) input.dp_only_node_ms += input.node_ms[i];
  }

  // Communication: the path, then every bucket in issue order (by the node that completes it).
  const ResolvedPath path = resolve_path(request, gpu, db, calibration);
  out.path = path.path;
  out.intra_fabric = path.intra_fabric;
  out.inter_fabric = path.inter_fabric;
  out.nics_per_node = path.nics_per_node;
  out.notes.insert(out.notes.end(), path.notes.begin(), path.notes.end());
  if (request.gpus > 1) {
    const std::vector<GradientBucket> buckets = buckets_in_issue_order(plan);
    const double wire = request.grad_dtype == "bf16" ? 0.5 : 1.0;
    for (const GradientBucket& bucket : buckets) {
      const double bytes = static_cast<double>(bucket.bytes) * wire;
      input.bucket_ready_node.push_back(bucket.ready_after_node);
      const AllReduceCost cost = shards_by_bucket(strategy)
                                     ? ring_scatter_gather_cost(out.path, bytes, calibration.latency)
                                     : all_reduce_cost(out.path, bytes, calibration.latency);
      input.bucket_comm_ms.push_back(1e-3 * cost.us());
      input.bucket_update_ms.push_back(
          optimizer_ms(static_cast<double>(bucket.bytes), update_bytes_per_gradient_byte, gpu, calibration.compute));
      out.wire_bytes += bytes;
    }
    out.buckets = buckets.size();
    if (sharded) {
      out.notes.push_back(std::string("strategy ") + strategy_name(strategy) +
                          ": each GPU holds the optimizer's state of its shard and updates it alone, " +
                          (gathers_before_use(strategy)
                               ? std::string("and each bucket's parameters are all-gathered (fp32) before the "
                                             "forward pass reads them and again before the backward pass, one bucket "
                                             "ahead; ") +
                                     (plan.parameters_in_blocks
                                          ? "each GPU holds its shard of the parameters and each bucket's gathered "
                                            "parameters only in blocks around their readers (the backward pass "
                                            "casting its own copies), as run does"
                                          : "the parameters are held whole (in blocks with a shard they would need "
                                            "more), as run holds them")
                               : "then the shards are all-gathered (fp32)") +
                          (!shards_by_bucket(strategy) ? ""
                           : plan.gradients_in_blocks
                               ? "; the buckets are reduce-scattered out of their blocks into each GPU's shard of the "
                                 "gradients, the node that reuses a block's bytes waiting for its reduce-scatter, as "
                                 "run does"
                               : "; the buckets are reduce-scattered; the gradient region is held whole (in blocks "
                                 "with a shard it would need more), as run holds it") +
                          "; the step is its slowest GPU's");
    }
  }
  input.overlap = request.overlap;
  // fp16's loss scaling needs the global gradient norm before any update: one pass after the last all-reduce.
  input.update_by_bucket = request.overlap && out.precision != Precision::kFp16;
  input.in_training_rate = out.path.in_training_rate;
  input.dilation = out.path.dilation;
  if (sharded) {
    out.timeline = sharded_step_timeline(input, first_backward, graph, plan, out.path, gpu, calibration, strategy,
                                         request.gpus, out.optimizer, &out.wire_bytes);
  } else {
    out.timeline = simulate_step(input, first_backward);
  }
  if (!graph.sub_steps().empty()) {
    std::vector<double> part_ms, generation_ms;
    const std::vector<GradientBucket> buckets = buckets_in_issue_order(plan);
    for (size_t k = 0; k < graph.sub_steps().size(); ++k) {
      double parts = 0, generation = 0;
      for (const StepPart& part : graph.sub_steps()[k].parts) {
        double once = 0;
        for (size_t i = part.begin; i < part.end; ++i) once += node_ms[i];
        parts += once * static_cast<double>(part.repeat);
        if (part.generation) generation += once * static_cast<double>(part.repeat);
      }
      // zero3 gathers what the parts read before they run, back to back, the compute stream waiting.
      if (sharded && gathers_before_use(strategy)) {
        for (const ParameterGather& g : unit_gathers(graph, plan, buckets, k, static_cast<size_t>(first_backward))) {
          if (g.when != ParameterGather::When::kBeforeParts) continue;
          const auto bytes = static_cast<double>(buckets[g.bucket].bytes);
          parts += all_gather_ms(out.path, bytes, calibration);
          out.wire_bytes += bytes;
        }
      }
      part_ms.push_back(parts);
      generation_ms.push_back(generation);
    }
    out.timeline = sub_step_timeline(out.timeline, part_ms, generation_ms);
  }

  out.solo_units_per_s = out.units_per_step / (out.timeline.solo_ms * 1e-3);
  out.dp_units_per_s_per_gpu = out.units_per_step / (out.timeline.step_ms * 1e-3);
  if (request.gpus <= 1) out.dp_units_per_s_per_gpu = out.solo_units_per_s;
  out.dp_units_per_s_total = out.dp_units_per_s_per_gpu * request.gpus;
  out.scaling_efficiency = out.dp_units_per_s_per_gpu / out.solo_units_per_s;
  return out;
}

}  // namespace sb
