// Running a planned graph. An executor owns one arena of the plan's size on its device and runs the nodes
// in order, each dispatched by op name to the kernel of the same name on that device: sb::cpu (the
// numerical reference) or sb::cuda. Tensors are moved in and out with host copies; the CPU executor also
// exposes its memory directly for tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scalebench/allocation_budget.h"
#include "scalebench/device.h"
#include "scalebench/graph.h"
#include "scalebench/loss_scale.h"
#include "scalebench/planner.h"
#include "scalebench/optimizer.h"

namespace sb {

class Executor {
 public:
  virtual ~Executor() = default;

  virtual void write_tensor(TensorId id, const void* host, size_t bytes) = 0;
  virtual void read_tensor(TensorId id, void* host, size_t bytes) = 0;

  virtual void run_nodes(size_t begin, size_t end) = 0;  // enqueued; read_tensor waits for them
  // One optimizer step over the flat parameter and gradient regions of the plan, clipped by the global gradient
  // norm when settings.max_grad_norm > 0. Its state lives beside the arena (optimizer_state_buffers(kind) x
  // parameter bytes, allocated and zeroed on first use or when the kind changes). `step` counts from 1.
  // Under dynamic loss scaling (fp16 graphs on CUDA, loss_scale.h) the step also unscales the gradients, skips
  // itself when one is inf or NaN and updates the scale, all on the device; the gradients it reads must be final
  // (all-reduced), since the finite check and the scale must agree on every rank.
  virtual void optimizer_step(const OptimizerSettings& settings, int64_t step) = 0;
  // The same update over parameters [first, first + count) of the flat parameter region (elements; a gradient
  // bucket's range), so that buckets already all-reduced are updated while later ones are in flight. Only
  // where steps_in_ranges(settings): clipping and loss scaling need every gradient before any update.
  virtual void optimizer_step_range(const OptimizerSettings& settings, int64_t step, int64_t first,
                                    int64_t count) = 0;
  virtual bool steps_in_ranges(const OptimizerSettings& settings) const { return settings.max_grad_norm == 0; }
  // ZeRO (--strategy zero1/zero2, src/train/gradient_reducer.h): from here on this executor's optimizer updates, and
  // keeps state for, only the parameters of `ranges` (a parameter_shard: sorted, apart, inside the gradient region,
  // whose by-bucket padding they may include), its state packed range after range. optimizer_step_range then
  // takes ranges inside one of them. The default is every parameter. The state is zeroed when the shard changes.
  // Without `norm_across_ranks` (zero1) every gradient is reduced, and the norm for clipping and the loss scale's
  // overflow test cover every gradient. With it (zero2: only the shard's gradients are reduced) they sum the
  // shard's squares, then call it with the squared-norm scratch (device memory; [0] holds this rank's sum) and
  // the compute stream: it must leave the sum over the ranks in [0], ordered on that stream.
  // Throws UsageError for ranges out of order or outside the region.
  using NormAcrossRanks = std::function<void(double* squared_norm, StreamHandle stream)>;
  void set_optimizer_shard(std::vector<ShardRange> ranges, NormAcrossRanks norm_across_ranks = nullptr);
  void set_optimizer_shard(int64_t first, int64_t count) { set_optimizer_shard({ShardRange{first, count}}); }
  // Every parameter unless set_optimizer_shard. Held, not rebuilt: the optimizer reads it every step.
  const std::vector<ShardRange>& optimizer_shard() const { return shard_; }
  int64_t optimizer_shard_first() const { return shard_.front().first; }
  int64_t optimizer_shard_count() const { return shard_count_; }
  // The offset in the shard's state of parameters [first, first + count), which must lie in one of its ranges
  // (UsageError otherwise).
  int64_t optimizer_state_offset(int64_t first, int64_t count) const;
  // Gradient blocks (MemoryPlan::gradients_in_blocks, --strategy zero2/zero3): a step's gradients live in the shared
  // region only until their block is released; the optimizer reads the gradient shard beside the arena instead, the
  // gradients of its shard packed range after range as its state is (zeroed when the shard changes). Whoever fills it
  // must be done reading a block before the node after its release: the reducer reduce-scatters each bucket into it
  // and waits so (set_gradients_collected_by_caller(true)); otherwise the executor itself copies each bucket's part
  // inside the shard there right after the bucket's last writer. Either way, run_nodes zeroes each block's gaps (the
  // alignment and padding no gradient covers, GradientBlock::gaps) just before its first writer, so that they add
  // nothing to a reduction or a norm.
  // gradients_of: where the gradients of parameters [first, first + count) are (a range inside one of the shard's;
  // UsageError otherwise): in the gradient shard, or, without blocks, in the arena's gradient region.
  float* gradients_of(int64_t first, int64_t count);
  void set_gradients_collected_by_caller(bool by_caller) { gradients_collected_by_caller_ = by_caller; }
  // The gradient shard's bytes (0 without blocks).
  uint64_t gradient_shard_bytes() const;
  // Parameter blocks (MemoryPlan::parameters_in_blocks, --strategy zero3): the arena holds a unit's parameters only
  // while they are gathered (ParameterBlock); between uses the weights are the parameter shard beside the arena, the
  // optimizer shard's parameters packed range after range as its state is. The optimizer updates it; write_tensor of
  // a parameter writes the elements the shard holds, and read_tensor reads them (UsageError where the shard does not
  // hold the whole parameter: the weights are then gathered across the ranks). What write_tensor wrote is kept on the
  // host too: a shard set later (set_optimizer_shard) starts from it, so the trainer writes the initial weights
  // again whenever it restarts. Unless the caller gathers (set_parameters_gathered_by_caller(true): the reducer's
  // all-gathers), run_nodes copies each unit's parameters from the shard into its block before the node that needs
  // them (unit_gathers), which needs a shard holding every parameter of the unit (one rank).
  // parameters_of: where parameters [first, first + count) are (a range inside one of the shard's; UsageError
  // otherwise): in the parameter shard, or, without parameter blocks, in the arena's parameter region.
  float* parameters_of(int64_t first, int64_t count);
  void set_parameters_gathered_by_caller(bool by_caller) { parameters_gathered_by_caller_ = by_caller; }
  uint64_t parameter_shard_bytes() const;  // 0 without parameter blocks
  // The parameter shard's values, packed (from the weights written while it is not allocated yet): what every rank
  // contributes when the weights are gathered whole on the host (read_parameters with a group).
  std::vector<float> read_parameter_shard();
  // Zeroes the optimizer's state (moments, momentum), as a freshly built optimizer has it, and restarts the
  // loss scale where there is one: the trainer restarts from the initial weights between its phases.
  virtual void reset_optimizer_state() = 0;
  // The stream the nodes and the optimizer are enqueued on (nullptr on the CPU, where everything is done
  // when the call returns): the data-parallel trainer orders its gradient all-reduces after events on it.
  virtual StreamHandle compute_stream() const = 0;
  // The arena's first byte in the executor's device memory: plan offsets added to it address the flat
  // gradient region, which the trainer all-reduces bucket by bucket.
  virtual void* arena_data() = 0;

  // The backward pass of the cross-entropy reading `targets` scales its gradient by weight / counted rows
  // instead of 1 / counted rows (default weight 1). Data parallelism sets weight = N · local rows / global
  // rows, so that the average of the ranks' gradients is the gradient of the mean over the global batch
  // (fairseq's normalisation by the global token count) whatever each rank's share of padding.
  void set_loss_weight(TensorId targets, float weight) { loss_weights_[targets] = weight; }
  float loss_weight(TensorId targets) const;
  // The rows that count in the cross-entropy reading `targets`, where a device would otherwise read them back once
  // and keep them (CUDA): targets switched on the device between sub-steps count differently, and the trainer
  // knows each sub-step's count. The CPU counts at every step and ignores it.
  virtual void set_counted_rows(TensorId targets, int64_t rows) { (void)targets, (void)rows; }
  // The loss scale's state read back from the device (waits for the queued work: call outside timed regions);
  // nullopt when the executor does not scale the loss.
  virtual std::optional<LossScaleState> loss_scale_state() { return std::nullopt; }
  void run();                                             // every node, in order
  size_t forward_node_count() const;                      // nodes before the first backward node

  // A training step captured into a device graph and replayed (issue 25, src/train/step_graph.h). Between
  // begin_step_capture() and end_step_capture() the calls that enqueue a step record it instead of running it:
  // kernels read what changes per step from a replay counter on the device (src/cuda/step_value.h) and marks
  // become nodes of the graph. replay_step() runs the captured step (its first replay is the captured step
  // itself) and advances the counter, so replay k computes what eager step (captured + k) would.
  // why_no_step_graph(): why this executor cannot capture, or nullopt.
  virtual std::optional<std::string> why_no_step_graph() const {
    return std::string("the cpu device runs each node when it is called");
  }
  virtual void begin_step_capture();  // UsageError where why_no_step_graph()
  // nullopt when the graph is ready to replay; else why the capture failed (nothing of the step ran: enqueue
  // it again without capture).
  virtual std::optional<std::string> end_step_capture();
  // After an exception while capturing: ends the capture and keeps nothing of it.
  virtual void abort_step_capture() {}
  virtual void replay_step();

  // Marks on the executor's own timeline (CUDA events on its stream; the host clock on the CPU), so steps
  // and the nodes inside one are timed where they run, without synchronising in between.
  virtual void mark(size_t index) = 0;                    // after the work queued so far
  virtual double elapsed_ms(size_t from, size_t to) = 0;  // waits for mark `to`

  // One whole training step (every node, then the optimizer) with a mark between nodes: the time of each node and
  // of the optimizer. Marks cost a few microseconds of host time each, not device time.
  struct StepProfile {
    std::vector<double> node_ms;  // by node index
    // Wall-clock time the calling thread spent enqueueing each node, by node index: where it exceeds the
    // device time, the GPU waits for the host (library calls with a high CPU cost per launch). A host far
    // ahead of the GPU blocks on CUDA's full launch queue, and that wait lands on whichever node hit it.
    std::vector<double> node_host_ms;
    double optimizer_ms = 0;
  };
  StepProfile profile_step(const OptimizerSettings& settings, int64_t step);
  // What this executor chose to run a node with, for the profile's slowest nodes (a convolution's cuDNN engine
  // or algorithm); empty where there is no choice to report.
  virtual std::string node_detail(size_t /*index*/) const { return {}; }

  // Dropout masks depend on (seed, step): the same step replays the same masks (finite differences), the
  // next step draws fresh ones. Data-parallel ranks use seed = base seed + rank.
  void set_random_stream(uint64_t seed, uint64_t step);
  uint64_t seed() const { return seed_; }
  uint64_t step() const { return step_; }
  // First Philox block this step of a node that draws random numbers (dropout, san_turn_mask).
  uint64_t dropout_offset(const Node& node) const;
  // How much step() grows from one training step to the next: the graph's sub-step count (each sub-step draws a
  // stream of its own, sub_steps.h); the optimizer's step count grows as much. dropout_offset grows by this
  // times the Philox blocks of a step (dropout_offset_per_step). A CUDA graph replays a step with them.
  int64_t steps_per_training_step() const { return static_cast<int64_t>(graph_.sub_step_count()); }
  uint64_t dropout_offset_per_step() const {
    return static_cast<uint64_t>(steps_per_training_step()) * blocks_per_step_;
  }

  const Graph& graph() const { return graph_; }
  const MemoryPlan& plan() const { return plan_; }

 protected:
  Executor(const Graph& graph, const MemoryPlan& plan);
  // Sets every kState tensor (BatchNorm running statistics) to its initial value; the derived constructors
  // call it once their memory exists.
  void initialize_state();

  // Gradient blocks, the device's part: the gradient shard (optimizer_shard_count() floats, zeroed;
  // ensure_gradient_shard allocates it when the shard is set, else before the first nodes run, never while a step is
  // being captured), a byte copy, and the zeroing of block `block`'s gaps, on the compute stream.
  virtual void allocate_gradient_shard(int64_t floats) = 0;
  virtual float* gradient_shard_data() = 0;
  virtual void copy_device_bytes(void* to, const void* from, uint64_t bytes) = 0;
  virtual void zero_block_gaps(size_t block) = 0;
  // Parameter blocks, the device's part: the parameter shard (optimizer_shard_count() floats; ensure_parameter_shard
  // allocates it and fills it from the weights written, outside a capture), and copies between host and device
  // memory that are done when they return.
  virtual void allocate_parameter_shard(int64_t floats) = 0;
  virtual float* parameter_shard_data() = 0;
  virtual void copy_from_host(void* to, const void* host, uint64_t bytes) = 0;
  virtual void copy_to_host(void* host, const void* from, uint64_t bytes) = 0;
  void ensure_parameter_shard();
  // parameters_of for a parameter whose offset in the shard's packing the caller already has (the optimizer's loops).
  float* parameters_at(int64_t first, int64_t packed);
  // write_tensor and read_tensor of a parameter with parameter blocks (false: not one, the caller goes on).
  bool write_parameter(TensorId id, const void* host, size_t bytes);
  bool read_parameter(TensorId id, void* host, size_t bytes);
  // What run_nodes does around node `node` with gradient blocks: zeroes the gaps of the blocks it writes first, and
  // (unless the caller collects) copies the buckets it finishes into the gradient shard.
  void before_node(size_t node);
  void after_node(size_t node);
  // gradients_of for a parameter whose offset in the shard's packing (optimizer_state_offset) the caller already has:
  // the optimizer's loops walk the state and the gradient shard in step, without a search per range.
  float* gradients_at(int64_t first, int64_t packed);
  // Allocates the gradient shard for the current optimizer shard unless it is (gradient blocks only): lazily, so that
  // a replica whose reducer sets a shard right away never holds a gradient shard of every parameter.
  void ensure_gradient_shard();

  const Graph& graph_;
  const MemoryPlan& plan_;
  NormAcrossRanks norm_across_ranks_;  // set_optimizer_shard's: the shard's gradients alone are reduced

 private:
  uint64_t seed_ = 0, step_ = 0;
  uint64_t blocks_per_step_ = 0;  // Philox blocks all dropout nodes use in one step
  std::vector<ShardRange> shard_;  // set_optimizer_shard's ranges; from the constructor, every parameter
  int64_t shard_count_ = 0;        // their elements together
  std::map<TensorId, float> loss_weights_;
  bool gradients_collected_by_caller_ = false;
  int64_t gradient_shard_floats_ = -1;  // what the gradient shard was allocated for; -1: not yet
  std::vector<std::vector<size_t>> blocks_first_written_at_;  // by node: the gradient blocks it writes first
  std::vector<std::vector<size_t>> buckets_finished_at_;      // by node: the buckets whose last gradient it writes
  bool parameters_gathered_by_caller_ = false;
  int64_t parameter_shard_floats_ = -1;   // what the parameter shard was allocated and filled for; -1: not yet
  std::vector<float> written_parameters_;  // parameter blocks: the weights write_tensor wrote, in the flat layout
  std::vector<int64_t> parameter_flat_;    // by tensor id: a parameter's first element in the flat layout; -1 others
  // By node: the units (bucket, destination offset in the arena) to copy from the shard before it (one rank).
  std::vector<std::vector<std::pair<size_t, uint64_t>>> units_needed_at_;
  // Calls `visit(packed, from, to)` for the elements [from, to) of [first, first + count) the shard holds, with the
  // packed offset of `from`; returns how many it held.
  template <typename Visit>
  int64_t visit_shard(int64_t first, int64_t count, Visit visit) const;
  // The written weights of [first, first + count) that the shard holds, copied into the allocated parameter shard.
  void upload_written_parameters(int64_t first, int64_t count);
  void read_held_parameters(int64_t packed, int64_t from, int64_t to, float* out);
};

class CpuExecutor final : public Executor {
 public:
  // Allocates plan.total_bytes of host memory (RuntimeFailure if that fails); throws UsageError when the
  // graph holds an op the CPU has no kernel for, before anything runs.
  CpuExecutor(const Graph& graph, const MemoryPlan& plan);

  float* f32(TensorId id);
  int32_t* i32(TensorId id);
  uint8_t* u8(TensorId id);
  const float* f32(TensorId id) const;

  void write_tensor(TensorId id, const void* host, size_t bytes) override;
  void read_tensor(TensorId id, void* host, size_t bytes) override;
  void run_nodes(size_t begin, size_t end) override;
  void optimizer_step(const OptimizerSettings& settings, int64_t step) override;
  void optimizer_step_range(const OptimizerSettings& settings, int64_t step, int64_t first, int64_t count) override;
  void reset_optimizer_state() override { optimizer_state_.assign(optimizer_state_.size(), 0.0f); }
  StreamHandle compute_stream() const override { return nullptr; }
  void* arena_data() override { return arena_.data(); }
  void mark(size_t index) override;
  double elapsed_ms(size_t from, size_t to) override;

 private:
  void allocate_gradient_shard(int64_t floats) override;
  float* gradient_shard_data() override { return gradient_shard_.data(); }
  void copy_device_bytes(void* to, const void* from, uint64_t bytes) override;
  void zero_block_gaps(size_t block) override;
  void allocate_parameter_shard(int64_t floats) override;
  float* parameter_shard_data() override { return parameter_shard_.data(); }
  void copy_from_host(void* to, const void* host, uint64_t bytes) override;
  void copy_to_host(void* host, const void* from, uint64_t bytes) override;

  // The allocation budget's count of arena_, optimizer_state_, gradient_shard_ and parameter_shard_.
  AllocationCharge arena_charge_, state_charge_, gradient_shard_charge_, parameter_shard_charge_;
  std::vector<unsigned char> arena_;
  std::vector<float> gradient_shard_;   // gradient blocks: the optimizer's shard's gradients
  std::vector<float> parameter_shard_;  // parameter blocks: its parameters
  std::vector<std::chrono::steady_clock::time_point> marks_;
  void ensure_optimizer_state(const OptimizerSettings& settings);
  std::vector<float> optimizer_state_;  // (buffers, parameters)
  OptimizerKind state_kind_ = OptimizerKind::kAdamW;
  std::vector<double> norm_scratch_;
};

// The CUDA executor on the current device: activations in the dtype the graph gives them (fp32, bf16 or fp16);
// fp32 GEMMs in exact fp32 or, with `tf32_gemms`, on TF32 tensor cores; bf16 and fp16 GEMMs on tensor cores with
// fp32 accumulation. Dynamic loss scaling follows `loss_scale.mode`: by default it is on exactly when the graph
// stores fp16 tensors, so `--precision fp16` needs nothing else; the config's factors and growth interval are
// GradScaler's unless a test shortens them. Throws UsageError when scalebench was built without CUDA or an op has
// no CUDA kernel, RuntimeFailure when the arena does not fit.
// What a CUDA executor of `graph` allocates beyond the plan and the optimizer's state: the GEMM workspace and
// the reserve for its kernels' scratch (0 when built without CUDA).
uint64_t cuda_outside_plan_bytes(const Graph& graph);

// Where a CUDA executor's arena comes from: cudaMalloc when empty; otherwise these, e.g. a communicator's
// allocate_buffer (ncclMemAlloc), so that the gradient region inside can be registered with NCCL
// (--grad-registration). allocate throws OutOfMemory when the memory is not there.
struct ArenaMemory {
  std::function<void*(uint64_t bytes)> allocate;
  std::function<void(void* pointer)> release;
};

std::unique_ptr<Executor> make_cuda_executor(const Graph& graph, const MemoryPlan& plan, bool tf32_gemms = false,
                                             const LossScaleConfig& loss_scale = {}, const ArenaMemory& arena = {});

}  // namespace sb
