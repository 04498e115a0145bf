// The result model of `scalebench run` (STYLE.md rule 13): what a finished (or failed) training job measured, with
// the options it ran with, and the derived numbers every printer shows. The trainer (training.h, src/train) fills
// a TrainingReport; the printers (report.h, src/report) and the suite read it, so neither needs the other.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scalebench/buffer_registration.h"
#include "scalebench/dtype.h"
#include "scalebench/embedding_grad.h"
#include "scalebench/optimizer.h"
#include "scalebench/precision.h"
#include "scalebench/strategy.h"
#include "scalebench/workload.h"

namespace sb {

// Whether a phase's steps replay one captured device graph (issue 25, src/train/step_graph.h): auto captures
// where it can and says why not elsewhere, on makes a phase that cannot an error (exit 3), off never captures.
enum class CudaGraphMode { kAuto, kOn, kOff };
const char* cuda_graph_mode_name(CudaGraphMode mode);

// --gpus-sweep (issue 29, include/scalebench/gpus_sweep.h): the ranks that train together at one size k, with
// their weakest link and devices ("host cuda:3").
struct SweepGroup {
  std::vector<int> ranks;  // world ranks in team order: a team's rank i is ranks[i]
  std::string link;        // "NV18", "PIX", "SYS", "host", "network", "same GPU"; "" for one rank
  std::vector<std::string> devices;
};


struct TrainOptions {
  std::string workload;
  int64_t batch = 0;  // per rank; 0: the workload's reference batch
  WorkloadScale scale = WorkloadScale::kFull;
  int warmup_steps = 3;
  int steps = 20;
  double min_time_seconds = 0;  // > 0: at least this long per phase (more steps, agreed across ranks)
  uint64_t seed = 1;            // data (sample r·b + i of one dataset), weights (same on every rank), dropout
  OptimizerSettings optimizer;
  Precision precision = Precision::kFp32;
  bool recompute = false;
  bool solo = true, comm = true, dp = true;  // phases; comm and dp need more than one rank
  uint64_t bucket_bytes = 25ull << 20;
  bool bucket_auto = false;  // --bucket-mb auto: chosen by measurement (bucket_auto.h); bucket_bytes the fallback
  bool overlap = true;                      // false: every bucket reduced after the backward pass
  DType grad_dtype = DType::kFloat32;       // kBFloat16: gradients rounded to bf16 for the all-reduce
  // --embedding-grad: how a tied embedding table's gradient is reduced (src/core/ops/embedding_rows.h).
  EmbeddingGradMode embedding_grad = EmbeddingGradMode::kAuto;
  bool comm_high_priority = false;          // the all-reduces' stream at CUDA's greatest priority
  // --overlap-ctas N (0: off): the all-reduces issued while the backward pass still runs go through a second NCCL
  // communicator limited to N thread blocks each (ncclConfig_t.maxCTAs), so that they take fewer SMs from the
  // backward kernels; those issued after its last node keep NCCL's choice. nccl backend only.
  int overlap_ctas = 0;
  // --grad-registration: the buffers the gradient all-reduces read and write (the gradient region, or the bf16
  // wire buffers) registered with NCCL before the first step (src/train/gradient_reducer.h). nccl backend only.
  BufferRegistration grad_registration = BufferRegistration::kNone;
  // --strategy (include/scalebench/strategy.h): ddp, zero1 (the optimizer's state and update sharded, the updated
  // parameters all-gathered) or zero2 (as zero1, the gradient buckets reduce-scattered).
  DataParallelStrategy strategy = DataParallelStrategy::kDdp;
  bool profile = true;                      // one extra solo step timed node by node on every rank
  bool check = false;                       // the data-parallel invariant (run_dp_check), after the phases
  int check_steps = 3;
  bool check_memory = true;  // false: no capacity check before allocating (suite's runs at a verified max batch)
  CudaGraphMode cuda_graph = CudaGraphMode::kAuto;
  // --gpus-sweep: the sizes of the curve (ascending, 1 to N; empty: no sweep) and, by size, the groups that train
  // at it (one, or N/k with --concurrent-groups). k = 1 is the solo phase and k = N the dp phase; the trainer
  // runs a comm and a dp phase (and --check) for each size between.
  std::vector<int> sweep_sizes;
  std::vector<std::vector<SweepGroup>> sweep_groups;  // by index into sweep_sizes
  bool sweep_concurrent = false;
};

// One rank's samples of one phase.
struct RankPhase {
  std::vector<double> step_ms;                 // timed steps
  std::vector<std::vector<double>> bucket_ms;  // comm and dp: [step][bucket] all-reduce durations
  // dp, from each step's first node: when the last node finished, and [step][bucket] when the bucket was
  // ready, when its all-reduce started and ended.
  std::vector<double> nodes_done_ms;
  std::vector<std::vector<double>> bucket_ready_ms, bucket_start_ms, bucket_end_ms;
  // dp, for the trace: each step's first node from the phase's start on this rank's device, and from the step's
  // first node the end of the forward pass and of the optimizer. forward_done_ms, nodes_done_ms and step_done_ms
  // also for solo (from the step's start): the decomposition of 1 − E compares the two phases' timelines.
  std::vector<double> step_start_ms, forward_done_ms, step_done_ms;
  float loss_first = 0, loss_last = 0;         // solo and dp
  // solo and dp, per timed step: the host's wall-clock time to issue the step (every node and the optimizer
  // enqueued, or one graph launch), beside the device's step_ms.
  std::vector<double> host_ms;
  // comm and dp under a sharded --strategy, per timed step: the all-gathers of the parameters, summed (each from its
  // start on the communication stream to its end). dp: from the step's first node, when the compute stream finished
  // its last update; zero1/zero2's gathers still running then are exposed until step_done_ms.
  std::vector<double> all_gather_ms, update_done_ms;
  // dp under a sharded strategy, [step][gather] (sub-step by sub-step), from the step's first node: each all-gather's
  // start and end on the communication stream (the trace draws them); zero3 also when the compute stream reached the
  // node that waits for it (exposed: the end after that).
  std::vector<std::vector<double>> gather_start_ms, gather_end_ms, gather_needed_ms;
};

struct PhaseRecord {
  bool ran = false;
  std::vector<RankPhase> ranks;  // by rank
  // solo and dp: "on" when the timed steps replayed a captured graph, else "off (why)"; the same on every rank.
  std::string cuda_graph;
};

struct CheckRecord {
  bool ran = false;
  bool passed = false;
  int steps = 0;
  double relative_error = 0;  // ||Δp(N ranks) - Δp(1 rank)|| / ||Δp(1 rank)||, Δp = p_k - p_0
  double max_abs_difference = 0;
  double tolerance = 0;
  bool ranks_identical = false;
  int linear_batchnorm_activations = 0;  // BatchNorm activations made the identity in the check's graphs
  // A step with a generation (unsupmt): the words the one-rank reference compared with the N ranks' (it follows
  // theirs, src/train/generation_replay.h), how many it would have picked differently, and the widest such
  // difference of logits relative to the row's largest |logit|, which must stay within `tolerance`.
  int64_t generated_words = 0, generation_flips = 0;
  double generation_worst_margin = 0;
};

// Everything a printer needs; filled as the phases finish, so what was measured survives a later failure.
// `--bucket-mb auto` (issue 26, src/train/bucket_choice.h): the sizes tried with their predicted tails, and the
// measured all-reduce costs the prediction used.
struct BucketAuto {
  uint64_t chosen_bytes = 0;
  std::string kept_default_because;  // non-empty: nothing was chosen (why), the default size ran
  struct Candidate {
    uint64_t bytes = 0;
    size_t buckets = 0;
    double predicted_tail_ms = 0;
  };
  std::vector<Candidate> candidates;
  std::vector<std::pair<uint64_t, double>> measured_ms;  // one all-reduce's device ms by message bytes
};

// One size k of a --gpus-sweep between 1 and N, as trained.
struct SweepPoint {
  int gpus = 0;
  std::vector<SweepGroup> groups;
  PhaseRecord comm, dp;  // by world rank; the ranks outside every group have no samples
  CheckRecord check;     // --check at this k: the worst of its groups
  bool weights_identical_after_dp = false;  // every group's ranks agree after its dp phase
  uint64_t weights_checksum_after_dp = 0;   // the first group's (rank 0's): a separate k-rank job's, bit for bit
};

struct TrainingReport {
  // Context.
  std::vector<std::string> argv;
  std::string started_at;
  int nranks = 1;
  std::string emulate = "none";  // --emulate: none, host, socket (the path forced on NCCL)
  std::string backend, communicator_version, transport, mpi_version, cuda_runtime_version, cuda_driver_version,
      cublas_version;
  std::vector<std::pair<std::string, std::string>> environment;
  struct Rank {
    std::string host, device_name, bus_id;
    int device_index = 0;
  };
  std::vector<Rank> devices;
  // Configuration.
  TrainOptions options;
  std::string unit, task, device_kind;
  int64_t batch = 0;  // per rank
  int64_t parameters = 0;
  double units_per_step = 0;        // per rank: the mean over ranks of what each rank's batch holds
  // Each rank's credited units (its batch holds other samples, so other lengths), in rank order; empty: every rank
  // holds units_per_step. Totals sum these; they are what the batches really held.
  std::vector<double> units_per_step_by_rank;
  double rank_units_per_step(size_t rank) const {
    return rank < units_per_step_by_rank.size() ? units_per_step_by_rank[rank] : units_per_step;
  }
  // A step made of sub-steps (unsupmt): their names, each with its own optimizer step and gradient reduction.
  std::vector<std::string> sub_steps;
  double train_flops_per_step = 0;  // per rank, matrix products forward and backward
  uint64_t plan_bytes = 0;
  // Memory per GPU in the dp phases (issue 31: per strategy), 0 / empty without one: planned, the memory plan and the
  // optimizer's state they hold (one shard's under a sharded strategy, where plan_bytes counts the solo phase's whole
  // state); measured, the device memory in use after the dp phase (total - free: the context, NCCL's buffers and the
  // libraries' included), the largest over the ranks; empty where the device cannot say (the CPU device).
  uint64_t dp_plan_bytes = 0;
  std::optional<uint64_t> dp_device_used_bytes;
  // Of dp_plan_bytes, zero2's and zero3's gradient shard where the gradients lived in blocks (GradientLayout); 0 where
  // the gradient region was held whole.
  uint64_t dp_gradient_shard_bytes = 0;
  // And zero3's parameter shard where the parameters lived in blocks too (each unit gathered into blocks around its
  // readers); 0 where the parameter region was held whole.
  uint64_t dp_parameter_shard_bytes = 0;
  // The solo phase trained a replica of its own with the gradient region whole, freed before the dp phases' replica
  // (which holds the gradients in blocks) was built: X(1) without the blocks' copies into the shard.
  bool solo_own_replica = false;
  // Nodes the dp phases' replica runs that the solo phase's does not: with zero3's parameters in blocks, the casts of
  // the backward pass's parameter copies (backward_parameter_copies.h). Their time is in the dp step's backward
  // pass, hence in the decomposition's dilation term; 0 where both phases trained one graph.
  int64_t dp_only_nodes = 0;
  std::vector<uint64_t> bucket_bytes;   // in all-reduce order, on the wire (halved for bf16)
  // What each entry of bucket_bytes (and of a rank's bucket_ms and timelines) reduces: "bucket" (gradients), or a
  // tied table's "row flags" (int32 max) and "rows" (its lookups' packed rows; --embedding-grad sparse).
  std::vector<std::string> reduction_kinds;
  // --embedding-grad: how the tied embedding tables' gradients crossed the wire in the dp phase.
  struct EmbeddingGrad {
    bool sparse = false;            // rows reduced apart
    int tables = 0;                 // tied tables in the graph
    int64_t rows = 0, table_rows = 0;  // of all tables: rows exchanged per reduction (at most), rows in the tables
    std::string dense_because;      // asked for sparse but reduced dense: why ("" otherwise)
  };
  EmbeddingGrad embedding_grad;
  // --overlap-ctas asked for on a backend without CTA limits: what the console and JSON say instead ("" otherwise).
  std::string overlap_ctas_not_applied;
  // --grad-registration: what the library granted on every communicator that reduced gradients (the weakest, when
  // they differ), and why it is less than asked for ("" when it is not). The rows' flags and an fp32 wire's packed
  // rows stay unregistered (they lie outside the gradient region).
  struct GradRegistration {
    BufferRegistration granted = BufferRegistration::kNone;
    std::string why_less;
  };
  GradRegistration grad_registration;
  // The optimizer's state one rank held in the data-parallel phases (all of it under ddp, its shard's under zero1),
  // and the parameters its optimizer updated there; 0 without a data-parallel phase.
  uint64_t optimizer_state_bytes_per_rank = 0;
  int64_t parameters_updated_per_rank = 0;
  // zero1/zero2: the bytes a step's all-gathers of the updated shards deliver to each rank together (every shard,
  // padding included), and how many a step runs (zero1 one per sub-step, zero2 one per bucket and sub-step); 0 under
  // ddp.
  uint64_t all_gather_bytes = 0;
  int all_gathers_per_step = 0;
  // zero2: the "bucket" reductions are reduce-scatters, not all-reduces.
  bool buckets_reduce_scattered = false;
  std::optional<BucketAuto> bucket_auto;  // with --bucket-mb auto
  double peak_tflops = 0;               // datasheet dense peak at this precision; 0: unknown device
  // Results.
  PhaseRecord solo, comm, dp;
  std::vector<std::pair<std::string, double>> breakdown_ms;  // rank 0's profiled solo step, by category
  std::vector<std::pair<std::string, double>> op_ms;         // the same step by op (backward nodes apart)
  // The host's side of that step: wall-clock time enqueueing its nodes, in all and by op (the optimizer not
  // included). More than the device time means the GPU waited for the CPU.
  double profiled_host_ms = 0;
  std::vector<std::pair<std::string, double>> op_host_ms;
  // The same step's slowest nodes, slowest first: which convolution or GEMM of the network the time goes to
  // (op_ms sums a network's hundreds of conv2d nodes into one line).
  struct SlowNode {
    int64_t index = 0;                  // in the graph's node order
    std::string op, output, shape;      // op (backward marked), its first output's name and shape
    std::string detail;                 // what the executor chose for it (a convolution's engine), or empty
    double ms = 0;
  };
  std::vector<SlowNode> slowest_nodes;
  bool weights_identical_at_start = false;
  bool weights_identical_after_dp = false;
  uint64_t weights_checksum_after_dp = 0;  // FNV-1a of the parameters' bytes: equal runs, equal weights
  CheckRecord check;
  // --gpus-sweep: the points trained between the solo phase (k = 1) and the dp phase (k = N), ascending k; and why
  // the curve is shorter than asked (one rank: k = 1 only), or "".
  std::vector<SweepPoint> sweep;
  std::string sweep_notice;
  // fp16: dynamic loss scaling's state on rank 0 after the last training phase (steps skipped for inf/NaN
  // gradients count over solo and dp together).
  bool loss_scaled = false;
  float loss_scale = 0;
  int64_t skipped_steps = 0;
  std::string status = "ok";  // "ok" | "failed" | "check_failed"
  std::string error;
};

// Derived numbers, computed in one place for every printer (src/train/training_summary.cpp).
struct PhaseSummary {
  double step_ms_p50 = 0, step_ms_p95 = 0, step_ms_max = 0;  // solo: the median GPU's; dp: max over ranks per step
  double units_per_s_per_gpu = 0, units_per_s_total = 0;
  double tflops_per_gpu = 0, mfu = 0;  // mfu 0 when the peak is unknown
  int slowest_rank = 0;
  double slowest_rank_step_ms = 0;
  // The host's time to issue one step (RankPhase::host_ms): the slowest rank's median, 0 when not measured.
  // host_bound: it reached kHostBoundShare of the device's step time, so the GPU likely waited for the host.
  double host_ms_p50 = 0;
  bool host_bound = false;
};
constexpr double kHostBoundShare = 0.9;
struct CommSummary {
  double step_ms_p50 = 0;   // all buckets back to back
  double busbw_gbps = 0;    // from the per-bucket durations' medians
};
// The dp phase's median step on rank 0, from its first node (GradientReducer::Timeline).
struct DpTimeline {
  double nodes_done_ms = 0;       // the backward pass's last node finished
  double last_reduce_end_ms = 0;  // the last bucket's all-reduce finished
  double tail_ms = 0;             // last_reduce_end - nodes_done, ≥ 0: communication left after the backward
  std::vector<double> ready_ms, start_ms, end_ms;  // per bucket
};
DpTimeline summarize_dp_timeline(const TrainingReport& report);

// The sharded strategies' all-gathers: in the dp phase and, back to back after the step's reductions, in the comm
// phase (comm_*: 0 without one), each step's slowest rank, the median step; busbw as nccl-tests counts an
// all-gather's (bytes x (N-1)/N over the time); exposed_ms_per_step, the time the compute stream waited for them:
// zero1/zero2 the dp step's time after its last update (step_done_ms - update_done_ms), zero3 the sum over the
// units of gather_end_ms - gather_needed_ms where positive. Zero without them.
struct AllGatherSummary {
  double ms_per_step = 0;
  double busbw_gbps = 0;
  double exposed_ms_per_step = 0;
  double comm_ms_per_step = 0, comm_busbw_gbps = 0;
};
AllGatherSummary summarize_all_gather(const TrainingReport& report);

struct ScalingSummary {
  double efficiency = 0;        // X(N) / (N · X(1)), X(1) the median solo GPU
  double exposed_comm_ms = 0;   // dp step - solo step (p50s), not below 0
  double overlap_pct = 0;       // 100 · (1 - exposed / comm-only time), within [0, 100]
  double efficiency_bound = 0;  // min(1, solo step / comm-only step): perfect overlap's scaling efficiency
  double in_training_busbw_gbps = 0;
};
// Why E(N) < 1: 1 − E = dilation + tail + skew, measured per rank and step (src/train/efficiency_decomposition.h
// defines each term), reduced as the dp step is (each step's slowest rank, the median step) and given as
// fractions of the dp step's median, with what they leave unexplained.
struct DecompositionTerms {
  double dilation_ms = 0, tail_ms = 0, skew_ms = 0;
};
struct EfficiencyDecomposition {
  bool measured = false;
  std::string not_measured;  // why not, when !measured
  double efficiency = 0;     // E(N), as summarize_scaling measured it
  double loss = 0;           // 1 − E
  double dp_step_ms = 0;     // the median over steps of the slowest rank's step: the fractions' denominator
  DecompositionTerms ms;     // in the median step, on its slowest rank
  double dilation = 0, tail = 0, skew = 0;  // fractions of the dp step
  double residual = 0;       // loss − (dilation + tail + skew), as measured
  bool adds_up = false;      // |residual| ≤ kDecompositionTolerance
  struct Rank {
    DecompositionTerms ms;   // in this rank's median dp step
    double solo_step_ms = 0, dp_step_ms = 0;  // this rank's medians
  };
  std::vector<Rank> ranks;
};
constexpr double kDecompositionTolerance = 0.005;  // half a point of E

// The scaling curve of a --gpus-sweep (src/train/sweep_summary.cpp), one row per size k: k = 1 from the solo
// phase, k = N from the dp phase, the sizes between from their points. Every E(k) has the same X(1), the job's
// median solo GPU; with concurrent groups a row sums its N/k groups. A row's decomposition, overlap and busbw
// are its first group's (rank 0's), measured against those ranks' own solo steps.
struct SweepRow {
  int gpus = 0;
  int groups = 1;               // trained at once
  std::string link;             // the first group's weakest link ("" at k = 1)
  std::vector<SweepGroup> group_list;
  bool measured = false;        // false: the phase for this k did not run (stopped before it)
  double step_ms_p50 = 0;       // the slowest group's
  double units_per_s_total = 0, units_per_s_per_gpu = 0;
  double efficiency = 0;        // units_per_s_total / (k · groups · X(1))
  double exposed_comm_ms = 0, comm_busbw_gbps = 0, in_training_busbw_gbps = 0;
  EfficiencyDecomposition decomposition;
  std::string cuda_graph;
};
std::vector<SweepRow> summarize_sweep(const TrainingReport& report);
// One group of a point as a report of its own (its ranks' devices, units, solo, comm and dp samples, nranks = k),
// so that every summary above applies to it.
TrainingReport sweep_group_view(const TrainingReport& report, const SweepPoint& point, size_t group);

PhaseSummary summarize_phase(const TrainingReport& report, const PhaseRecord& phase, bool max_over_ranks);
CommSummary summarize_comm(const TrainingReport& report, const PhaseRecord& phase);
ScalingSummary summarize_scaling(const TrainingReport& report);
EfficiencyDecomposition summarize_decomposition(const TrainingReport& report);

}  // namespace sb
