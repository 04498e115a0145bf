// --strategy (issue 31): how data parallelism keeps the model's training state across the ranks.
#pragma once

#include <string>
#include <vector>

namespace sb {

// ddp: every rank holds all of it (PyTorch DDP). zero1: the gradients are all-reduced as under ddp; each rank keeps
// the optimizer's state for, and updates, only its shard of the parameters, and the updated shards are then
// all-gathered (ZeRO stage 1; PyTorch's ZeroRedundancyOptimizer). zero2: as zero1, but the shards follow the
// gradient buckets and each bucket is reduce-scattered instead of all-reduced, so each rank receives only its own
// chunk reduced (ZeRO stage 2; FSDP's SHARD_GRAD_OP); the clipping norm then sums the shards' squares over the
// ranks. zero3: as zero2, but the parameters outside a rank's chunks are not kept current between uses: each bucket's
// parameters (a unit) are all-gathered before the first node of the forward pass that reads them and again before the
// first node of the backward pass that touches them, one unit ahead on the communication stream, and no gather
// follows the update (ZeRO stage 3; FSDP's FULL_SHARD, reshard_after_forward).
enum class DataParallelStrategy { kDdp, kZero1, kZero2, kZero3 };
const char* strategy_name(DataParallelStrategy strategy);          // "ddp", "zero1", "zero2", "zero3"
DataParallelStrategy parse_strategy(const std::string& text);      // throws UsageError
// zero1, zero2 and zero3: the optimizer's state and update split across the ranks.
bool shards_optimizer(DataParallelStrategy strategy);
// zero2 and zero3: the gradients are reduce-scattered bucket by bucket, so the shards follow the buckets
// (PlanOptions::shard_by_bucket).
bool shards_by_bucket(DataParallelStrategy strategy);
// zero3: the parameters are gathered unit by unit before their use in the forward and the backward pass, not after
// the update.
bool gathers_before_use(DataParallelStrategy strategy);
// --gpus-sweep under `strategy` on `ranks` ranks: a sharded strategy's replica is laid out for `ranks` shards, which
// split into k aligned shards only where k divides `ranks` (parameter_shard). "" when every size in (1, ranks) does,
// else what run and suite say: "--strategy zero1: size 3 does not divide the 4 ranks the parameters are split for".
std::string sweep_sizes_refusal(DataParallelStrategy strategy, const std::vector<int>& sizes, int ranks);

}  // namespace sb
