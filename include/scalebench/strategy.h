// --strategy (issue 31): how data parallelism keeps the model's training state across the ranks.
#pragma once

#include <string>

namespace sb {

// ddp: every rank holds all of it (PyTorch DDP). zero1: the gradients are all-reduced as under ddp; each rank keeps
// the optimizer's state for, and updates, only its shard of the parameters, and the updated shards are then
// all-gathered (ZeRO stage 1; PyTorch's ZeroRedundancyOptimizer).
enum class DataParallelStrategy { kDdp, kZero1 };
const char* strategy_name(DataParallelStrategy strategy);          // "ddp", "zero1"
DataParallelStrategy parse_strategy(const std::string& text);      // throws UsageError

}  // namespace sb
