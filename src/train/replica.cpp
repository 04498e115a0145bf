// Building one rank's replica (src/train/replica.h).
#include "src/train/replica.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <utility>

#include "scalebench/allocation_budget.h"
#include "scalebench/autodiff.h"
#include "scalebench/byte_text.h"
#include "scalebench/error.h"
#include "src/core/backward_parameter_copies.h"
#include "src/cpu/optimizer.h"

namespace sb {

int parameter_shards(const ReplicaOptions& options) {
  return shards_optimizer(options.strategy) && options.ranks > 1 ? options.ranks : 1;
}

std::unique_ptr<Replica> plan_replica(const ReplicaOptions& options) {
  const Workload& workload = find_workload(options.workload);
  if (options.batch < workload.info().min_batch) {
    throw UsageError(workload.info().name + " trains at a per-rank batch of at least " +
                     std::to_string(workload.info().min_batch) + ", not " + std::to_string(options.batch));
  }
  auto replica = std::make_unique<Replica>();
  replica->workload = &workload;
  GraphBuilder builder(replica->graph, activation_dtype(options.precision));
  if (!options.dropout) builder.disable_dropout();
  builder.set_batchnorm_groups(options.batchnorm_groups);
  replica->built = workload.build(builder, options.batch, options.scale);
  // Credited as the batch holds: here the default dataset's first samples (what plan and maxbatch quote);
  // build_replica counts the batch it writes.
  replica->built.units_per_step = credited_units(workload, replica->graph, replica->built, kDefaultDataSeed, 0);
  if (options.linear_batchnorm_activations) {
    replica->linear_batchnorm_activations = make_batchnorm_activations_linear(replica->graph);
  }
  // A tied table's gradient is split only where this job's reducer will reduce its rows apart: elsewhere the split's
  // four nodes would cost every step for nothing (0.18 ms on transformer_big, H200, against 0.09 ms for the add_n).
  BackwardOptions backward;
  const bool gradient_blocks = options.gradient_layout != GradientLayout::kWhole && shards_by_bucket(options.strategy);
  backward.split_tied_table = [&options, gradient_blocks](int64_t rows, int64_t ids) {
    return rows_apart_refusal(options.embedding_grad, options.ranks, options.overlap, rows, ids, gradient_blocks)
        .empty();
  };
  append_backward(replica->graph, replica->built.loss, backward);
  if (options.recompute) recompute_in_backward(replica->graph, {"gelu"});
  PlanOptions plan_options;
  plan_options.bucket_bytes = options.bucket_bytes;
  plan_options.parameter_shards = parameter_shards(options);
  // zero2 lays every bucket out in equal chunks even on one rank (one chunk each), so that one rank runs the same
  // reduce-scatters, per-bucket gathers and norm reduction as many.
  plan_options.shard_by_bucket = shards_by_bucket(options.strategy);
  replica->plan = plan_memory(replica->graph, plan_options);
  if (!gradient_blocks) return replica;
  // Without overlap the buckets are reduced after the last node: their blocks live until then.
  plan_options.gradient_blocks = true;
  plan_options.gradient_blocks_until_end = !options.overlap;
  MemoryPlan blocks = plan_memory(replica->graph, plan_options);
  const ParameterShard shard = parameter_shard(blocks, 0, parameter_shards(options));
  const uint64_t shard_bytes = static_cast<uint64_t>(shard.count) * sizeof(float);
  const bool forced = options.gradient_layout == GradientLayout::kBlocks;
  uint64_t least = replica->plan.total_bytes;  // what the layout kept so far needs, its shards included
  if (forced || blocks.total_bytes + shard_bytes < least) {
    least = blocks.total_bytes + shard_bytes;
    replica->plan = std::move(blocks);
  }
  if (!gathers_before_use(options.strategy)) return replica;
  // zero3's parameters too: the backward pass reads copies of its own, gathered again, so that each unit's blocks
  // live around their readers only. A unit read at both ends of the forward pass (a tied table) lives through it,
  // so at a small batch the gradients alone in blocks may need less.
  Graph graph = replica->graph;
  give_backward_its_own_parameter_copies(graph);
  plan_options.parameter_blocks = true;
  MemoryPlan parameter_blocks = plan_memory(graph, plan_options);
  if (forced || parameter_blocks.total_bytes + 2 * shard_bytes < least) {
    replica->graph = std::move(graph);
    replica->plan = std::move(parameter_blocks);
  }
  return replica;
}

namespace {

// The parameters the optimizer's shard covers, as the executors allocate its state and gradient shard: every
// parameter, or the largest shard (a contiguous shard's stride; by bucket, every rank's chunks are as large).
int64_t shard_parameters(const Replica& replica, const ReplicaOptions& options) {
  const int shards = parameter_shards(options);
  if (!options.optimizer_state_sharded || shards < 2) return static_cast<int64_t>(replica.plan.parameter_bytes / 4);
  const ParameterShard shard = parameter_shard(replica.plan, 0, shards);
  return std::max(shard.stride, shard.count);
}

}  // namespace

uint64_t needed_gradient_shard_bytes(const Replica& replica, const ReplicaOptions& options) {
  if (!replica.plan.gradients_in_blocks) return 0;
  return static_cast<uint64_t>(shard_parameters(replica, options)) * sizeof(float);
}

uint64_t needed_parameter_shard_bytes(const Replica& replica, const ReplicaOptions& options) {
  if (!replica.plan.parameters_in_blocks) return 0;
  return static_cast<uint64_t>(shard_parameters(replica, options)) * sizeof(float);
}

uint64_t needed_bytes(const Replica& replica, const ReplicaOptions& options, DeviceKind kind) {
  const uint64_t state =
      cpu::optimizer_state_bytes(options.optimizer_state_buffers, shard_parameters(replica, options));
  return replica.plan.total_bytes + state + needed_gradient_shard_bytes(replica, options) +
         needed_parameter_shard_bytes(replica, options) +
         (kind == DeviceKind::kCuda ? cuda_outside_plan_bytes(replica.graph) : 0);
}

ReplicaPlan plan_replica_graph(const ReplicaPlanOptions& options) {
  ReplicaOptions replica_options;
  replica_options.workload = options.workload;
  replica_options.batch = options.batch;
  replica_options.precision = options.precision;
  replica_options.bucket_bytes = options.bucket_bytes;
  replica_options.optimizer_state_buffers = options.optimizer_state_buffers;
  replica_options.ranks = options.ranks;
  replica_options.overlap = options.overlap;
  replica_options.strategy = options.strategy;
  replica_options.optimizer_state_sharded = parameter_shards(replica_options) > 1;
  const std::unique_ptr<Replica> replica = plan_replica(replica_options);
  ReplicaPlan out;
  out.cuda_needed_bytes = needed_bytes(*replica, replica_options, DeviceKind::kCuda);
  out.graph = std::move(replica->graph);
  out.built = std::move(replica->built);
  out.plan = std::move(replica->plan);
  return out;
}

uint64_t usable_device_bytes(Device& device) {
  if (allocation_budget() > 0) {
    return allocation_budget() > allocated_bytes() ? allocation_budget() - allocated_bytes() : 0;
  }
  const DeviceMemoryUsage memory = device.memory_usage();
  if (device.kind() != DeviceKind::kCuda) return memory.free;
  return memory.free > kOutsidePlanBytes ? memory.free - kOutsidePlanBytes : 0;
}

std::unique_ptr<Replica> build_replica(const ReplicaOptions& options, Device& device, uint64_t data_seed,
                                       int64_t first_sample, uint64_t weight_seed) {
  std::unique_ptr<Replica> replica = plan_replica(options);
  const uint64_t needed = needed_bytes(*replica, options, device.kind());
  const uint64_t usable = options.capacity_bytes > 0 ? options.capacity_bytes : usable_device_bytes(device);
  if (options.check_capacity && needed > usable) {
    const int64_t fits = largest_batch_that_fits(
        [&](int64_t b) {
          ReplicaOptions smaller = options;
          smaller.batch = b;
          return needed_bytes(*plan_replica(smaller), smaller, device.kind());
        },
        usable, options.batch, find_workload(options.workload).info().min_batch);
    throw OutOfMemory(options.workload + " at batch " + std::to_string(options.batch) + " needs " +
                         gib_text(needed) + ", device has " + gib_text(usable) +
                         " usable; largest batch that fits: " + std::to_string(fits));
  }
  if (device.kind() == DeviceKind::kCuda) {
    replica->executor = make_cuda_executor(replica->graph, replica->plan, options.precision == Precision::kTf32, {},
                                           options.arena_memory);
  } else {
    replica->executor = std::make_unique<CpuExecutor>(replica->graph, replica->plan);
  }
  Executor& executor = *replica->executor;
  find_workload(options.workload)
      .synthesize(replica->graph, data_seed, first_sample,
                  [&](TensorId id, const void* data, size_t bytes) { executor.write_tensor(id, data, bytes); });
  replica->built.units_per_step = credited_units(replica->graph, replica->built,
                                                 [&](TensorId id, void* data, size_t bytes) {
                                                   executor.read_tensor(id, data, bytes);
                                                 });
  initialise_parameters(*replica, weight_seed);
  return replica;
}

// Weights as the references initialise them in spirit: N(0, 0.02) everywhere, LayerNorm gains 1 and biases 0,
// unless the workload says otherwise (Workload::parameter_init: StyleGAN's equalized learning rate).
void restart_from_initial_weights(Replica& replica, uint64_t weight_seed) {
  initialise_parameters(replica, weight_seed);
  replica.executor->reset_optimizer_state();
}

bool is_normalization_parameter(const std::string& name) {
  // "LayerNorm", "layer_norm", "norm", "norm_sep", "final_path_norm", "weight_norm": "norm" in any case. Not a bare
  // "orm", which BERT's "cls.predictions.transform.dense" holds too: matched so until 2026-12-04, its weight started
  // as all ones, every output of the MLM transform was the same sum, its LayerNorm gave zeros, and the tied word
  // embeddings got no gradient from the MLM decoder at the first steps.
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("norm") != std::string::npos;
}

void initialise_parameters(Replica& replica, uint64_t weight_seed) {
  std::mt19937_64 random(weight_seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (TensorId p : replica.graph.tensors_with_role(TensorRole::kParameter)) {
    const TensorInfo& info = replica.graph.tensor(p);
    const bool norm = is_normalization_parameter(info.name);
    const bool bias = info.name.find("bias") != std::string::npos;
    std::vector<float> values(static_cast<size_t>(info.elements()));
    const std::optional<ParameterInit> init =
        replica.workload != nullptr ? replica.workload->parameter_init(info.name) : std::nullopt;
    if (init) {
      std::normal_distribution<float> drawn(0.0f, 1.0f);
      for (float& v : values) v = init->stddev == 0 ? init->mean : init->mean + init->stddev * drawn(random);
      replica.executor->write_tensor(p, values.data(), info.bytes());
      continue;
    }
    for (float& v : values) v = norm ? (bias ? 0.0f : 1.0f) : (bias ? 0.0f : normal(random));
    replica.executor->write_tensor(p, values.data(), info.bytes());
  }
}

namespace {

// zero3 with parameter blocks: every rank's packed shard gathered on the host and unpacked into the flat layout, then
// each parameter read from there in graph order, as read_parameters reads them from the executor.
std::vector<float> gather_parameter_shards(Replica& replica, ProcessGroup& group) {
  const MemoryPlan& plan = replica.plan;
  const int ranks = group.size();
  const std::vector<float> mine = replica.executor->read_parameter_shard();
  std::vector<float> every(mine.size() * static_cast<size_t>(ranks));
  group.allgather(mine.data(), every.data(), mine.size() * sizeof(float));
  std::vector<float> flat(std::max(plan.parameter_bytes, plan.gradient_bytes) / sizeof(float), 0.0f);
  for (int r = 0; r < ranks; ++r) {
    const float* packed = every.data() + mine.size() * static_cast<size_t>(r);
    for (const ShardRange& range : parameter_shard(plan, r, ranks).ranges) {
      std::copy_n(packed, range.count, flat.begin() + range.first);
      packed += range.count;
    }
  }
  const std::vector<int64_t> first = parameter_flat_elements(replica.graph, plan);
  std::vector<float> all;
  for (TensorId p : replica.graph.tensors_with_role(TensorRole::kParameter)) {
    const auto at = flat.begin() + first[static_cast<size_t>(p)];
    all.insert(all.end(), at, at + replica.graph.tensor(p).elements());
  }
  return all;
}

}  // namespace

std::vector<float> read_parameters(Replica& replica, ProcessGroup* group) {
  // Gathered where the reducer has set this rank's shard of the group's ranks (before, the shard holds every
  // parameter); the same on every rank of the group, so all of them join the collective or none does.
  if (replica.plan.parameters_in_blocks && group != nullptr && group->size() > 1 &&
      replica.executor->optimizer_shard_count() == parameter_shard(replica.plan, group->rank(), group->size()).count) {
    return gather_parameter_shards(replica, *group);
  }
  std::vector<float> all;
  for (TensorId p : replica.graph.tensors_with_role(TensorRole::kParameter)) {
    const TensorInfo& info = replica.graph.tensor(p);
    const size_t at = all.size();
    all.resize(at + static_cast<size_t>(info.elements()));
    replica.executor->read_tensor(p, all.data() + at, info.bytes());
  }
  return all;
}

uint64_t parameter_checksum(Replica& replica, ProcessGroup* group) {
  const std::vector<float> values = read_parameters(replica, group);
  uint64_t hash = 0xcbf29ce484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (size_t i = 0; i < values.size() * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  return hash;
}

std::vector<std::pair<TensorId, int64_t>> counted_loss_rows(Replica& replica) {
  std::vector<std::pair<TensorId, int64_t>> counts;
  for (const Node& node : replica.graph.nodes()) {
    if (node.op != "softmax_cross_entropy") continue;
    const TensorId targets = node.inputs[1];
    const TensorInfo& info = replica.graph.tensor(targets);
    // Targets computed in the step (Mask R-CNN's sampled RoI labels) are not known before it runs; such a
    // workload normalises per image itself (every rank's mean is over as many rows), so its weight stays 1.
    if (info.role != TensorRole::kInput) continue;
    std::vector<int32_t> values(static_cast<size_t>(info.elements()));
    replica.executor->read_tensor(targets, values.data(), info.bytes());
    const auto ignore = static_cast<int32_t>(node.attributes.at("ignore_index"));
    int64_t counted = 0;
    for (int32_t t : values) counted += t != ignore;
    counts.emplace_back(targets, counted);
  }
  return counts;
}

}  // namespace sb
