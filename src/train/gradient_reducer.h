// The gradient all-reduce of data parallelism (ARCHITECTURE.md step 7): the plan's buckets (contiguous
// ranges of the flat gradient region, in the order the backward pass finishes them) are averaged across
// ranks on a communication stream of their own. With overlap, a bucket is issued right after the node that
// writes its last gradient: an event on the compute stream orders it, so the all-reduce runs while the
// backward pass goes on; without, every bucket is issued after the last node. Either way the optimizer,
// enqueued next on the compute stream, waits for the last all-reduce through another event. With a bf16
// wire type each bucket is rounded into a bf16 buffer, averaged there and widened back. A step of S sub-steps
// (graph.h, SubStep) reduces its buckets S times, once per sub-step's training pass: every (sub-step, bucket)
// pair has its own events, so a step's timeline and bucket durations hold S · buckets reductions.
//
// A tied embedding table's gradient (src/core/ops/embedding_rows.h) is reduced in two halves where
// rows_apart_refusal (include/scalebench/embedding_grad.h) allows it at these ranks, with `embedding_grad` and
// overlap, and the graph split the table (the replica splits it on the same rule for the job's ranks): its dense
// part as ordinary buckets, ready as soon as the output
// projection wrote it; the lookups' rows as two more reductions per table: the ranks' row flags (max, int32,
// issued after the mark node, waited for by the compact node) and the packed rows (averaged, issued after the
// gather node, waited for by the scatter node), the first min(vocab, ranks x ids) rows only. Those two count as
// reductions of their own in every per-reduction list (durations, timeline, wire bytes). Off, or without
// overlap, the whole gradient is one set of buckets ready after its last node, as before.
//
// `during_backward` (--overlap-ctas, src/train/overlap_communicator.h): a second communicator over the same ranks
// for the reductions issued while nodes remain to run; the rest, and every reduction without overlap, go through
// `communicator`. Both are ordered by the one communication stream, so every rank issues the same sequence.
//
// `registration` (--grad-registration): before the first step, the buffers the buckets' all-reduces read and write
// are registered with each communicator (Communicator::register_range): on an fp32 wire the gradient region
// (from the 4 KiB boundary at or before it: a symmetric window starts on one; the arena must then come from the
// communicator's allocate_buffer, ReplicaOptions::arena_memory), on a bf16 wire the wire buffers. The same bytes at
// the same offset on every rank, as NCCL asks. The rows' flags and an fp32 wire's packed rows lie elsewhere in the
// arena and stay unregistered.
//
// `strategy` zero1 (--strategy, include/scalebench/strategy.h): the gradients are reduced as above, but this rank's
// optimizer updates, and keeps state for, only its shard of the parameters (parameter_shard: the replica's plan
// must be made with PlanOptions::parameter_shards = ranks); after the update the shards are all-gathered in place
// on the communication stream, and the compute stream waits for that before the step ends. With overlap and
// per-bucket updates, each bucket's part inside the shard is updated as soon as its all-reduce is done.
//
// `strategy` zero2: the shards follow the buckets (the plan made with PlanOptions::shard_by_bucket for the ranks, on
// one rank too):
// each bucket is reduce-scattered in place instead of all-reduced, so only this rank's chunk of it is reduced; the
// optimizer updates that chunk (per bucket, as soon as the bucket's reduce-scatter is done, where it can update in
// ranges) and the bucket's chunks are all-gathered in place right after, on the communication stream, while the
// compute stream updates the next bucket. Clipping and the loss scale's overflow test sum the chunks' squares over
// the ranks (one fp64 all-reduce on the communication stream, Executor::NormAcrossRanks). A tied table's rows are
// all-reduced as under ddp and added to the whole table gradient, whose own chunk is then right. Where the plan keeps
// the gradients in blocks (MemoryPlan::gradients_in_blocks) each bucket is reduce-scattered out of its block into the
// rank's place in the executor's gradient shard instead, and before the node after a block's release the compute
// stream waits for its reduce-scatter; no rows are reduced apart (the block is gone before they could be added).
//
// `strategy` zero3: as zero2 (buckets reduce-scattered, each rank updating its chunks), but no gather follows the
// update: the other ranks' chunks are stale until each bucket (a unit) is all-gathered again before the first node
// that needs it (in place, or with parameter blocks out of the ranks' parameter shards into the unit's forward or
// backward block) (src/core/unit_gathers.h): before the sub-step's parts that read it, before its first
// reader in the forward pass, and again before the backward pass first touches it. Each gather is issued on the
// communication stream when the compute stream reaches the previous gather's node (one unit ahead, as FSDP's
// prefetch), and the compute stream waits for it at its own node. With the parameters held whole,
// gather_whole_parameters() makes them current everywhere for whatever reads them after a phase; with parameter
// blocks whoever reads the weights gathers the shards (read_parameters with the group).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "scalebench/allocation_budget.h"
#include "scalebench/communicator.h"
#include "scalebench/device.h"
#include "scalebench/executor.h"
#include "scalebench/planner.h"
#include "scalebench/result.h"
#include "scalebench/strategy.h"
#include "src/core/ops/embedding_rows.h"
#include "src/core/unit_gathers.h"

namespace sb {

// The arena a replica must have for `registration` over `communicator` (ReplicaOptions::arena_memory): the
// communicator's allocate_buffer (ncclMemAlloc: cuMem memory NCCL can map into its peers) where something is to be
// registered on the nccl backend, else empty (cudaMalloc). `communicator` outlives the replicas built with it.
ArenaMemory registrable_arena(Communicator& communicator, Device& device, BufferRegistration registration);

class GradientReducer;
// The trainer's reducer for `options` (wire type, overlap, stream priority, --embedding-grad, --grad-registration,
// --strategy) over `executor`'s replica; `buckets` and `during_backward` as the constructor's.
std::unique_ptr<GradientReducer> make_gradient_reducer(const TrainOptions& options, Device& device,
                                                       Communicator& communicator, Executor& executor,
                                                       const std::vector<GradientBucket>* buckets,
                                                       Communicator* during_backward);

class GradientReducer {
 public:
  // `high_priority`: the communication stream from Device::create_high_priority_stream. `buckets`: the plan's
  // (nullptr), or others cut from the same gradient layout (cut_gradient_buckets: --bucket-mb auto's choice).
  GradientReducer(Device& device, Communicator& communicator, Executor& executor, DType wire_dtype, bool overlap,
                  bool high_priority = false, const std::vector<GradientBucket>* buckets = nullptr,
                  EmbeddingGradMode embedding_grad = EmbeddingGradMode::kAuto,
                  Communicator* during_backward = nullptr,
                  BufferRegistration registration = BufferRegistration::kNone,
                  DataParallelStrategy strategy = DataParallelStrategy::kDdp);
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
  // zero3: before sub-step `sub_step`'s parts run, gathers the buckets they read and makes the compute stream wait
  // for them (nothing under the other strategies).
  void gather_for_parts(size_t sub_step);
  // zero3 with the parameters held whole: every bucket gathered, and waited for, so that every rank holds the current
  // parameters whole (after a phase, before anything reads the weights); nothing under the other strategies, whose
  // steps end whole, nor with parameter blocks (no region to make whole).
  void gather_whole_parameters(const std::string& what);
  // The buckets' all-reduces back to back on the communication stream, with no compute (the comm phase), once
  // per sub-step: what a step reduces; sharded, each sub-step's all-gathers after them (zero3: those it gathers
  // before use).
  void reduce_alone();
  // Waits (with the communicator's timeout) for the communication stream, then returns each reduction's
  // duration in the last step, in issue order (sub-step by sub-step).
  std::vector<double> wait_and_time(const std::string& what);
  // From the first bucket's start to the last reduction's (or, sharded, gather's) end in the last step (after
  // wait_and_time).
  double span_ms() const;

  // Where the last step's time went, from its first node's start (after wait_and_time): when the last
  // sub-step's forward pass and last node finished, and per reduction (sub-step by sub-step) when it was ready
  // (its last gradient written), when its all-reduce started (later when the communication stream was still
  // busy) and when it ended.
  struct Timeline {
    double step_start_ms = 0;  // the step's first node, from begin_phase()
    double forward_done_ms = 0, nodes_done_ms = 0, step_done_ms = 0;  // from the step's first node
    double update_done_ms = 0;  // sharded: the compute stream's last update, before it waits for the gathers
    std::vector<double> ready_ms, start_ms, end_ms;
    std::vector<double> gather_start_ms, gather_end_ms;  // sharded, per (sub-step, gather)
    std::vector<double> gather_needed_ms;  // zero3, per (sub-step, gather): the compute stream reached its node
  };
  Timeline timeline() const;
  // Marks the origin of the phase's timeline on the compute stream (the steps' step_start_ms count from it), and
  // takes the executor back (take_the_executor).
  void begin_phase();

  // Reductions per step: the plan's buckets (and the tables' flags and rows) once per sub-step.
  size_t bucket_count() const { return reductions_.size() * sub_steps_; }
  uint64_t wire_bytes(size_t reduction) const;  // bytes on the wire: halved for bf16
  // The tied tables whose lookups' rows are reduced apart (0 when dense or when sparse does not apply), and
  // why it does not apply when asked for (empty otherwise).
  // "bucket", "row flags" or "rows" (TrainingReport::reduction_kinds), for reduction < bucket_count().
  const char* reduction_kind(size_t reduction) const;
  // How the tied tables' gradients are reduced (TrainingReport::EmbeddingGrad; tables 0 without any).
  TrainingReport::EmbeddingGrad embedding_grad() const;
  // What the library granted for the buffers above (the weakest over the communicators), and why it is less than
  // asked for.
  TrainingReport::GradRegistration registration() const;
  // Sharded: this rank's shard of the parameters (every parameter under ddp).
  const ParameterShard& shard() const { return shard_; }
  bool sharded() const { return sharded_; }
  // zero2/zero3: the buckets are reduce-scattered.
  bool reduce_scatters() const { return by_bucket_; }
  // zero3: the parameters are gathered before use, not after the update.
  bool gathers_before_use() const { return before_use_; }
  // Sharded: the all-gathers of the parameters a step runs (zero1: one per sub-step; zero2: one per bucket and
  // sub-step; zero3: one per unit and use) and the bytes they deliver to each rank together (every shard, padding
  // included); 0 under ddp.
  int all_gathers_per_step() const { return static_cast<int>(gathered_.size()); }
  uint64_t all_gather_bytes_per_step() const;
  // After wait_and_time: the last step's all-gathers, each from its start on the communication stream, summed.
  double all_gather_ms() const;

 private:
  // Gives the executor this reducer's shard again and tells it who collects the gradients and gathers the parameters
  // (a --gpus-sweep point's reducer of the same replica may have set another shard).
  void take_the_executor();
  // What the communication stream reduces, in issue order within a sub-step.
  struct Reduction {
    enum class Kind { kBucket, kRowFlags, kRows } kind = Kind::kBucket;
    size_t index = 0;     // into buckets_ (kBucket) or exchanges_
    int after_node = -1;  // issued once this node has run
    bool during_backward = false;  // nodes remain to run after it (with overlap): the during_backward communicator
  };
  Communicator& communicator_for(const Reduction& reduction);
  void issue(size_t reduction, size_t event);
  void all_reduce(const Reduction& reduction, bool alone);
  void all_reduce_floats(Communicator& communicator, void* data, size_t count, void* wire, bool alone);
  void run_training_nodes(size_t from, size_t to, size_t sub_step);
  // The most rows of a table's packed exchange one step reduces: min(vocab, ranks x ids).
  int64_t exchanged_rows(size_t table) const;
  void register_buffers(BufferRegistration wanted);
  void reduce_scatter_floats(Communicator& communicator, void* data, size_t count, float* chunk_out, void* wire,
                             bool alone);
  // Issues sub-step `sub_step`'s gather `index` (gathers_): zero1 the whole region, zero2/zero3 a bucket's chunks, to
  // every rank, timed, once the compute stream got where it is now (the update it gathers, or zero3's previous unit).
  void gather_parameters(size_t sub_step, size_t index = 0);
  void wait_for_gather(size_t sub_step, size_t index);  // zero3: the compute stream waits for it, marking when
  // The collective alone on the communication stream: in place, or with parameter blocks out of the rank's parameter
  // shard into the unit's forward block (or, `when` before the backward pass, its backward block).
  void all_gather(size_t bucket, ParameterGather::When when);
  void reduce_norm_across_ranks(double* squared_norm, StreamHandle stream);  // zero2's NormAcrossRanks

  Device& device_;
  Communicator& communicator_;
  Communicator* during_backward_ = nullptr;
  Executor& executor_;
  DType wire_dtype_;
  bool overlap_;
  size_t sub_steps_ = 1;
  StreamHandle comm_stream_ = nullptr;
  std::vector<GradientBucket> buckets_;  // by ready node, the order every rank issues them in
  std::vector<EmbeddingRowsExchange> exchanges_;  // the tied tables reduced as rows
  std::vector<Reduction> reductions_;    // buckets and the exchanges' two reductions, by the node they follow
  // (node, reduction), in node order: before that node runs, the compute stream waits for that reduction.
  std::vector<std::pair<size_t, size_t>> waits_;
  // Sharded, per sub-step: its all-gathers in issue order, and the event index of its first.
  std::vector<std::vector<ParameterGather>> gathers_;
  std::vector<size_t> first_gather_;
  size_t parts_gathers(size_t sub_step) const;  // zero3: the first gathers of the sub-step, for its parts
  // Per sub-step, in node order: before `node` runs, the compute stream waits for reduction `index` (a tied table's
  // flags or rows, waits_) or, zero3, for its gather `index` (the next one issued then).
  struct Stop {
    size_t node = 0;
    bool gather = false;
    size_t index = 0;
  };
  std::vector<std::vector<Stop>> stops_;
  std::string sparse_rows_off_because_;
  int tied_tables_ = 0;
  int64_t tied_table_rows_ = 0;
  void* rows_wire_buffer_ = nullptr;     // bf16 copy of the largest packed exchange (bf16 wire only)
  AllocationCharge rows_wire_charge_;
  AllocationCharge wire_charge_;         // the allocation budget's count of wire_buffer_
  void* wire_buffer_ = nullptr;          // bf16 copy of the gradient region (bf16 wire only)
  uint64_t wire_buffer_bytes_ = 0, rows_wire_buffer_bytes_ = 0;
  RangeRegistrations registrations_;  // released before the buffers they cover
  ParameterShard shard_;  // every parameter under ddp
  bool sharded_ = false;  // zero1/zero2
  bool by_bucket_ = false;  // zero2/zero3: shards by bucket, buckets reduce-scattered
  bool before_use_ = false;  // zero3: units gathered before use
  std::vector<std::unique_ptr<DeviceEvent>> ready_, started_, finished_;  // by sub-step · buckets + bucket
  std::unique_ptr<DeviceEvent> all_done_, phase_start_, step_start_, forward_done_, nodes_done_, step_done_;
  std::unique_ptr<DeviceEvent> update_done_;  // zero1/zero2
  // Sharded, by first_gather_[sub-step] + gather: when it may start (compute stream: the update it gathers done, or
  // zero3's previous unit reached), its start and end on the communication stream, and (zero3) when the compute
  // stream reached the node that waits for it.
  std::vector<std::unique_ptr<DeviceEvent>> may_gather_, gather_started_, gathered_, gather_needed_;
  size_t last_gather_ = 0;  // the last one issued
  std::unique_ptr<DeviceEvent> norm_ready_, norm_reduced_;  // zero2: the shard's squares, summed over the ranks
  std::unique_ptr<DeviceEvent> whole_requested_;  // zero3: gather_whole_parameters after the compute stream's work
};

}  // namespace sb
