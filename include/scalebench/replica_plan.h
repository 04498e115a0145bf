// A workload's training graph as one rank's replica would run it, planned but not built: forward and backward
// for a per-rank batch, the memory plan with its gradient buckets, and the bytes a CUDA replica would allocate.
// No device and no allocation: what `scalebench plan` predicts from (src/plan), so that it sees the trainer's own
// graph and plan without the trainer's internals (src/train/replica.h builds the same thing and allocates it).
#pragma once

#include <cstdint>
#include <string>

#include "scalebench/graph.h"
#include "scalebench/planner.h"
#include "scalebench/precision.h"
#include "scalebench/strategy.h"
#include "scalebench/workload.h"

namespace sb {

struct ReplicaPlanOptions {
  std::string workload;
  int64_t batch = 0;  // per rank, at least the workload's min_batch (UsageError otherwise)
  Precision precision = Precision::kFp32;
  uint64_t bucket_bytes = 25ull << 20;
  int optimizer_state_buffers = 2;  // 2 Adam family, 1 SGD momentum and NAG (for cuda_needed_bytes)
  // The job's ranks and overlap, as the graph depends on them (ReplicaOptions::ranks: a tied table split where
  // --embedding-grad auto would reduce its rows apart).
  int ranks = 1;
  bool overlap = true;
  // --strategy: a sharded one over `ranks` ranks lays the parameters out for its shards, and cuda_needed_bytes
  // counts the optimizer's state of one shard (ReplicaOptions::optimizer_state_sharded), as the dp phases hold it.
  DataParallelStrategy strategy = DataParallelStrategy::kDdp;
};

struct ReplicaPlan {
  Graph graph;          // forward and backward nodes, full scale, dropout on (as `run` trains)
  BuiltWorkload built;  // units_per_step: the default dataset's first batch
  MemoryPlan plan;      // arena offsets, parameter and gradient bytes, buckets in all-reduce order
  uint64_t cuda_needed_bytes = 0;  // plan + optimizer state + the CUDA executor's workspace and scratch reserve
};

// Plans the replica `build_replica` would build at these options (plan_replica and needed_bytes on kCuda).
ReplicaPlan plan_replica_graph(const ReplicaPlanOptions& options);

}  // namespace sb
