// One rank's copy of the model, ready to train: the workload's graph for this rank's batch, differentiated
// and planned (gradient buckets included), an executor on the device, this rank's share of the synthetic
// data and the initial weights every rank draws alike. The trainer's phases and the --check reference each
// build one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scalebench/device.h"
#include "scalebench/embedding_grad.h"
#include "scalebench/strategy.h"
#include "scalebench/executor.h"
#include "scalebench/optimizer.h"
#include "scalebench/planner.h"
#include "scalebench/precision.h"
#include "scalebench/process_group.h"
#include "scalebench/replica_plan.h"
#include "scalebench/workload.h"
#include "src/train/sub_steps.h"

namespace sb {

// The data seed a replica planned without one is credited from (TrainOptions::seed's default).
constexpr uint64_t kDefaultDataSeed = 1;

// zero2/zero3's gradients (and zero3's parameters). kBlocks: in blocks of the shared region, each alive until its
// bucket's reduce-scatter, and the optimizer's shard of them beside the arena (PlanOptions::gradient_blocks), so that a
// rank holds 1/N of them between steps; under zero3 the parameters too, each unit's gathered into blocks that live
// around its readers, the backward pass reading copies of its own (PlanOptions::parameter_blocks), and the rank's
// shard of them beside the arena. kWhole: the by-bucket layout with the regions whole (tests comparing it with ddp's
// reduction on the same layout). kSmaller (what run, maxbatch and plan use): whichever needs less memory with the dp phases'
// shards: blocks, unless they live so long (one bucket of the whole model, alive through the backward pass) that the
// packing loses more than the shard saves; under zero3 the parameters' blocks likewise, or the gradients' alone.
// Either way the graph is built for blocks (a tied table kept whole).
enum class GradientLayout { kSmaller, kBlocks, kWhole };

struct ReplicaOptions {
  std::string workload;
  int64_t batch = 0;  // per rank, > 0
  WorkloadScale scale = WorkloadScale::kFull;
  Precision precision = Precision::kFp32;
  bool recompute = false;       // GELU outputs recomputed in the backward pass
  bool dropout = true;          // false: no dropout nodes (the --check graphs)
  // BatchNorm statistics over this many contiguous equal parts of the batch (GraphBuilder::
  // set_batchnorm_groups): the --check's one-rank reference of N ranks uses N, each part one rank's batch.
  int64_t batchnorm_groups = 1;
  // The ReLU/LeakyReLU fused into each BatchNorm made the identity (make_batchnorm_activations_linear): the
  // --check graphs, where N ranks and one rank differ in summation order and the kinks would turn that into
  // jumps of the gradients.
  bool linear_batchnorm_activations = false;
  uint64_t bucket_bytes = 25ull << 20;
  // How the job reduces the gradients, as far as the graph depends on it: a tied table's gradient is split (its
  // lookups' rows apart, src/core/ops/embedding_rows.h) only where `ranks` ranks reduce it so
  // (rows_apart_refusal). The default, one rank, splits nothing.
  int ranks = 1;
  EmbeddingGradMode embedding_grad = EmbeddingGradMode::kAuto;
  bool overlap = true;
  int optimizer_state_buffers = 2;  // for the memory check: 2 Adam family, 1 SGD momentum and NAG
  // --strategy: zero1 or zero2 over more than one rank plans the parameters to split into `ranks` shards
  // (parameter_shards; zero2 by bucket, on one rank too); with optimizer_state_sharded the memory check counts the optimizer's state for one shard
  // only (the largest), as a rank holds it once the reducer shards it (no solo phase before, which updates every
  // parameter).
  DataParallelStrategy strategy = DataParallelStrategy::kDdp;
  bool optimizer_state_sharded = false;
  // zero2/zero3's gradients (GradientLayout below).
  GradientLayout gradient_layout = GradientLayout::kSmaller;
  // The plan and the optimizer's state must fit in this many bytes, checked before anything is allocated;
  // 0: usable_device_bytes(device). check_capacity false skips the check (maxbatch's verification lets the
  // allocation itself answer).
  uint64_t capacity_bytes = 0;
  bool check_capacity = true;
  // On a GPU, the arena from here instead of cudaMalloc (include/scalebench/executor.h): ncclMemAlloc where the
  // gradient region is registered with NCCL (--grad-registration, make_gradient_reducer).
  ArenaMemory arena_memory;
};

// What a replica not yet built may allocate: the allocation budget's remainder when one is set (maxbatch
// --memory), else on a GPU its free memory less kOutsidePlanBytes, else (the CPU device) the host's memory.
uint64_t usable_device_bytes(Device& device);

// What a replica's first steps take on a GPU beyond needed_bytes: kernels loaded on first use, small buffers,
// cudaMalloc's 2 MiB granularity. maxbatch measures it instead, after loading everything once.
constexpr uint64_t kOutsidePlanBytes = 512ull << 20;

struct Replica {
  const Workload* workload = nullptr;  // what built the graph (its parameter_init)
  Graph graph;
  BuiltWorkload built;
  int linear_batchnorm_activations = 0;  // how many ReplicaOptions::linear_batchnorm_activations changed
  MemoryPlan plan;
  std::unique_ptr<Executor> executor;  // null until allocate()
  // Per sub-step, the cross-entropies' weights and counted rows (weight_losses_by_global_rows); empty until then.
  std::vector<SubStepLosses> sub_step_losses;
};

// The shards the replica's parameter region is planned for (PlanOptions::parameter_shards): the ranks under zero1 and
// zero2, else 1.
int parameter_shards(const ReplicaOptions& options);

// Builds and plans the graph only (no device memory): what `needed_bytes` and the out-of-memory answer use.
std::unique_ptr<Replica> plan_replica(const ReplicaOptions& options);

// Bytes a replica allocates on a device of `kind`: the plan's arena, the optimizer's state, with gradient blocks the
// gradient shard (as large as the state's shard), with parameter blocks the parameter shard (as large) and, on CUDA, the executor's GEMM workspace and kernel scratch
// reserve (cuda_outside_plan_bytes).
uint64_t needed_bytes(const Replica& replica, const ReplicaOptions& options, DeviceKind kind);
// Of those, the gradient shard's (0 without gradient blocks) and the parameter shard's (0 without parameter blocks).
uint64_t needed_gradient_shard_bytes(const Replica& replica, const ReplicaOptions& options);
uint64_t needed_parameter_shard_bytes(const Replica& replica, const ReplicaOptions& options);

// Plans, checks the plan against the capacity (OutOfMemory "needs X GiB, device has Y GiB usable; largest
// batch that fits: B" before allocating anything), allocates the executor, writes the synthetic samples
// first_sample .. first_sample + batch - 1 and the initial weights (weight_seed: the same on every rank).
std::unique_ptr<Replica> build_replica(const ReplicaOptions& options, Device& device, uint64_t data_seed,
                                       int64_t first_sample, uint64_t weight_seed);

// Draws the initial weights again (the trainer restarts every phase from them).
void initialise_parameters(Replica& replica, uint64_t weight_seed);
// Whether initialise_parameters treats a parameter as a normalization's gain or shift (1 and 0, not N(0, 0.02)).
bool is_normalization_parameter(const std::string& name);
// Every phase starts from the same weights and a fresh optimizer state.
void restart_from_initial_weights(Replica& replica, uint64_t weight_seed);

// Every parameter's bytes in plan order, read back from the device (checksums and the --check comparison). With
// parameter blocks (zero3) over the ranks of `group` (its size's shards, as the reducer sets them), the ranks' shards
// are gathered on the host first: a collective, on every rank of the group. Without a group such a replica reads
// only what its shard holds whole (UsageError otherwise).
std::vector<float> read_parameters(Replica& replica, ProcessGroup* group = nullptr);

// FNV-1a over the parameters' bytes: equal on every rank exactly when the weights are bit-identical.
uint64_t parameter_checksum(Replica& replica, ProcessGroup* group = nullptr);

// (targets tensor, rows that count in its cross-entropy) for every cross-entropy of the graph, read from the
// synthetic targets: the data-parallel trainer weights each rank's loss by its share of the global count.
std::vector<std::pair<TensorId, int64_t>> counted_loss_rows(Replica& replica);


}  // namespace sb
