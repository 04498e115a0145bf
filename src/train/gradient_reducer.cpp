// Bucketed, overlapped gradient averaging (src/train/gradient_reducer.h).
#include "src/train/gradient_reducer.h"

#include <algorithm>

#include "scalebench/error.h"

namespace sb {

GradientReducer::GradientReducer(Device& device, Communicator& communicator, Executor& executor, DType wire_dtype,
                                 bool overlap, bool high_priority, const std::vector<GradientBucket>* buckets)
    : device_(device), communicator_(communicator), executor_(executor), wire_dtype_(wire_dtype), overlap_(overlap) {
  if (wire_dtype != DType::kFloat32 && wire_dtype != DType::kBFloat16) {
    throw UsageError(std::string("--grad-dtype must be fp32 or bf16, not ") + dtype_name(wire_dtype));
  }
  buckets_ = buckets != nullptr ? *buckets : executor.plan().buckets;
  // Ready nodes grow with the backward order already; sorting makes the issue order explicit and stable.
  std::stable_sort(buckets_.begin(), buckets_.end(), [](const GradientBucket& a, const GradientBucket& b) {
    return a.ready_after_node < b.ready_after_node;
  });
  // Bucket ranges double as parameter ranges for update(): the planner lays parameters out exactly as their
  // gradients, one region apart.
  const MemoryPlan& plan = executor.plan();
  for (TensorId gradient : plan.gradient_order) {
    const TensorId parameter = executor.graph().tensor(gradient).gradient_of;
    if (plan.offsets.at(static_cast<size_t>(parameter)) + plan.gradient_region_offset !=
        plan.offsets.at(static_cast<size_t>(gradient))) {
      throw UsageError("gradient reducer: parameter '" + executor.graph().tensor(parameter).name +
                       "' is not laid out like its gradient");
    }
  }
  comm_stream_ = high_priority ? device.create_high_priority_stream() : device.create_stream();
  if (wire_dtype == DType::kBFloat16) {
    const uint64_t bytes = std::max<uint64_t>(executor.plan().gradient_bytes / 2, 2);
    wire_charge_ = AllocationCharge(bytes, "the bf16 gradient wire buffer");
    wire_buffer_ = communicator.allocate_buffer(device, bytes);
  }
  sub_steps_ = executor.graph().sub_step_count();
  for (size_t b = 0; b < buckets_.size() * sub_steps_; ++b) {
    ready_.push_back(device.create_event());
    started_.push_back(device.create_event());
    finished_.push_back(device.create_event());
  }
  all_done_ = device.create_event();
  phase_start_ = device.create_event();
  step_start_ = device.create_event();
  forward_done_ = device.create_event();
  nodes_done_ = device.create_event();
  step_done_ = device.create_event();
  begin_phase();
}

GradientReducer::~GradientReducer() {
  device_.synchronize(comm_stream_);
  if (wire_buffer_ != nullptr) communicator_.release_buffer(device_, wire_buffer_);
  device_.destroy_stream(comm_stream_);
}

uint64_t GradientReducer::wire_bytes(size_t reduction) const {
  const uint64_t bytes = buckets_.at(reduction % buckets_.size()).bytes;
  return wire_dtype_ == DType::kBFloat16 ? bytes / 2 : bytes;
}

void GradientReducer::all_reduce(size_t bucket) {
  const GradientBucket& b = buckets_[bucket];
  const size_t count = b.bytes / sizeof(float);
  auto* grads = static_cast<unsigned char*>(executor_.arena_data()) + b.offset;
  if (wire_dtype_ == DType::kFloat32) {
    communicator_.all_reduce(grads, grads, count, DType::kFloat32, ReduceOp::kAvg, comm_stream_);
    return;
  }
  const uint64_t element = (b.offset - executor_.plan().gradient_region_offset) / sizeof(float);
  void* wire = static_cast<unsigned char*>(wire_buffer_) + element * 2;
  device_.convert(grads, DType::kFloat32, wire, DType::kBFloat16, count, comm_stream_);
  communicator_.all_reduce(wire, wire, count, DType::kBFloat16, ReduceOp::kAvg, comm_stream_);
  device_.convert(wire, DType::kBFloat16, grads, DType::kFloat32, count, comm_stream_);
}

void GradientReducer::issue(size_t bucket, size_t event) {
  device_.push_range("all-reduce");
  ready_[event]->record(executor_.compute_stream());
  ready_[event]->block(comm_stream_);
  started_[event]->record(comm_stream_);
  all_reduce(bucket);
  finished_[event]->record(comm_stream_);
  device_.pop_range();
}

void GradientReducer::begin_phase() { phase_start_->record(executor_.compute_stream()); }

void GradientReducer::run_nodes_and_reduce(size_t sub_step) {
  const size_t nodes = executor_.graph().nodes().size();
  const size_t first_event = sub_step * buckets_.size();
  if (sub_step == 0) step_start_->record(executor_.compute_stream());
  device_.push_range("forward");
  size_t next = executor_.forward_node_count();
  executor_.run_nodes(executor_.graph().training_begin(), next);
  forward_done_->record(executor_.compute_stream());
  device_.pop_range();
  device_.push_range("backward");
  if (overlap_) {
    for (size_t b = 0; b < buckets_.size(); ++b) {
      const size_t end = static_cast<size_t>(std::max(buckets_[b].ready_after_node, -1) + 1);
      if (end > next) {
        executor_.run_nodes(next, end);
        next = end;
      }
      issue(b, first_event + b);
    }
  }
  executor_.run_nodes(next, nodes);
  nodes_done_->record(executor_.compute_stream());
  device_.pop_range();
  if (!overlap_) {
    for (size_t b = 0; b < buckets_.size(); ++b) issue(b, first_event + b);
  }
  all_done_->record(comm_stream_);
}

void GradientReducer::update(const OptimizerSettings& settings, int64_t step, size_t sub_step) {
  device_.push_range("optimizer");
  if (!overlap_ || !executor_.steps_in_ranges(settings)) {
    all_done_->block(executor_.compute_stream());
    executor_.optimizer_step(settings, step);
  } else {
    const uint64_t region = executor_.plan().gradient_region_offset;
    for (size_t b = 0; b < buckets_.size(); ++b) {
      finished_[sub_step * buckets_.size() + b]->block(executor_.compute_stream());
      executor_.optimizer_step_range(settings, step,
                                     static_cast<int64_t>((buckets_[b].offset - region) / sizeof(float)),
                                     static_cast<int64_t>(buckets_[b].bytes / sizeof(float)));
    }
  }
  step_done_->record(executor_.compute_stream());
  // The communication stream's last work joins the compute stream: a step captured into a graph must end on
  // the stream it began on (src/train/step_graph.h). Eagerly this waits for what the update already waited for.
  all_done_->block(executor_.compute_stream());
  device_.pop_range();
}

void GradientReducer::reduce_alone() {
  for (size_t e = 0; e < buckets_.size() * sub_steps_; ++e) {
    const size_t b = e % buckets_.size();
    started_[e]->record(comm_stream_);
    const GradientBucket& bucket = buckets_[b];
    const size_t count = bucket.bytes / sizeof(float);
    void* data = wire_dtype_ == DType::kBFloat16
                     ? static_cast<unsigned char*>(wire_buffer_) +
                           (bucket.offset - executor_.plan().gradient_region_offset) / 2
                     : static_cast<unsigned char*>(executor_.arena_data()) + bucket.offset;
    communicator_.all_reduce(data, data, count, wire_dtype_, ReduceOp::kAvg, comm_stream_);
    finished_[e]->record(comm_stream_);
  }
}

std::vector<double> GradientReducer::wait_and_time(const std::string& what) {
  communicator_.wait(comm_stream_, what);
  // A replayed step's all-reduces run inside the graph launched on the compute stream, not on comm_stream_:
  // wait there too, with the same timeout, so that a peer that is gone still ends the job.
  communicator_.wait(executor_.compute_stream(), what);
  std::vector<double> ms;
  for (size_t b = 0; b < finished_.size(); ++b) {
    finished_[b]->synchronize();
    ms.push_back(finished_[b]->milliseconds_since(*started_[b]));
  }
  return ms;
}

GradientReducer::Timeline GradientReducer::timeline() const {
  // The last event of the step is on the compute stream (after the update), not on the communication stream
  // that wait_and_time waited for: over NVLink the last all-reduce can end while the update still runs.
  step_done_->synchronize();
  Timeline t;
  t.step_start_ms = step_start_->milliseconds_since(*phase_start_);
  t.forward_done_ms = forward_done_->milliseconds_since(*step_start_);
  t.nodes_done_ms = nodes_done_->milliseconds_since(*step_start_);
  t.step_done_ms = step_done_->milliseconds_since(*step_start_);
  for (size_t b = 0; b < ready_.size(); ++b) {
    t.ready_ms.push_back(ready_[b]->milliseconds_since(*step_start_));
    t.start_ms.push_back(started_[b]->milliseconds_since(*step_start_));
    t.end_ms.push_back(finished_[b]->milliseconds_since(*step_start_));
  }
  return t;
}

double GradientReducer::span_ms() const {
  return buckets_.empty() ? 0.0 : finished_.back()->milliseconds_since(*started_.front());
}

}  // namespace sb
