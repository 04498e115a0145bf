// zero3's gathers before use (src/core/unit_gathers.h).
#include "src/core/unit_gathers.h"

#include <algorithm>
#include <limits>

namespace sb {

namespace {

TensorId storage_of(const Graph& graph, TensorId id) {
  while (graph.tensor(id).view_of != kNoTensor) id = graph.tensor(id).view_of;
  return id;
}

constexpr size_t kNever = std::numeric_limits<size_t>::max();

// Per bucket, the first node in [from, to) that `touches` one of its tensors (kNever: none).
template <typename Touches>
std::vector<size_t> first_nodes(const Graph& graph, size_t from, size_t to, size_t buckets, Touches touches) {
  std::vector<size_t> first(buckets, kNever);
  for (size_t n = from; n < to; ++n) {
    touches(graph.nodes()[n], [&](size_t bucket) { first[bucket] = std::min(first[bucket], n); });
  }
  return first;
}

// (node, bucket) pairs of the buckets that have a node, by node then bucket.
std::vector<ParameterGather> ordered(const std::vector<size_t>& first, ParameterGather::When when) {
  std::vector<ParameterGather> out;
  for (size_t b = 0; b < first.size(); ++b) {
    if (first[b] != kNever) out.push_back(ParameterGather{when, b, first[b]});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ParameterGather& a, const ParameterGather& b) { return a.node < b.node; });
  return out;
}

}  // namespace

std::vector<ParameterGather> unit_gathers(const Graph& graph, const MemoryPlan& plan,
                                         const std::vector<GradientBucket>& buckets, size_t sub_step,
                                         size_t forward_end) {
  // Which buckets hold each parameter and each gradient (storage ids): a large parameter spans several.
  std::vector<std::vector<size_t>> holding(graph.tensors().size());
  for (size_t b = 0; b < buckets.size(); ++b) {
    for (size_t i = buckets[b].first; i <= buckets[b].last; ++i) {
      const TensorId gradient = plan.gradient_order.at(i);
      holding.at(static_cast<size_t>(gradient)).push_back(b);
      holding.at(static_cast<size_t>(graph.tensor(gradient).gradient_of)).push_back(b);
    }
  }
  auto reads_parameter = [&](const Node& node, auto&& mark) {
    for (TensorId id : node.inputs) {
      const TensorId s = storage_of(graph, id);
      // A backward copy (src/core/backward_parameter_copies.h) is its parameter gathered again.
      const TensorId copy_of = graph.tensor(s).parameter_copy_of;
      if (copy_of == kNoTensor && graph.tensor(s).role != TensorRole::kParameter) continue;
      for (size_t b : holding[static_cast<size_t>(copy_of == kNoTensor ? s : copy_of)]) mark(b);
    }
  };
  auto touches_unit = [&](const Node& node, auto&& mark) {
    reads_parameter(node, mark);
    for (const auto* list : {&node.inputs, &node.outputs}) {
      for (TensorId id : *list) {
        const TensorId s = storage_of(graph, id);
        if (graph.tensor(s).role != TensorRole::kGradient) continue;
        for (size_t b : holding[static_cast<size_t>(s)]) mark(b);
      }
    }
  };
  std::vector<ParameterGather> gathers;
  if (!graph.sub_steps().empty()) {
    std::vector<size_t> first(buckets.size(), kNever);
    for (const StepPart& part : graph.sub_steps().at(sub_step).parts) {
      const std::vector<size_t> in_part = first_nodes(graph, part.begin, part.end, buckets.size(), reads_parameter);
      for (size_t b = 0; b < first.size(); ++b) first[b] = std::min(first[b], in_part[b]);
    }
    gathers = ordered(first, ParameterGather::When::kBeforeParts);
  }
  const std::vector<ParameterGather> forward = ordered(
      first_nodes(graph, graph.training_begin(), forward_end, buckets.size(), reads_parameter),
      ParameterGather::When::kBeforeForward);
  std::vector<ParameterGather> backward = ordered(
      first_nodes(graph, forward_end, graph.nodes().size(), buckets.size(), touches_unit),
      ParameterGather::When::kBeforeBackward);
  if (!forward.empty()) {
    // Kept whole: the bucket gathered last and the other pieces of the parameter it may be a piece of (gathered at
    // the same node), which parameter blocks keep in one block.
    const GradientBucket& kept = buckets[forward.back().bucket];
    backward.erase(std::remove_if(backward.begin(), backward.end(),
                                  [&](const ParameterGather& g) {
                                    return buckets[g.bucket].first == kept.first && buckets[g.bucket].last == kept.last;
                                  }),
                   backward.end());
  }
  gathers.insert(gathers.end(), forward.begin(), forward.end());
  gathers.insert(gathers.end(), backward.begin(), backward.end());
  return gathers;
}

}  // namespace sb
