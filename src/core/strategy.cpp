// --strategy's names (include/scalebench/strategy.h).
#include "scalebench/strategy.h"

#include "scalebench/error.h"

namespace sb {

const char* strategy_name(DataParallelStrategy strategy) {
  switch (strategy) {
    case DataParallelStrategy::kZero1: return "zero1";
    case DataParallelStrategy::kZero2: return "zero2";
    case DataParallelStrategy::kZero3: return "zero3";
    case DataParallelStrategy::kDdp: break;
  }
  return "ddp";
}

DataParallelStrategy parse_strategy(const std::string& text) {
  for (DataParallelStrategy s : {DataParallelStrategy::kDdp, DataParallelStrategy::kZero1, DataParallelStrategy::kZero2,
                                 DataParallelStrategy::kZero3}) {
    if (text == strategy_name(s)) return s;
  }
  throw UsageError("unknown strategy '" + text + "' (accepted: ddp, zero1, zero2, zero3)");
}

bool shards_optimizer(DataParallelStrategy strategy) { return strategy != DataParallelStrategy::kDdp; }

bool shards_by_bucket(DataParallelStrategy strategy) {
  return strategy == DataParallelStrategy::kZero2 || strategy == DataParallelStrategy::kZero3;
}

bool gathers_before_use(DataParallelStrategy strategy) { return strategy == DataParallelStrategy::kZero3; }

std::string sweep_sizes_refusal(DataParallelStrategy strategy, const std::vector<int>& sizes, int ranks) {
  if (!shards_optimizer(strategy)) return "";
  for (int k : sizes) {
    if (k <= 1 || k >= ranks || ranks % k == 0) continue;
    return std::string("--strategy ") + strategy_name(strategy) + ": size " + std::to_string(k) +
           " does not divide the " + std::to_string(ranks) +
           " ranks the parameters are split for; give sizes that divide it, or run one job per size";
  }
  return "";
}

}  // namespace sb
