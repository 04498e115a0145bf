// What every executor shares (include/scalebench/executor.h): node ranges and the dropout random stream.
#include <algorithm>
#include <chrono>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "src/core/unit_gathers.h"

namespace sb {

Executor::Executor(const Graph& graph, const MemoryPlan& plan)
    : graph_(graph),
      plan_(plan),
      shard_{ShardRange{0, static_cast<int64_t>(plan.parameter_bytes / sizeof(float))}},
      shard_count_(static_cast<int64_t>(plan.parameter_bytes / sizeof(float))) {
  // Every node that draws random numbers (dropout, the SAN turn mask) owns the Philox blocks
  // [block_offset, block_offset + ceil(n / 4)) of a step.
  for (const Node& node : graph.nodes()) {
    if (node.attributes.count("block_offset") == 0) continue;
    const uint64_t end = static_cast<uint64_t>(node.attributes.at("block_offset")) +
                         (static_cast<uint64_t>(node.attributes.at("n")) + 3) / 4;
    blocks_per_step_ = std::max(blocks_per_step_, end);
  }
  if (plan.gradients_in_blocks) {
    blocks_first_written_at_.resize(graph.nodes().size());
    buckets_finished_at_.resize(graph.nodes().size());
    for (size_t k = 0; k < plan.gradient_blocks.size(); ++k) {
      blocks_first_written_at_.at(static_cast<size_t>(plan.gradient_blocks[k].first_node)).push_back(k);
    }
    for (size_t b = 0; b < plan.buckets.size(); ++b) {
      buckets_finished_at_.at(static_cast<size_t>(plan.buckets[b].ready_after_node)).push_back(b);
    }
  }
  if (plan.parameters_in_blocks) {
    written_parameters_.assign(static_cast<size_t>(plan.parameter_bytes / sizeof(float)), 0.0f);
    parameter_flat_ = parameter_flat_elements(graph, plan);
    units_needed_at_.resize(graph.nodes().size());
    for (size_t k = 0; k < graph.sub_step_count(); ++k) {
      for (const ParameterGather& g : unit_gathers(graph, plan, plan.buckets, k, forward_node_count())) {
        const GradientBucket& bucket = plan.buckets[g.bucket];
        const uint64_t to = g.when == ParameterGather::When::kBeforeBackward ? bucket.backward_parameters_offset
                                                                             : bucket.forward_parameters_offset;
        auto& units = units_needed_at_.at(g.node);
        if (std::find(units.begin(), units.end(), std::make_pair(g.bucket, to)) == units.end()) {
          units.emplace_back(g.bucket, to);
        }
      }
    }
  }
}

template <typename Visit>
int64_t Executor::visit_shard(int64_t first, int64_t count, Visit visit) const {
  int64_t packed = 0, held = 0;
  for (const ShardRange& r : shard_) {
    const int64_t from = std::max(first, r.first), to = std::min(first + count, r.first + r.count);
    if (to > from) {
      visit(packed + (from - r.first), from, to);
      held += to - from;
    }
    packed += r.count;
  }
  return held;
}

void Executor::ensure_parameter_shard() {
  if (!plan_.parameters_in_blocks || parameter_shard_floats_ == shard_count_) return;
  allocate_parameter_shard(shard_count_);
  parameter_shard_floats_ = shard_count_;
  upload_written_parameters(0, static_cast<int64_t>(written_parameters_.size()));
}

void Executor::upload_written_parameters(int64_t first, int64_t count) {
  float* shard = parameter_shard_data();
  visit_shard(first, count, [&](int64_t packed, int64_t from, int64_t to) {
    copy_from_host(shard + packed, written_parameters_.data() + from, static_cast<uint64_t>(to - from) * sizeof(float));
  });
}

float* Executor::parameters_of(int64_t first, int64_t count) {
  return parameters_at(first, plan_.parameters_in_blocks ? optimizer_state_offset(first, count) : 0);
}

float* Executor::parameters_at(int64_t first, int64_t packed) {
  if (plan_.parameters_in_blocks) {
    ensure_parameter_shard();
    return parameter_shard_data() + packed;
  }
  return static_cast<float*>(arena_data()) + first;
}

// Elements [from, to) of the flat layout, at `packed` in the shard, into `out`: from the shard, or before it is
// allocated from the weights written (its values then), so that reading the initial weights allocates nothing (a shard
// of every parameter before the reducer sets a smaller one).
void Executor::read_held_parameters(int64_t packed, int64_t from, int64_t to, float* out) {
  if (parameter_shard_floats_ == shard_count_) {
    copy_to_host(out, parameter_shard_data() + packed, static_cast<uint64_t>(to - from) * sizeof(float));
  } else {
    std::copy_n(written_parameters_.begin() + from, to - from, out);
  }
}

std::vector<float> Executor::read_parameter_shard() {
  if (!plan_.parameters_in_blocks) throw UsageError("read_parameter_shard: the plan holds its parameters whole");
  std::vector<float> values(static_cast<size_t>(shard_count_));
  visit_shard(0, static_cast<int64_t>(written_parameters_.size()), [&](int64_t packed, int64_t from, int64_t to) {
    read_held_parameters(packed, from, to, values.data() + packed);
  });
  return values;
}

uint64_t Executor::parameter_shard_bytes() const {
  return plan_.parameters_in_blocks ? static_cast<uint64_t>(shard_count_) * sizeof(float) : 0;
}

bool Executor::write_parameter(TensorId id, const void* host, size_t bytes) {
  if (!plan_.parameters_in_blocks || graph_.tensor(id).role != TensorRole::kParameter) return false;
  const int64_t first = parameter_flat_.at(static_cast<size_t>(id));
  const auto count = static_cast<int64_t>(bytes / sizeof(float));
  std::copy_n(static_cast<const float*>(host), count, written_parameters_.begin() + first);
  if (parameter_shard_floats_ == shard_count_) upload_written_parameters(first, count);
  return true;
}

bool Executor::read_parameter(TensorId id, void* host, size_t bytes) {
  if (!plan_.parameters_in_blocks || graph_.tensor(id).role != TensorRole::kParameter) return false;
  const int64_t first = parameter_flat_.at(static_cast<size_t>(id));
  const auto count = static_cast<int64_t>(bytes / sizeof(float));
  auto* out = static_cast<float*>(host);
  const int64_t held = visit_shard(first, count, [&](int64_t packed, int64_t from, int64_t to) {
    read_held_parameters(packed, from, to, out + (from - first));
  });
  if (held != count) {
    throw UsageError("parameter '" + graph_.tensor(id).name + "' is not whole in this rank's shard of the parameters " +
                     "(zero3): gather the weights across the ranks to read it");
  }
  return true;
}

void Executor::ensure_gradient_shard() {
  if (!plan_.gradients_in_blocks || gradient_shard_floats_ == shard_count_) return;
  allocate_gradient_shard(shard_count_);
  gradient_shard_floats_ = shard_count_;
}

float* Executor::gradients_of(int64_t first, int64_t count) {
  return gradients_at(first, plan_.gradients_in_blocks ? optimizer_state_offset(first, count) : 0);
}

float* Executor::gradients_at(int64_t first, int64_t packed) {
  if (plan_.gradients_in_blocks) {
    ensure_gradient_shard();
    return gradient_shard_data() + packed;
  }
  return reinterpret_cast<float*>(static_cast<unsigned char*>(arena_data()) + plan_.gradient_region_offset) + first;
}

uint64_t Executor::gradient_shard_bytes() const {
  return plan_.gradients_in_blocks ? static_cast<uint64_t>(shard_count_) * sizeof(float) : 0;
}

void Executor::before_node(size_t node) {
  if (!plan_.gradients_in_blocks) return;
  for (size_t k : blocks_first_written_at_[node]) zero_block_gaps(k);
  if (!plan_.parameters_in_blocks || parameters_gathered_by_caller_) return;
  for (const auto& [b, to] : units_needed_at_[node]) {
    const GradientBucket& bucket = plan_.buckets[b];
    const auto first = static_cast<int64_t>((bucket.offset - plan_.gradient_region_offset) / sizeof(float));
    const auto count = static_cast<int64_t>(bucket.bytes / sizeof(float));
    // Every parameter of the bucket; the padding after the last parameter (which a shard of every parameter does not
    // cover) no node reads.
    const int64_t parameters = std::min(first + count, static_cast<int64_t>(written_parameters_.size())) - first;
    const float* shard = parameters_at(0, 0);
    auto* block = reinterpret_cast<float*>(static_cast<unsigned char*>(arena_data()) + to);
    const int64_t held = visit_shard(first, count, [&](int64_t packed, int64_t from, int64_t end) {
      copy_device_bytes(block + (from - first), shard + packed, static_cast<uint64_t>(end - from) * sizeof(float));
    });
    if (held < parameters) {
      throw UsageError("parameter blocks: this executor's shard holds part of bucket " + std::to_string(b) +
                       " only; a reducer must gather it");
    }
  }
}

// The finished bucket's elements that lie in the shard's ranges, copied to their place in the gradient shard.
void Executor::after_node(size_t node) {
  if (!plan_.gradients_in_blocks || gradients_collected_by_caller_) return;
  for (size_t b : buckets_finished_at_[node]) {
    const GradientBucket& bucket = plan_.buckets[b];
    const auto first = static_cast<int64_t>((bucket.offset - plan_.gradient_region_offset) / sizeof(float));
    const int64_t end = first + static_cast<int64_t>(bucket.bytes / sizeof(float));
    const auto* data = reinterpret_cast<const float*>(static_cast<unsigned char*>(arena_data()) + bucket.data_offset);
    for (const ShardRange& r : shard_) {
      const int64_t from = std::max(first, r.first), to = std::min(end, r.first + r.count);
      if (to <= from) continue;
      copy_device_bytes(gradients_of(from, to - from), data + (from - first),
                        static_cast<uint64_t>(to - from) * sizeof(float));
    }
  }
}

void Executor::initialize_state() {
  for (TensorId id : graph_.tensors_with_role(TensorRole::kState)) {
    const TensorInfo& info = graph_.tensor(id);
    if (info.dtype != DType::kFloat32) throw UsageError("state tensor '" + info.name + "' must be fp32");
    const std::vector<float> values(static_cast<size_t>(info.elements()), info.initial_value);
    write_tensor(id, values.data(), info.bytes());
  }
}

float Executor::loss_weight(TensorId targets) const {
  auto it = loss_weights_.find(targets);
  return it == loss_weights_.end() ? 1.0f : it->second;
}

void Executor::run() { run_nodes(0, graph_.nodes().size()); }

void Executor::set_optimizer_shard(std::vector<ShardRange> ranges, NormAcrossRanks norm_across_ranks) {
  // By bucket, the last ranges may run into the gradient region's padding (plan_memory), never past it.
  const auto limit = static_cast<int64_t>(std::max(plan_.parameter_bytes, plan_.gradient_bytes) / sizeof(float));
  int64_t end = 0, count = 0;
  for (const ShardRange& r : ranges) {
    if (r.first < end || r.count < 0 || r.first + r.count > limit) {
      throw UsageError("optimizer shard range [" + std::to_string(r.first) + ", " + std::to_string(r.first + r.count) +
                       ") out of order or outside the " + std::to_string(limit) + " parameters");
    }
    end = r.first + r.count;
    count += r.count;
  }
  if (ranges.empty()) throw UsageError("optimizer shard: no range");
  norm_across_ranks_ = std::move(norm_across_ranks);
  const bool same = std::equal(shard_.begin(), shard_.end(), ranges.begin(), ranges.end(),
                               [](const ShardRange& a, const ShardRange& b) {
                                 return a.first == b.first && a.count == b.count;
                               });
  shard_ = std::move(ranges);
  shard_count_ = count;
  if (!same) {
    reset_optimizer_state();  // another shard's moments are not this one's
    gradient_shard_floats_ = -1;  // another shard's gradients: allocated again, zeroed
    ensure_gradient_shard();
    parameter_shard_floats_ = -1;  // another shard's weights: filled again from those written
    ensure_parameter_shard();
  }
}

int64_t Executor::optimizer_state_offset(int64_t first, int64_t count) const {
  int64_t offset = 0;
  for (const ShardRange& r : shard_) {
    if (first >= r.first && count >= 0 && first + count <= r.first + r.count) return offset + (first - r.first);
    offset += r.count;
  }
  throw UsageError("optimizer_step_range: range [" + std::to_string(first) + ", " + std::to_string(first + count) +
                   ") outside the optimizer's shard of the parameters");
}

size_t Executor::forward_node_count() const {
  size_t count = 0;
  while (count < graph_.nodes().size() && !graph_.nodes()[count].backward) ++count;
  return count;
}

Executor::StepProfile Executor::profile_step(const OptimizerSettings& settings, int64_t step) {
  const size_t nodes = graph_.nodes().size();
  StepProfile profile;
  mark(0);
  for (size_t i = 0; i < nodes; ++i) {
    const auto begin = std::chrono::steady_clock::now();
    run_nodes(i, i + 1);
    profile.node_host_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count());
    mark(i + 1);
  }
  optimizer_step(settings, step);
  mark(nodes + 1);
  for (size_t i = 0; i < nodes; ++i) profile.node_ms.push_back(elapsed_ms(i, i + 1));
  profile.optimizer_ms = elapsed_ms(nodes, nodes + 1);
  return profile;
}

void Executor::begin_step_capture() {
  throw UsageError("cannot capture a step into a graph: " + why_no_step_graph().value_or("not supported"));
}

std::optional<std::string> Executor::end_step_capture() { return why_no_step_graph(); }

void Executor::replay_step() {
  throw UsageError("cannot replay a step graph: " + why_no_step_graph().value_or("none captured"));
}

void Executor::set_random_stream(uint64_t seed, uint64_t step) {
  seed_ = seed;
  step_ = step;
}

uint64_t Executor::dropout_offset(const Node& node) const {
  return step_ * blocks_per_step_ + static_cast<uint64_t>(node.attributes.at("block_offset"));
}

}  // namespace sb
