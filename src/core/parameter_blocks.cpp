// zero3's parameter blocks (src/core/parameter_blocks.h).
#include "src/core/parameter_blocks.h"

#include <algorithm>
#include <limits>
#include <map>

#include "scalebench/error.h"
#include "src/core/unit_gathers.h"

namespace sb {
namespace {

// The nodes a block must be alive for: where its gathers may be issued, and up to where they or its members are
// needed.
struct Span {
  int first = std::numeric_limits<int>::max(), last = -1;
  bool empty() const { return last < 0; }
  void add(int from, int to) {
    first = std::min(first, from);
    last = std::max(last, to);
  }
};

size_t forward_node_count(const Graph& graph) {
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    if (graph.nodes()[n].backward) return n;
  }
  return graph.nodes().size();
}

// Per bucket, its block's group: the buckets of one unit (an oversized gradient's pieces share first and last).
std::vector<size_t> group_of_buckets(const MemoryPlan& plan, std::vector<std::pair<size_t, size_t>>& groups) {
  std::vector<size_t> group(plan.buckets.size());
  for (size_t b = 0; b < plan.buckets.size(); ++b) {
    const bool piece_of_previous = b > 0 && plan.buckets[b - 1].first == plan.buckets[b].first;
    if (!piece_of_previous) groups.emplace_back(b, b);
    groups.back().second = b;
    group[b] = groups.size() - 1;
  }
  return group;
}

// Per parameter, its backward copy (kNoTensor: none).
std::vector<TensorId> backward_copies(const Graph& graph) {
  std::vector<TensorId> copy(graph.tensors().size(), kNoTensor);
  for (size_t id = 0; id < graph.tensors().size(); ++id) {
    const TensorId of = graph.tensors()[id].parameter_copy_of;
    if (of != kNoTensor) copy[static_cast<size_t>(of)] = static_cast<TensorId>(id);
  }
  return copy;
}

// The parameters (gradient_order's gradients' parameters) of buckets [first, last].
template <typename Visit>
void for_each_parameter(const Graph& graph, const MemoryPlan& plan, size_t first, size_t last, Visit visit) {
  for (size_t i = plan.buckets[first].first; i <= plan.buckets[last].last; ++i) {
    visit(graph.tensor(plan.gradient_order[i]).gradient_of);
  }
}

}  // namespace

void make_parameter_blocks(const Graph& graph, MemoryPlan& plan) {
  std::vector<std::pair<size_t, size_t>> groups;
  const std::vector<size_t> group = group_of_buckets(plan, groups);
  std::vector<Span> forward(groups.size()), backward(groups.size());
  const int training_begin = static_cast<int>(graph.training_begin());
  for (size_t k = 0; k < graph.sub_step_count(); ++k) {
    int parts_begin = training_begin;
    if (!graph.sub_steps().empty() && !graph.sub_steps()[k].parts.empty()) {
      parts_begin = static_cast<int>(graph.sub_steps()[k].parts.front().begin);
    }
    // The parts' gathers are issued together before the parts; the training pass's first at its start, each next one
    // when the compute stream reaches the node that needs the previous one (GradientReducer::run_training_nodes).
    int previous_needed = -1;
    for (const ParameterGather& g : unit_gathers(graph, plan, plan.buckets, k, forward_node_count(graph))) {
      const int needed = static_cast<int>(g.node);
      int issued = parts_begin;
      if (g.when != ParameterGather::When::kBeforeParts) {
        issued = previous_needed < 0 ? training_begin : previous_needed;
        previous_needed = needed;
      }
      (g.when == ParameterGather::When::kBeforeBackward ? backward : forward)[group[g.bucket]].add(issued, needed);
    }
  }
  const std::vector<TensorId> copy = backward_copies(graph);
  std::vector<ParameterBlock> backward_blocks;
  for (size_t u = 0; u < groups.size(); ++u) {
    const auto [first, last] = groups[u];
    uint64_t bytes = 0;
    for (size_t b = first; b <= last; ++b) bytes += plan.buckets[b].bytes;
    Span copies;  // the backward copies' uses
    for_each_parameter(graph, plan, first, last, [&](TensorId p) {
      const TensorId c = copy[static_cast<size_t>(p)];
      if (c != kNoTensor && plan.last_use[static_cast<size_t>(c)] >= 0) {
        copies.add(plan.first_use[static_cast<size_t>(c)], plan.last_use[static_cast<size_t>(c)]);
      }
    });
    if (!forward[u].empty()) {
      Span& span = forward[u];
      for_each_parameter(graph, plan, first, last, [&](TensorId p) {
        span.last = std::max(span.last, plan.last_use[static_cast<size_t>(p)]);
      });
      if (backward[u].empty() && !copies.empty()) span.last = std::max(span.last, copies.last);  // kept
      plan.parameter_blocks.push_back(ParameterBlock{0, bytes, first, last, false, span.first, span.last});
    }
    if (!backward[u].empty()) {
      Span& span = backward[u];
      if (!copies.empty()) span.last = std::max(span.last, copies.last);
      backward_blocks.push_back(ParameterBlock{0, bytes, first, last, true, span.first, span.last});
    } else if (!copies.empty() && forward[u].empty()) {
      throw UsageError("plan: the backward copies of bucket " + std::to_string(first) +
                       "'s parameters are never gathered");
    }
  }
  plan.parameter_blocks.insert(plan.parameter_blocks.end(), backward_blocks.begin(), backward_blocks.end());
}

void place_parameters_in_blocks(const Graph& graph, MemoryPlan& plan) {
  const std::vector<TensorId> copy = backward_copies(graph);
  // A kept unit's backward copies go where its forward block is: the backward blocks come after the forward ones.
  std::map<size_t, const ParameterBlock*> backward_of;  // by first bucket
  for (const ParameterBlock& block : plan.parameter_blocks) {
    if (block.backward || backward_of.count(block.first_bucket) == 0) backward_of[block.first_bucket] = &block;
  }
  const std::vector<int64_t> flat = parameter_flat_elements(graph, plan);  // in floats
  for (const ParameterBlock& block : plan.parameter_blocks) {
    const uint64_t start = plan.buckets[block.first_bucket].offset - plan.gradient_region_offset;
    const bool holds_copies = backward_of.at(block.first_bucket) == &block;
    for (size_t b = block.first_bucket; b <= block.last_bucket; ++b) {
      const uint64_t at = block.offset + (plan.buckets[b].offset - plan.gradient_region_offset - start);
      if (!block.backward) plan.buckets[b].forward_parameters_offset = at;
      if (holds_copies) plan.buckets[b].backward_parameters_offset = at;
    }
    for_each_parameter(graph, plan, block.first_bucket, block.last_bucket, [&](TensorId p) {
      const auto relative = static_cast<uint64_t>(flat[static_cast<size_t>(p)]) * sizeof(float) - start;
      const uint64_t at = block.offset + relative;
      if (!block.backward) plan.offsets[static_cast<size_t>(p)] = at;
      const TensorId c = copy[static_cast<size_t>(p)];
      if (holds_copies && c != kNoTensor) plan.offsets[static_cast<size_t>(c)] = at;
    });
  }
}

uint64_t parameter_block_members_bytes(const Graph& graph, const MemoryPlan& plan, const ParameterBlock& block) {
  uint64_t bytes = 0;
  for_each_parameter(graph, plan, block.first_bucket, block.last_bucket,
                     [&](TensorId p) { bytes += graph.tensor(p).bytes(); });
  return bytes;
}

}  // namespace sb
