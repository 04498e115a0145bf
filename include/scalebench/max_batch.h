// `scalebench maxbatch`: the largest per-GPU batch that trains, predicted from the exact memory plan and then
// verified by training. The prediction plans the workload at every candidate batch and keeps the largest whose
// plan (arena and optimizer state) fits the capacity: the device's free memory once the CUDA context, the
// libraries and NCCL's buffers are up (measured), less what a replica allocates outside its plan (measured
// on a probe step at the workload's smallest batch, WorkloadInfo::min_batch). The verification trains a few steps at the predicted batch and one batch up,
// searching on from there until a batch trains and the next fails with out-of-memory. Every rank takes part;
// each attempt's outcome is agreed, so the answer is the minimum over ranks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scalebench/communicator.h"
#include "scalebench/device.h"
#include "scalebench/optimizer.h"
#include "scalebench/planner.h"
#include "scalebench/precision.h"
#include "scalebench/process_group.h"
#include "scalebench/strategy.h"
#include "scalebench/workload.h"

namespace sb {

struct MaxBatchOptions {
  std::string workload;
  WorkloadScale scale = WorkloadScale::kFull;
  Precision precision = Precision::kFp32;
  OptimizerSettings optimizer;
  bool recompute = false;
  uint64_t bucket_bytes = 25ull << 20;
  uint64_t memory_bytes = 0;  // > 0: answer for a card with this much memory (--memory), a prediction
  bool verify = true;
  int verify_steps = 2;       // training steps per verification attempt
  int max_attempts = 12;      // verification attempts, at most
  uint64_t seed = 1;
  // zero1/zero2: the optimizer's state for one shard of the parameters over the job's ranks (--strategy's dp
  // phases), in the prediction and in every verification step.
  DataParallelStrategy strategy = DataParallelStrategy::kDdp;
};

struct MaxBatchAttempt {
  int64_t batch = 0;
  uint64_t needed_bytes = 0;  // plan and optimizer state
  bool trained = false;
  bool out_of_memory = false;  // failed with OutOfMemory (any other failure ends the search)
  std::string error;           // the first failing rank's message
};

struct MaxBatchResult {
  std::string workload, unit, batch_unit, precision;
  std::string strategy = "ddp";  // "zero1"/"zero2": the optimizer's state sharded over nranks (ddp on one rank)
  int nranks = 1;
  int64_t reference_batch = 0;     // WORKLOADS.md's
  double units_per_sample = 0;     // units credited per batch element (tokens per sentence pair, 1 for images)
  // Memory, bytes (rank 0's; the capacity is the smallest over ranks).
  uint64_t device_total = 0;       // the card, or --memory
  uint64_t context_bytes = 0;      // measured: CUDA context, cuBLASLt and library handles, NCCL set-up
  uint64_t communication_bytes = 0;  // measured: NCCL's buffers, allocated at the first collective
  uint64_t outside_plan_bytes = 0;   // measured: a replica's allocations outside its plan (probe step)
  uint64_t capacity_bytes = 0;     // what the plan and the optimizer's state may take
  bool budget_enforced = false;    // --memory: the capacity is an allocation budget on this device
  // The answer.
  int64_t predicted = 0;           // 0: not even the workload's smallest batch fits
  uint64_t predicted_bytes = 0;    // the predicted batch's plan and optimizer state
  PlanCategories categories;       // the predicted batch's arena by category
  uint64_t optimizer_state_bytes = 0;
  // zero2/zero3: the rank's shard of the gradients, beside the arena (categories.gradients holds the gradient blocks
  // alive at the shared region's peak).
  uint64_t gradient_shard_bytes = 0;
  // zero3: the rank's shard of the parameters (categories.parameters holds the units gathered at the peak).
  uint64_t parameter_shard_bytes = 0;
  uint64_t executor_bytes = 0;     // the CUDA executor's GEMM workspace and kernel scratch reserve
  bool verified_ran = false;
  int64_t verified = 0;            // the largest batch that trained (0: none did)
  // verified + 1 (the workload's smallest batch when verified is 0) failed with out-of-memory on every rank
  // that failed
  bool next_failed_cleanly = false;
  std::vector<MaxBatchAttempt> attempts;
  std::string status = "ok";       // "ok" | "failed"
  std::string error;
};

// Which of the plan's categories (PlanCategories' names) hold one rank's shard rather than a replica:
// "optimizer_state" under a sharded strategy, "gradients" where zero2 and zero3 hold them in blocks with a shard
// (the rank's shard, beside the blocks of whole buckets alive at the peak), and "parameters" where zero3 holds them so
// too (the shard, beside the units gathered at the peak); none under ddp.
inline std::vector<std::string> sharded_categories(const MaxBatchResult& result) {
  if (result.strategy == "ddp") return {};
  std::vector<std::string> sharded{"optimizer_state"};
  if (result.gradient_shard_bytes > 0) sharded.push_back("gradients");
  if (result.parameter_shard_bytes > 0) sharded.push_back("parameters");
  return sharded;
}

// Collective. Throws UsageError for bad options (the same on every rank); a failure other than out-of-memory
// during verification ends it with status "failed" and the measured attempts kept.
MaxBatchResult find_max_batch(const MaxBatchOptions& options, ProcessGroup& group, Device& device,
                              Communicator& communicator);

// (predicted - verified) / verified, signed; 0 when nothing was verified.
double max_batch_prediction_error(const MaxBatchResult& result);

}  // namespace sb
