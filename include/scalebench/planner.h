// The memory planner: one device arena for the whole step, every byte assigned before anything is allocated
// (ARCHITECTURE.md step 5). Layout, in this order, each offset aligned:
//   parameters | gradients | optimizer state | model state | inputs | activations and workspaces
// Parameters and gradients are flat and in backward order (the order in which the backward pass finishes
// each gradient), so a gradient bucket is one contiguous range that can be all-reduced the moment its last
// gradient is written, and the fused optimizer walks parameters and gradients in step. Activations and
// workspaces share the rest by liveness: two tensors overlap in memory only if their lifetimes do not. A view
// (TensorInfo::view_of, a reshape) is not placed: it gets its storage's offset, and every use of the view
// counts as a use of the storage.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "scalebench/graph.h"

namespace sb {

struct PlanOptions {
  uint64_t bucket_bytes = 25ull << 20;  // PyTorch DDP's default, and --bucket-mb's
  uint64_t alignment = 256;             // every offset; cuBLASLt needs 16, 256 keeps vector loads aligned
  // ZeRO (--strategy zero1, zero2): the parameter region is padded to a multiple of `parameter_shards` x alignment bytes,
  // so that it splits into that many equal, aligned shards that an all-gather moves whole (parameter_shard).
  int parameter_shards = 1;
  // ZeRO-2 (--strategy zero2): the shards follow the buckets instead. Every bucket starts on, and is padded to, a
  // multiple of parameter_shards x alignment bytes (an oversized gradient's pieces too), so each splits into
  // `parameter_shards` equal aligned chunks, rank r's the r-th: one in-place reduce-scatter per bucket leaves each
  // rank its chunk reduced, and one in-place all-gather per bucket returns the updated chunks (FSDP's flat
  // parameter per unit). The parameters are laid out with the same gaps, so they still mirror the gradients.
  bool shard_by_bucket = false;
  // ZeRO-2's gradients at 1/N (--strategy zero2 and zero3; needs shard_by_bucket): the arena holds no gradient region.
  // Each bucket's gradients (an oversized gradient's pieces together) are one block of the shared region, placed by
  // liveness with the activations, its members at their offsets relative to the bucket (gaps and padding included),
  // alive from its first writer until it is released (GradientBlock::released_after_node): after the last writer of
  // the block the backward pass finishes next, so that one block's reduce-scatter runs beside the next block's
  // backward; with `gradient_blocks_until_end` (reductions issued after the backward pass) after the last node. What
  // a step keeps of the gradients is the rank's shard of them, beside the arena (Executor::gradients_of).
  bool gradient_blocks = false;
  bool gradient_blocks_until_end = false;
  // zero3's parameters at 1/N (--strategy zero3; needs gradient_blocks, and a graph whose backward nodes read copies
  // of their own: give_backward_its_own_parameter_copies): the arena holds no parameter region either. Each unit's
  // (bucket's; an oversized parameter's pieces together) gathered parameters are a block of the shared region, one
  // for the forward pass and one for the backward copies, each alive from the node where its gather may be issued
  // (one unit ahead, as the reducer issues it) until its last reader (ParameterBlock). What a rank keeps of the
  // parameters between uses is its shard, beside the arena (Executor::parameters_of).
  bool parameter_blocks = false;
};

// A contiguous range of the gradient region: whole gradients in backward order until the range reaches the
// bucket size (PyTorch DDP's rule), except that a gradient larger than the bucket size gets buckets of its own,
// bucket-sized pieces of it.
struct GradientBucket {
  size_t first = 0, last = 0;    // indices into MemoryPlan::gradient_order, inclusive
  uint64_t offset = 0;           // absolute, inside the gradient region
  uint64_t bytes = 0;
  int ready_after_node = -1;     // the bucket can be reduced once this node has run
  // Where its bytes are in the arena: `offset` itself, unless the plan keeps its gradients in blocks (then in its
  // block, GradientBlock; `offset` stays the bucket's place in the flat layout the parameters mirror).
  uint64_t data_offset = 0;
  int block = -1;  // gradient blocks: its block, an index into MemoryPlan::gradient_blocks
  // Parameter blocks: where a gather puts the bucket's parameters for the forward pass (and the parts before it) and
  // for the backward pass; the same place for the unit kept into the backward pass (unit_gathers).
  uint64_t forward_parameters_offset = 0, backward_parameters_offset = 0;
};

struct ByteRange {
  uint64_t offset = 0, bytes = 0;
};

// PlanOptions::gradient_blocks: one bucket's gradients, or an oversized gradient's pieces together, in the shared
// region. Whoever consumes a block (the reducer's reduce-scatter into the gradient shard, or the executor's own copy
// without one) must be done reading it before node released_after_node + 1 runs, whose tensors may reuse its bytes.
struct GradientBlock {
  uint64_t offset = 0, bytes = 0;       // absolute, in the shared region; the buckets' bytes back to back
  size_t first_bucket = 0, last_bucket = 0;  // into MemoryPlan::buckets, inclusive
  int first_node = -1;                  // its first writer: the executor zeroes the block's gaps before it
  int ready_after_node = -1;            // its last writer
  int released_after_node = -1;
  // The bytes no gradient covers (alignment between gradients, the buckets' padding), relative to `offset`, in order:
  // whatever tensor had them before must add nothing to the reduce-scatter or the norm. The gradients themselves are
  // written whole by their writers every step, as in the gradient region.
  std::vector<ByteRange> gaps;
};

// PlanOptions::parameter_blocks: one unit's gathered parameters (a bucket, or an oversized parameter's pieces
// together) for the forward pass or for the backward pass, laid out as the flat layout lays out its buckets (gaps
// included, which the gathers fill too). Alive from first_node, the first node at which one of its gathers may be
// issued (the gather writes it on the communication stream while the nodes from there run), to last_node, its
// members' last reader or the last node that waits for one of its gathers.
struct ParameterBlock {
  uint64_t offset = 0, bytes = 0;             // absolute, in the shared region
  size_t first_bucket = 0, last_bucket = 0;  // into MemoryPlan::buckets, inclusive
  bool backward = false;
  int first_node = -1, last_node = -1;
};

struct MemoryPlan {
  std::vector<uint64_t> offsets;  // per tensor id: absolute offset in the arena
  std::vector<int> first_use;     // per tensor id: first node index that touches it (-1: none)
  std::vector<int> last_use;      // per tensor id: last node index that touches it (-1: none)

  // gradient_bytes: the flat gradient layout's (by bucket, its padding included); with gradient blocks none of it is a
  // region of the arena.
  uint64_t parameter_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0, input_bytes = 0;
  uint64_t state_bytes = 0;  // kState tensors (BatchNorm running statistics)
  uint64_t activation_peak_bytes = 0;  // the shared region, activations and workspaces together
  uint64_t total_bytes = 0;

  uint64_t gradient_region_offset = 0;
  int parameter_shards = 1;              // PlanOptions::parameter_shards
  bool shard_by_bucket = false;          // PlanOptions::shard_by_bucket
  uint64_t bucket_bytes = 0;             // PlanOptions::bucket_bytes, which `buckets` were cut for
  uint64_t alignment = 0;                // PlanOptions::alignment, which every offset (and bucket piece) keeps
  std::vector<TensorId> gradient_order;  // backward order
  std::vector<int> gradient_ready_node;  // per entry of gradient_order: its last writer's node index
  // Per entry of gradient_order: its parameter's offset in the flat layout (bytes from the parameter region's start),
  // which blocks (gradient or parameter) do not change: where the parameter's elements are in a shard's ranges.
  std::vector<uint64_t> flat_offsets;
  std::vector<GradientBucket> buckets;
  bool gradients_in_blocks = false;            // PlanOptions::gradient_blocks: no gradient region in the arena
  std::vector<GradientBlock> gradient_blocks;  // then, in flat-layout order
  bool parameters_in_blocks = false;             // PlanOptions::parameter_blocks: no parameter region in the arena
  std::vector<ParameterBlock> parameter_blocks;  // then: forward blocks in flat-layout order, then backward ones
};

// The arena by category (maxbatch's report). Parameters (with parameter blocks: those gathered into the shared
// region at its peak), gradients (with gradient blocks: those in the shared region at its peak), optimizer state,
// running state (BatchNorm statistics) and inputs are their tensors' bytes; activations and workspace are those live
// at the node where the shared region's live bytes peak; padding is the rest (alignment, and the gaps the greedy
// packing leaves), so the eight add up to total_bytes exactly.
struct PlanCategories {
  uint64_t parameters = 0, gradients = 0, optimizer_state = 0, running_state = 0, inputs = 0, activations = 0,
           workspace = 0, padding = 0;
};

// Throws UsageError when a parameter has no gradient written by any node, or a gradient names no parameter.
MemoryPlan plan_memory(const Graph& graph, const PlanOptions& options = {});

// Rank `rank`'s shard of the flat parameter region (elements) when a plan of PlanOptions::parameter_shards = `ranks`
// is split across `ranks` ranks.
// - Contiguous (zero1): stride = the padded region / ranks; one range, the parameters of [rank x stride,
//   (rank + 1) x stride), clamped to the parameters (a last shard may be shorter, even empty: the rest is padding).
//   An all-gather of `stride` elements per rank in place restores every rank's shard on every rank.
// - By bucket (PlanOptions::shard_by_bucket): stride 0; one range per bucket, its rank-th chunk (bytes / ranks),
//   padding included (zeros, which every update leaves zero).
// `ranks` may also divide the plan's count (a --gpus-sweep point of fewer ranks): the region, and every bucket by
// bucket, is then a multiple of ranks x alignment too. Throws UsageError for any other count.
struct ShardRange {
  int64_t first = 0, count = 0;  // elements of the flat parameter region
};
struct ParameterShard {
  std::vector<ShardRange> ranges;  // in region order; a contiguous shard's one range may be empty
  int64_t count = 0;               // their elements together
  int64_t stride = 0;              // contiguous shards: the elements between two ranks' shards; 0 by bucket
};
ParameterShard parameter_shard(const MemoryPlan& plan, int rank, int ranks);

PlanCategories plan_categories(const Graph& graph, const MemoryPlan& plan);

// Per tensor id, a parameter's first element in the flat layout (MemoryPlan::flat_offsets, in floats); -1 for every
// other tensor. Where a shard's ranges hold a parameter's elements, whatever blocks the plan keeps.
std::vector<int64_t> parameter_flat_elements(const Graph& graph, const MemoryPlan& plan);

// The plan's gradients (laid out in backward order) cut into all-reduce buckets of about `bucket_bytes`: one
// parameter group per bucket, a gradient larger than a bucket cut into aligned bucket-sized pieces. plan_memory
// keeps these for PlanOptions::bucket_bytes; `--bucket-mb auto` cuts other sizes from the same layout. A plan laid
// out by bucket (shard_by_bucket) pads every bucket to its shards' unit and refuses any other size (UsageError):
// its gaps follow its own buckets.
std::vector<GradientBucket> cut_gradient_buckets(const Graph& graph, const MemoryPlan& plan, uint64_t bucket_bytes);

// The largest batch in [lowest, upper] whose plan fits `capacity_bytes`, assuming bytes grow with the batch;
// 0 when even `lowest` does not fit (a workload's WorkloadInfo::min_batch: smaller batches cannot be built).
int64_t largest_batch_that_fits(const std::function<uint64_t(int64_t batch)>& bytes_for_batch,
                                uint64_t capacity_bytes, int64_t upper, int64_t lowest = 1);

}  // namespace sb
