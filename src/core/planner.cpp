// Liveness-based memory planning (include/scalebench/planner.h). Activations are placed greedily, largest
// first, each at the lowest aligned offset that does not collide with an already placed tensor whose
// lifetime overlaps — the "greedy by size" heuristic of TensorFlow Lite's arena planner, which stays within
// a few percent of the peak live set on sequential graphs like these.
#include "scalebench/planner.h"

#include <algorithm>

#include "scalebench/error.h"
#include "src/core/parameter_blocks.h"

namespace sb {
namespace {

uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

// The tensor whose storage a view uses (itself when it is not a view).
TensorId storage_of(const Graph& graph, TensorId id) {
  while (graph.tensor(id).view_of != kNoTensor) id = graph.tensor(id).view_of;
  return id;
}

// A use of a view is a use of the storage it shares: the storage lives until its last view is done.
void record_uses(const Graph& graph, MemoryPlan& plan) {
  const size_t count = graph.tensors().size();
  plan.first_use.assign(count, -1);
  plan.last_use.assign(count, -1);
  auto use = [&](size_t id, int n) {
    if (plan.first_use[id] < 0) plan.first_use[id] = n;
    plan.last_use[id] = n;
  };
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    const Node& node = graph.nodes()[n];
    for (const auto* list : {&node.inputs, &node.outputs}) {
      for (TensorId id : *list) {
        use(static_cast<size_t>(id), static_cast<int>(n));
        use(static_cast<size_t>(storage_of(graph, id)), static_cast<int>(n));
      }
    }
  }
  // A repeated part (a decode loop) runs its nodes again after its last one: whatever it touches must keep its
  // place from the part's first node to its last, or a key/value cache written by one repetition would share
  // bytes with a later node's scratch before the next repetition reads it.
  for (const SubStep& sub_step : graph.sub_steps()) {
    for (const StepPart& part : sub_step.parts) {
      if (part.repeat < 2) continue;
      const int begin = static_cast<int>(part.begin), last = static_cast<int>(part.end) - 1;
      for (size_t id = 0; id < count; ++id) {
        if (plan.first_use[id] < 0 || plan.last_use[id] < begin || plan.first_use[id] > last) continue;
        plan.first_use[id] = std::min(plan.first_use[id], begin);
        plan.last_use[id] = std::max(plan.last_use[id], last);
      }
    }
  }
  for (size_t id = 0; id < count; ++id) {  // the host reads a view after the step: keep its storage too
    const TensorInfo& info = graph.tensor(static_cast<TensorId>(id));
    if (info.view_of != kNoTensor && info.read_after_step) {
      plan.last_use[static_cast<size_t>(storage_of(graph, static_cast<TensorId>(id)))] =
          static_cast<int>(graph.nodes().size());
    }
  }
}

void place_views(const Graph& graph, MemoryPlan& plan) {
  for (size_t id = 0; id < graph.tensors().size(); ++id) {
    const TensorInfo& info = graph.tensor(static_cast<TensorId>(id));
    if (info.view_of == kNoTensor) continue;
    const TensorId storage = storage_of(graph, static_cast<TensorId>(id));
    if (graph.tensor(storage).bytes() != info.bytes()) {
      throw UsageError("view '" + info.name + "' and its storage '" + graph.tensor(storage).name + "' differ in size");
    }
    plan.offsets[id] = plan.offsets[static_cast<size_t>(storage)];
  }
}

// The node after which each gradient is final: its last writer.
std::vector<int> last_writers(const Graph& graph) {
  std::vector<int> writer(graph.tensors().size(), -1);
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    for (TensorId id : graph.nodes()[n].outputs) writer[static_cast<size_t>(id)] = static_cast<int>(n);
  }
  return writer;
}

void order_gradients(const Graph& graph, MemoryPlan& plan) {
  const std::vector<int> writer = last_writers(graph);
  std::vector<TensorId> gradients = graph.tensors_with_role(TensorRole::kGradient);
  std::vector<bool> has_gradient(graph.tensors().size(), false);
  for (TensorId id : gradients) {
    const TensorInfo& info = graph.tensor(id);
    if (info.gradient_of == kNoTensor || graph.tensor(info.gradient_of).role != TensorRole::kParameter) {
      throw UsageError("gradient '" + info.name + "' names no parameter");
    }
    if (writer[static_cast<size_t>(id)] < 0) throw UsageError("gradient '" + info.name + "' is never written");
    has_gradient[static_cast<size_t>(info.gradient_of)] = true;
  }
  for (TensorId id : graph.tensors_with_role(TensorRole::kParameter)) {
    if (!has_gradient[static_cast<size_t>(id)]) {
      throw UsageError("parameter '" + graph.tensor(id).name + "' has no gradient (frozen weights are inputs)");
    }
  }
  // Stable: gradients finished by the same node keep their declaration order.
  std::stable_sort(gradients.begin(), gradients.end(), [&](TensorId a, TensorId b) {
    return writer[static_cast<size_t>(a)] < writer[static_cast<size_t>(b)];
  });
  plan.gradient_order = gradients;
  for (TensorId id : gradients) plan.gradient_ready_node.push_back(writer[static_cast<size_t>(id)]);
}

// Lays `ids` out back to back from `offset`; returns the end.
uint64_t lay_out(const Graph& graph, const std::vector<TensorId>& ids, uint64_t offset, uint64_t alignment,
                 MemoryPlan& plan) {
  for (TensorId id : ids) {
    offset = align_up(offset, alignment);
    plan.offsets[static_cast<size_t>(id)] = offset;
    offset += graph.tensor(id).bytes();
  }
  return offset;
}

}  // namespace

namespace {

// The buckets of `bucket_bytes` over the plan's gradient offsets: an oversized gradient's pieces are a multiple of
// `unit` bytes; with `pad`, every bucket's bytes are rounded up to `unit` too (the layout left that gap after it).
std::vector<GradientBucket> cut_buckets(const Graph& graph, const MemoryPlan& plan, uint64_t bucket_bytes,
                                        uint64_t unit, bool pad) {
  std::vector<GradientBucket> buckets;
  GradientBucket bucket;
  bool open = false;
  auto close = [&](GradientBucket b) {
    if (pad) b.bytes = align_up(b.bytes, unit);
    b.data_offset = b.offset;
    buckets.push_back(b);
  };
  // Pieces of an oversized gradient: the bucket size rounded down to the unit (so every piece starts aligned),
  // at least one unit.
  const uint64_t piece = std::max(unit, bucket_bytes / unit * unit);
  for (size_t i = 0; i < plan.gradient_order.size(); ++i) {
    const TensorId id = plan.gradient_order[i];
    const uint64_t offset = plan.offsets[static_cast<size_t>(id)];
    const uint64_t bytes = graph.tensor(id).bytes();
    if (bytes > bucket_bytes) {
      // A gradient larger than a bucket (a tied embedding table, written last) is cut into bucket-sized
      // pieces, so its all-reduce is pipelined with the update of the pieces already reduced.
      if (open) close(bucket);
      open = false;
      for (uint64_t at = offset; at < offset + bytes; at += piece) {
        close(GradientBucket{i, i, at, std::min(piece, offset + bytes - at), plan.gradient_ready_node[i]});
      }
      continue;
    }
    // A bucket holds one parameter group's gradients (GraphBuilder::set_parameter_group): G's and D's
    // reductions stay apart, as the reference's two optimizers reduce them.
    const std::string& group = graph.tensor(graph.tensor(id).gradient_of).parameter_group;
    if (open && group != graph.tensor(graph.tensor(plan.gradient_order[bucket.first]).gradient_of).parameter_group) {
      close(bucket);
      open = false;
    }
    if (!open) {
      bucket = GradientBucket{i, i, offset, 0, -1};
      open = true;
    }
    bucket.last = i;
    bucket.bytes = offset + bytes - bucket.offset;
    bucket.ready_after_node = std::max(bucket.ready_after_node, plan.gradient_ready_node[i]);
    if (bucket.bytes >= bucket_bytes) {
      close(bucket);
      open = false;
    }
  }
  if (open) close(bucket);
  return buckets;
}

uint64_t shard_unit(const MemoryPlan& plan) {
  return plan.alignment * static_cast<uint64_t>(plan.shard_by_bucket ? plan.parameter_shards : 1);
}

// shard_by_bucket: moves the gradients (laid out back to back from offset 0 in `plan`) so that every bucket of
// `bucket_bytes` starts on a multiple of `unit`. Inside a bucket nothing moves relative to its start, so cutting
// the new layout gives the same buckets; an oversized gradient's pieces (multiples of the unit) move together.
void open_gaps_between_buckets(const Graph& graph, MemoryPlan& plan, uint64_t bucket_bytes, uint64_t unit) {
  const std::vector<GradientBucket> buckets = cut_buckets(graph, plan, bucket_bytes, unit, false);
  std::vector<uint64_t> old_offsets(plan.gradient_order.size());
  for (size_t i = 0; i < plan.gradient_order.size(); ++i) {
    old_offsets[i] = plan.offsets[static_cast<size_t>(plan.gradient_order[i])];
  }
  uint64_t end = 0;  // of the buckets moved so far
  for (size_t b = 0; b < buckets.size(); ++b) {
    const GradientBucket& bucket = buckets[b];
    if (b > 0 && buckets[b - 1].first == bucket.first && buckets[b - 1].last == bucket.last) continue;  // a piece
    const uint64_t start = align_up(end, unit);
    for (size_t i = bucket.first; i <= bucket.last; ++i) {
      const uint64_t moved = old_offsets[i] - bucket.offset + start;
      plan.offsets[static_cast<size_t>(plan.gradient_order[i])] = moved;
      end = std::max(end, moved + graph.tensor(plan.gradient_order[i]).bytes());
    }
  }
}

}  // namespace

std::vector<GradientBucket> cut_gradient_buckets(const Graph& graph, const MemoryPlan& plan, uint64_t bucket_bytes) {
  if (plan.alignment == 0) throw UsageError("cut_gradient_buckets: the plan has no alignment (not made by plan_memory)");
  if (plan.shard_by_bucket && bucket_bytes != plan.bucket_bytes) {
    throw UsageError("the plan's shards follow its buckets of " + std::to_string(plan.bucket_bytes) +
                     " bytes: it cannot be cut into buckets of another size");
  }
  if (plan.gradients_in_blocks) return plan.buckets;  // the same size: the plan's own, with their blocks
  return cut_buckets(graph, plan, bucket_bytes, shard_unit(plan), plan.shard_by_bucket);
}

namespace {


// The node span a tensor of the shared region occupies: one that no node touches keeps a place for the whole
// step (the executor may read it, and hiding a mistake in the graph behind a shared offset would be worse), and
// so does one the host reads after the step.
std::pair<int, int> shared_lifetime(const Graph& graph, const MemoryPlan& plan, TensorId id) {
  const size_t i = static_cast<size_t>(id);
  const int end = static_cast<int>(graph.nodes().size());
  const int first = plan.first_use[i] < 0 ? 0 : plan.first_use[i];
  const int last = plan.last_use[i] < 0 || graph.tensor(id).read_after_step ? end : plan.last_use[i];
  return {first, last};
}

// Views are placed with their storage, backward parameter copies in their parameter blocks.
std::vector<TensorId> shared_region_tensors(const Graph& graph) {
  std::vector<TensorId> shared;
  for (TensorRole role : {TensorRole::kActivation, TensorRole::kWorkspace}) {
    for (TensorId id : graph.tensors_with_role(role)) {
      const TensorInfo& info = graph.tensor(id);
      if (info.view_of == kNoTensor && info.parameter_copy_of == kNoTensor) shared.push_back(id);
    }
  }
  return shared;
}

uint64_t role_bytes(const Graph& graph, TensorRole role) {
  uint64_t total = 0;
  for (TensorId id : graph.tensors_with_role(role)) {
    if (graph.tensor(id).view_of == kNoTensor) total += graph.tensor(id).bytes();
  }
  return total;
}

struct Placed {
  uint64_t begin, end;
  int first, last;
};

// What the shared region holds: a tensor, or (gradient blocks) a bucket's block; placed where `offset` points.
struct SharedItem {
  uint64_t bytes;
  int first, last;
  uint64_t* offset;
};

uint64_t place_by_liveness(const Graph& graph, uint64_t base, uint64_t alignment, MemoryPlan& plan) {
  std::vector<SharedItem> items;
  for (TensorId id : shared_region_tensors(graph)) {
    const auto [first, last] = shared_lifetime(graph, plan, id);
    items.push_back(SharedItem{graph.tensor(id).bytes(), first, last, &plan.offsets[static_cast<size_t>(id)]});
  }
  for (GradientBlock& block : plan.gradient_blocks) {
    items.push_back(SharedItem{block.bytes, block.first_node, block.released_after_node, &block.offset});
  }
  for (ParameterBlock& block : plan.parameter_blocks) {
    items.push_back(SharedItem{block.bytes, block.first_node, block.last_node, &block.offset});
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const SharedItem& a, const SharedItem& b) { return a.bytes > b.bytes; });
  // Kept in order of their offsets, so the ones alive beside an item are met lowest first without sorting them
  // (sorting them per item was most of a large graph's planning time: nasnet_large's plan).
  std::vector<Placed> placed;
  uint64_t peak = 0;
  for (const SharedItem& item : items) {
    const uint64_t size = align_up(item.bytes, alignment);
    uint64_t candidate = 0;
    for (const Placed& other : placed) {
      if (other.first > item.last || item.first > other.last) continue;  // not alive at the same time
      if (candidate + size <= other.begin) break;  // fits in the gap before this one
      candidate = std::max(candidate, other.end);
    }
    const Placed here{candidate, candidate + size, item.first, item.last};
    placed.insert(std::upper_bound(placed.begin(), placed.end(), here,
                                   [](const Placed& a, const Placed& b) { return a.begin < b.begin; }),
                  here);
    *item.offset = base + candidate;
    peak = std::max(peak, candidate + size);
  }
  return peak;
}

// The gradient indices (into plan.gradient_order) a block's buckets hold.
std::pair<size_t, size_t> block_gradients(const MemoryPlan& plan, const GradientBlock& block) {
  return {plan.buckets[block.first_bucket].first, plan.buckets[block.last_bucket].last};
}

// PlanOptions::gradient_blocks: the buckets grouped into blocks (an oversized gradient's pieces into one: the gradient
// is one tensor), each alive from its first writer until released. A block is released after the next block's last
// writer (the first later one: blocks finished by the same node give no time), or after the last node with
// `until_end`; never before its own gradients' last use.
void make_gradient_blocks(const Graph& graph, MemoryPlan& plan, bool until_end) {
  const int last_node = static_cast<int>(graph.nodes().size()) - 1;
  for (size_t b = 0; b < plan.buckets.size(); ++b) {
    const GradientBucket& bucket = plan.buckets[b];
    const bool piece_of_previous = b > 0 && plan.buckets[b - 1].first == bucket.first;
    if (!piece_of_previous) plan.gradient_blocks.push_back(GradientBlock{0, 0, b, b, -1, -1, -1, {}});
    GradientBlock& block = plan.gradient_blocks.back();
    block.last_bucket = b;
    block.bytes += bucket.bytes;
  }
  std::vector<int> last_reader(plan.gradient_blocks.size(), -1);
  for (size_t k = 0; k < plan.gradient_blocks.size(); ++k) {
    GradientBlock& block = plan.gradient_blocks[k];
    const auto [first, last] = block_gradients(plan, block);
    for (size_t i = first; i <= last; ++i) {
      const auto id = static_cast<size_t>(plan.gradient_order[i]);
      block.first_node = block.first_node < 0 ? plan.first_use[id] : std::min(block.first_node, plan.first_use[id]);
      block.ready_after_node = std::max(block.ready_after_node, plan.gradient_ready_node[i]);
      last_reader[k] = std::max(last_reader[k], plan.last_use[id]);
    }
  }
  for (size_t k = 0; k < plan.gradient_blocks.size(); ++k) {
    GradientBlock& block = plan.gradient_blocks[k];
    int next_ready = last_node;
    if (!until_end) {
      for (const GradientBlock& other : plan.gradient_blocks) {
        if (other.ready_after_node > block.ready_after_node) next_ready = std::min(next_ready, other.ready_after_node);
      }
    }
    block.released_after_node = std::max({next_ready, block.ready_after_node, last_reader[k]});
  }
}

// Once the blocks are placed: each bucket's bytes, and each gradient, at its place in its block.
void place_gradients_in_blocks(MemoryPlan& plan) {
  for (size_t k = 0; k < plan.gradient_blocks.size(); ++k) {
    const GradientBlock& block = plan.gradient_blocks[k];
    const uint64_t start = plan.buckets[block.first_bucket].offset;  // the block's place in the flat layout
    for (size_t b = block.first_bucket; b <= block.last_bucket; ++b) {
      plan.buckets[b].data_offset = block.offset + (plan.buckets[b].offset - start);
      plan.buckets[b].block = static_cast<int>(k);
    }
    const auto [first, last] = block_gradients(plan, block);
    for (size_t i = first; i <= last; ++i) {
      uint64_t& offset = plan.offsets[static_cast<size_t>(plan.gradient_order[i])];
      offset = block.offset + (offset - start);
    }
  }
}

// Each block's gaps: its bytes that none of its gradients covers (they lie in flat-layout order, apart).
void find_block_gaps(const Graph& graph, MemoryPlan& plan) {
  for (GradientBlock& block : plan.gradient_blocks) {
    const uint64_t start = plan.buckets[block.first_bucket].offset;
    const auto [first, last] = block_gradients(plan, block);
    uint64_t covered = 0;  // relative to the block: the end of the gradients so far
    for (size_t i = first; i <= last; ++i) {
      const TensorId id = plan.gradient_order[i];
      const uint64_t at = plan.offsets[static_cast<size_t>(id)] - start;
      if (at > covered) block.gaps.push_back(ByteRange{covered, at - covered});
      covered = std::max(covered, at + graph.tensor(id).bytes());
    }
    if (block.bytes > covered) block.gaps.push_back(ByteRange{covered, block.bytes - covered});
  }
}

}  // namespace

MemoryPlan plan_memory(const Graph& graph, const PlanOptions& options) {
  if (options.alignment == 0 || (options.alignment & (options.alignment - 1)) != 0) {
    throw UsageError("plan alignment must be a power of two");
  }
  MemoryPlan plan;
  plan.alignment = options.alignment;
  plan.offsets.assign(graph.tensors().size(), 0);
  record_uses(graph, plan);
  order_gradients(graph, plan);

  if (options.parameter_shards < 1) throw UsageError("plan: parameter_shards must be at least 1");
  plan.parameter_shards = options.parameter_shards;
  plan.bucket_bytes = options.bucket_bytes;
  const uint64_t a = options.alignment;
  // The gradients back to back from 0 (with the buckets' gaps when sharded by bucket): the parameters take these
  // offsets as they are, the gradients the same ones a region further, so both flat buffers line up.
  lay_out(graph, plan.gradient_order, 0, a, plan);
  const uint64_t unit = a * static_cast<uint64_t>(options.parameter_shards);
  if (options.shard_by_bucket) open_gaps_between_buckets(graph, plan, options.bucket_bytes, unit);
  plan.shard_by_bucket = options.shard_by_bucket;
  uint64_t offset = 0;
  for (TensorId gradient : plan.gradient_order) {
    const uint64_t relative = plan.offsets[static_cast<size_t>(gradient)];
    plan.offsets[static_cast<size_t>(graph.tensor(gradient).gradient_of)] = relative;
    offset = std::max(offset, relative + graph.tensor(gradient).bytes());
  }
  plan.parameter_bytes = offset;
  for (TensorId gradient : plan.gradient_order) plan.flat_offsets.push_back(plan.offsets[static_cast<size_t>(gradient)]);
  plan.gradient_region_offset = align_up(offset, unit);
  for (TensorId gradient : plan.gradient_order) plan.offsets[static_cast<size_t>(gradient)] += plan.gradient_region_offset;
  // By bucket, the last bucket's chunks run to the unit: its padding belongs to the gradient region too.
  plan.gradient_bytes = options.shard_by_bucket ? plan.gradient_region_offset : offset;
  if (options.gradient_blocks && !options.shard_by_bucket) {
    throw UsageError("plan: gradient blocks need the layout by bucket (shard_by_bucket)");
  }
  plan.gradients_in_blocks = options.gradient_blocks;
  if (options.parameter_blocks && !options.gradient_blocks) {
    throw UsageError("plan: parameter blocks need gradient blocks");
  }
  if (!options.parameter_blocks) {
    for (const TensorInfo& info : graph.tensors()) {
      if (info.parameter_copy_of != kNoTensor) {
        throw UsageError("plan: '" + info.name +
                         "' is a backward copy of a parameter, which only parameter blocks place");
      }
    }
  }
  plan.parameters_in_blocks = options.parameter_blocks;
  // The buckets are cut from the flat layout (the parameters' mirror) either way; with blocks nothing of it is
  // allocated: the parameters' region is followed by the optimizer's.
  plan.buckets = cut_buckets(graph, plan, options.bucket_bytes, shard_unit(plan), plan.shard_by_bucket);
  if (plan.gradients_in_blocks) {
    make_gradient_blocks(graph, plan, options.gradient_blocks_until_end);
    find_block_gaps(graph, plan);  // from the flat layout's offsets, before the blocks are placed
  }
  if (plan.parameters_in_blocks) make_parameter_blocks(graph, plan);
  offset = plan.parameters_in_blocks
               ? 0
               : plan.gradient_region_offset + (plan.gradients_in_blocks ? 0 : plan.gradient_bytes);
  uint64_t start = align_up(offset, a);
  offset = lay_out(graph, graph.tensors_with_role(TensorRole::kOptimizerState), start, a, plan);
  plan.optimizer_bytes = offset - start;
  start = align_up(offset, a);
  offset = lay_out(graph, graph.tensors_with_role(TensorRole::kState), start, a, plan);
  plan.state_bytes = offset - start;
  start = align_up(offset, a);
  offset = lay_out(graph, graph.tensors_with_role(TensorRole::kInput), start, a, plan);
  plan.input_bytes = offset - start;
  start = align_up(offset, a);
  plan.activation_peak_bytes = place_by_liveness(graph, start, a, plan);
  plan.total_bytes = start + plan.activation_peak_bytes;
  if (plan.gradients_in_blocks) place_gradients_in_blocks(plan);
  if (plan.parameters_in_blocks) place_parameters_in_blocks(graph, plan);
  place_views(graph, plan);
  return plan;
}

ParameterShard parameter_shard(const MemoryPlan& plan, int rank, int ranks) {
  if (ranks < 1 || plan.parameter_shards % ranks != 0 || rank < 0 || rank >= ranks) {
    throw UsageError("parameter shard " + std::to_string(rank) + " of " + std::to_string(ranks) +
                     ": the plan splits its parameters into " + std::to_string(plan.parameter_shards) +
                     " (or a divisor of that)");
  }
  ParameterShard shard;
  auto add = [&shard](int64_t first, int64_t count) {
    shard.ranges.push_back(ShardRange{first, count});
    shard.count += count;
  };
  if (plan.shard_by_bucket) {
    for (const GradientBucket& bucket : plan.buckets) {
      const auto chunk = static_cast<int64_t>(bucket.bytes / sizeof(float)) / ranks;
      add(static_cast<int64_t>((bucket.offset - plan.gradient_region_offset) / sizeof(float)) + chunk * rank, chunk);
    }
    return shard;
  }
  const auto parameters = static_cast<int64_t>(plan.parameter_bytes / sizeof(float));
  shard.stride = static_cast<int64_t>(plan.gradient_region_offset / sizeof(float)) / ranks;
  const int64_t first = std::min(parameters, shard.stride * rank);
  add(first, std::min(parameters, shard.stride * (rank + 1)) - first);
  return shard;
}

std::vector<int64_t> parameter_flat_elements(const Graph& graph, const MemoryPlan& plan) {
  std::vector<int64_t> first(graph.tensors().size(), -1);
  for (size_t i = 0; i < plan.gradient_order.size(); ++i) {
    first[static_cast<size_t>(graph.tensor(plan.gradient_order[i]).gradient_of)] =
        static_cast<int64_t>(plan.flat_offsets[i] / sizeof(float));
  }
  return first;
}

PlanCategories plan_categories(const Graph& graph, const MemoryPlan& plan) {
  PlanCategories categories;
  categories.parameters = plan.parameters_in_blocks ? 0 : role_bytes(graph, TensorRole::kParameter);
  categories.gradients = plan.gradients_in_blocks ? 0 : role_bytes(graph, TensorRole::kGradient);
  categories.optimizer_state = role_bytes(graph, TensorRole::kOptimizerState);
  categories.running_state = role_bytes(graph, TensorRole::kState);
  categories.inputs = role_bytes(graph, TensorRole::kInput);
  // Live bytes per node by a sweep: each tensor adds its bytes at its first node and removes them after its last;
  // a gradient block's gradients (not its gaps: padding) from its first writer until it is released.
  const size_t nodes = graph.nodes().size() + 1;  // + the host's reads after the step
  std::vector<int64_t> activation_delta(nodes + 1, 0), workspace_delta(nodes + 1, 0), gradient_delta(nodes + 1, 0),
      parameter_delta(nodes + 1, 0);
  for (TensorId id : shared_region_tensors(graph)) {
    const auto [first, last] = shared_lifetime(graph, plan, id);
    auto& delta = graph.tensor(id).role == TensorRole::kWorkspace ? workspace_delta : activation_delta;
    const auto bytes = static_cast<int64_t>(graph.tensor(id).bytes());
    delta[static_cast<size_t>(first)] += bytes;
    delta[static_cast<size_t>(last) + 1] -= bytes;
  }
  for (const GradientBlock& block : plan.gradient_blocks) {
    const auto [first, last] = block_gradients(plan, block);
    int64_t bytes = 0;
    for (size_t i = first; i <= last; ++i) bytes += static_cast<int64_t>(graph.tensor(plan.gradient_order[i]).bytes());
    gradient_delta[static_cast<size_t>(block.first_node)] += bytes;
    gradient_delta[static_cast<size_t>(block.released_after_node) + 1] -= bytes;
  }
  for (const ParameterBlock& block : plan.parameter_blocks) {  // its parameters, not its gaps (padding)
    const auto bytes = static_cast<int64_t>(parameter_block_members_bytes(graph, plan, block));
    parameter_delta[static_cast<size_t>(block.first_node)] += bytes;
    parameter_delta[static_cast<size_t>(block.last_node) + 1] -= bytes;
  }
  int64_t activations = 0, workspace = 0, gradients = 0, parameters = 0, peak = -1;
  for (size_t n = 0; n < nodes; ++n) {
    activations += activation_delta[n];
    workspace += workspace_delta[n];
    gradients += gradient_delta[n];
    parameters += parameter_delta[n];
    if (activations + workspace + gradients + parameters > peak) {
      peak = activations + workspace + gradients + parameters;
      categories.activations = static_cast<uint64_t>(activations);
      categories.workspace = static_cast<uint64_t>(workspace);
      if (plan.gradients_in_blocks) categories.gradients = static_cast<uint64_t>(gradients);
      if (plan.parameters_in_blocks) categories.parameters = static_cast<uint64_t>(parameters);
    }
  }
  categories.padding = plan.total_bytes - categories.parameters - categories.gradients - categories.optimizer_state -
                       categories.running_state - categories.inputs - categories.activations - categories.workspace;
  return categories;
}

int64_t largest_batch_that_fits(const std::function<uint64_t(int64_t)>& bytes_for_batch, uint64_t capacity_bytes,
                                int64_t upper, int64_t lowest) {
  lowest = std::max<int64_t>(lowest, 1);
  if (upper < lowest || bytes_for_batch(lowest) > capacity_bytes) return 0;
  int64_t low = lowest, high = upper;  // invariant: low fits
  while (low < high) {
    const int64_t middle = low + (high - low + 1) / 2;
    if (bytes_for_batch(middle) <= capacity_bytes) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  return low;
}

}  // namespace sb
