// The naming and arithmetic of `scalebench bandwidth` (include/scalebench/bandwidth.h) apart from the
// sweep itself: collective and reduce-op names, nccl-tests' bus-bandwidth factors, the list of sizes a
// sweep visits, and the two summaries of a BandwidthReport.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <string>

#include "scalebench/bandwidth.h"
#include "scalebench/error.h"

namespace sb {
namespace {

struct CollectiveInfo {
  CollectiveOp op;
  const char* name;
  const char* alias;  // the spelling without underscores; nccl-tests' binaries are named this way
};

// all_to_all is printed as nccl-tests spells it ("alltoall") so tables line up with theirs.
constexpr CollectiveInfo kCollectives[] = {
    {CollectiveOp::kAllReduce, "all_reduce", "allreduce"},
    {CollectiveOp::kReduceScatter, "reduce_scatter", "reducescatter"},
    {CollectiveOp::kAllGather, "all_gather", "allgather"},
    {CollectiveOp::kBroadcast, "broadcast", "bcast"},
    {CollectiveOp::kAllToAll, "alltoall", "all_to_all"},
};

struct ReduceOpInfo {
  ReduceOp op;
  const char* name;
};

// nccl-tests' names, in the order its `-o all` runs them.
constexpr ReduceOpInfo kReduceOps[] = {
    {ReduceOp::kSum, "sum"}, {ReduceOp::kProd, "prod"}, {ReduceOp::kMax, "max"},
    {ReduceOp::kMin, "min"}, {ReduceOp::kAvg, "avg"},
};

// The element types a collective moves (uint8 is the engine's mask type, never a collective's).
constexpr DType kCollectiveDTypes[] = {DType::kFloat32, DType::kBFloat16, DType::kFloat16, DType::kFloat64,
                                       DType::kInt32};

// Bytes that every size of `op` must be a multiple of: whole elements, and for the collectives that
// split the buffer into one block per rank, whole elements in every block.
uint64_t size_granularity(CollectiveOp op, DType type, int nranks) {
  const uint64_t element = dtype_size(type);
  switch (op) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kBroadcast:
      return element;
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllGather:
    case CollectiveOp::kAllToAll:
      return element * static_cast<uint64_t>(nranks);
  }
  SB_FATAL("unknown collective");
}

}  // namespace

const char* collective_name(CollectiveOp op) {
  for (const CollectiveInfo& entry : kCollectives) {
    if (entry.op == op) return entry.name;
  }
  SB_FATAL("unknown collective");
}

CollectiveOp parse_collective(const std::string& text) {
  for (const CollectiveInfo& entry : kCollectives) {
    if (text == entry.name || text == entry.alias) return entry.op;
  }
  std::string accepted;
  for (const CollectiveInfo& entry : kCollectives) {
    accepted += (accepted.empty() ? "" : ", ") + std::string(entry.name);
  }
  throw UsageError("unknown collective '" + text + "' (accepted: " + accepted + ")");
}

std::vector<CollectiveOp> all_collectives() {
  std::vector<CollectiveOp> ops;
  for (const CollectiveInfo& entry : kCollectives) ops.push_back(entry.op);
  return ops;
}

const char* reduce_op_name(ReduceOp op) {
  for (const ReduceOpInfo& entry : kReduceOps) {
    if (entry.op == op) return entry.name;
  }
  SB_FATAL("unknown reduce op");
}

ReduceOp parse_reduce_op(const std::string& text) {
  for (const ReduceOpInfo& entry : kReduceOps) {
    if (text == entry.name) return entry.op;
  }
  std::string accepted;
  for (const ReduceOpInfo& entry : kReduceOps) {
    accepted += (accepted.empty() ? "" : ", ") + std::string(entry.name);
  }
  throw UsageError("unknown reduce op '" + text + "' (accepted: " + accepted + ")");
}

std::vector<ReduceOp> all_reduce_ops() {
  std::vector<ReduceOp> ops;
  for (const ReduceOpInfo& entry : kReduceOps) ops.push_back(entry.op);
  return ops;
}

std::vector<DType> collective_dtypes() {
  return std::vector<DType>(std::begin(kCollectiveDTypes), std::end(kCollectiveDTypes));
}

double bus_bandwidth_factor(CollectiveOp op, int nranks) {
  if (nranks < 1) throw std::invalid_argument("bus_bandwidth_factor: nranks must be >= 1");
  const double n = nranks;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllGather:
    case CollectiveOp::kAllToAll:
      return (n - 1) / n;
    case CollectiveOp::kBroadcast:
      return 1.0;
  }
  SB_FATAL("unknown collective");
}

std::vector<uint64_t> sweep_sizes(const BandwidthOptions& options, CollectiveOp op, DType dtype, int nranks) {
  if (options.max_bytes == 0) {
    throw std::invalid_argument("sweep_sizes: max_bytes is 0; resolve the device default first");
  }
  if (nranks < 1) throw std::invalid_argument("sweep_sizes: nranks must be >= 1");
  if (!(options.factor > 1)) {
    throw UsageError("size factor must be greater than 1 (got " + std::to_string(options.factor) + ")");
  }
  if (options.min_bytes == 0) throw UsageError("minimum size must be at least 1 byte");
  if (options.min_bytes > options.max_bytes) {
    throw UsageError("minimum size " + std::to_string(options.min_bytes) + " B is larger than maximum size " +
                     std::to_string(options.max_bytes) + " B");
  }

  const uint64_t granularity = size_granularity(op, dtype, nranks);
  std::vector<uint64_t> sizes;
  uint64_t size = options.min_bytes;
  while (true) {
    const uint64_t rounded = size / granularity * granularity;
    // Rounding down keeps the sequence non-decreasing, so duplicates are always adjacent.
    if (rounded > 0 && (sizes.empty() || sizes.back() != rounded)) sizes.push_back(rounded);
    // The next size in double first: size * factor can exceed uint64 near the top of the range.
    const double next = std::floor(static_cast<double>(size) * options.factor);
    if (next > static_cast<double>(options.max_bytes)) break;
    // Truncation can stall a factor barely above 1 on small sizes; always move forward.
    size = std::max(size + 1, static_cast<uint64_t>(next));
    if (size > options.max_bytes) break;
  }
  return sizes;
}

std::vector<ReduceOp> sweep_reduce_ops(const BandwidthOptions& options, CollectiveOp op) {
  if (options.reduces.empty()) throw std::invalid_argument("sweep_reduce_ops: no reduce op");
  if (pattern_reduces(op)) return options.reduces;
  return {options.reduces.front()};
}

int64_t BandwidthReport::total_wrong() const {
  int64_t total = -1;
  for (const SizeResult& result : results) {
    for (const PlacementResult* placement : {&result.out_of_place, &result.in_place}) {
      if (!placement->measured || placement->wrong < 0) continue;
      total = (total < 0 ? 0 : total) + placement->wrong;
    }
  }
  return total;
}

double BandwidthReport::peak_busbw_gbps(CollectiveOp op) const {
  double peak = 0;
  for (const SizeResult& result : results) {
    if (result.op != op) continue;
    for (const PlacementResult* placement : {&result.out_of_place, &result.in_place}) {
      if (placement->measured) peak = std::max(peak, placement->busbw_gbps);
    }
  }
  return peak;
}

}  // namespace sb
