// The gradient all-reduce of data parallelism (ARCHITECTURE.md step 7): the plan's buckets (contiguous
// ranges of the flat gradient region, in the order the backward pass finishes them) are averaged across
// ranks on a communication stream of their own. With overlap, a bucket is issued right after the node that
// writes its last gradient: an event on the compute stream orders it, so the all-reduce runs while the
// backward pass goes on; without, every bucket is issued after the last node. Either way the optimizer,
// enqueued next on the compute stream, waits for the last all-reduce through another event. With a bf16
// wire type each bucket is rounded into a bf16 buffer, averaged there and widened back. A step of S sub-steps
// (graph.h, SubStep) reduces its buckets S times, once per sub-step's training pass: every (sub-step, bucket)
// pair has its own events, so a step's timeline and bucket durations hold S · buckets reductions.
#pragma once

#include <memory>
#include <vector>

#include "scalebench/allocation_budget.h"
#include "scalebench/communicator.h"
#include "scalebench/device.h"
#include "scalebench/executor.h"
#include "scalebench/planner.h"

namespace sb {

class GradientReducer {
 public:
  // `high_priority`: the communication stream from Device::create_high_priority_stream. `buckets`: the plan's
  // (nullptr), or others cut from the same gradient layout (cut_gradient_buckets: --bucket-mb auto's choice).
  GradientReducer(Device& device, Communicator& communicator, Executor& executor, DType wire_dtype, bool overlap,
                  bool high_priority = false, const std::vector<GradientBucket>* buckets = nullptr);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Runs the training pass of sub-step `sub_step` (every node from the graph's training_begin(); all of them
  // without sub-steps) with the buckets' all-reduces interleaved; returns once all is enqueued. Sub-step 0 marks
  // the step's start.
  void run_nodes_and_reduce(size_t sub_step = 0);
  // Then the optimizer on the compute stream, after the all-reduces. With overlap, and where the executor can
  // update in ranges (no clipping, no loss scaling), each bucket's parameters are updated as soon as its own
  // all-reduce is done, so the last buckets' all-reduces (the embedding gradient is written last) run beside
  // the other parameters' updates instead of before all of them.
  void update(const OptimizerSettings& settings, int64_t step, size_t sub_step = 0);
  // The buckets' all-reduces back to back on the communication stream, with no compute (the comm phase), once
  // per sub-step: what a step reduces.
  void reduce_alone();
  // Waits (with the communicator's timeout) for the communication stream, then returns each reduction's
  // duration in the last step, in issue order (sub-step by sub-step).
  std::vector<double> wait_and_time(const std::string& what);
  // From the first bucket's start to the last one's end in the last step (after wait_and_time).
  double span_ms() const;

  // Where the last step's time went, from its first node's start (after wait_and_time): when the last
  // sub-step's forward pass and last node finished, and per reduction (sub-step by sub-step) when it was ready
  // (its last gradient written), when its all-reduce started (later when the communication stream was still
  // busy) and when it ended.
  struct Timeline {
    double step_start_ms = 0;  // the step's first node, from begin_phase()
    double forward_done_ms = 0, nodes_done_ms = 0, step_done_ms = 0;  // from the step's first node
    std::vector<double> ready_ms, start_ms, end_ms;
  };
  Timeline timeline() const;
  // Marks the origin of the phase's timeline on the compute stream (the steps' step_start_ms count from it).
  void begin_phase();

  // Reductions per step: the plan's buckets once per sub-step (the buckets themselves without sub-steps).
  size_t bucket_count() const { return buckets_.size() * sub_steps_; }
  uint64_t wire_bytes(size_t reduction) const;  // bytes on the wire: halved for bf16

 private:
  void issue(size_t bucket, size_t event);
  void all_reduce(size_t bucket);

  Device& device_;
  Communicator& communicator_;
  Executor& executor_;
  DType wire_dtype_;
  bool overlap_;
  size_t sub_steps_ = 1;
  StreamHandle comm_stream_ = nullptr;
  std::vector<GradientBucket> buckets_;  // by ready node, the order every rank issues them in
  AllocationCharge wire_charge_;         // the allocation budget's count of wire_buffer_
  void* wire_buffer_ = nullptr;          // bf16 copy of the gradient region (bf16 wire only)
  std::vector<std::unique_ptr<DeviceEvent>> ready_, started_, finished_;  // by sub-step · buckets + bucket
  std::unique_ptr<DeviceEvent> all_done_, phase_start_, step_start_, forward_done_, nodes_done_, step_done_;
};

}  // namespace sb
