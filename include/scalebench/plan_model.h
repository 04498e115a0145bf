// The pure formulas of `scalebench plan`: a roofline per graph node, the α-β cost of a ring or tree
// all-reduce, and the step's timeline with the gradient buckets all-reduced on one communication stream
// while the backward pass runs, exactly as the trainer issues them (src/train/gradient_reducer.*). No device,
// no files: everything here is unit-tested with small hand-checked inputs (tests/plan/).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scalebench/graph.h"
#include "scalebench/plan_calibration.h"
#include "scalebench/plan_database.h"
#include "scalebench/precision.h"

namespace sb {

// ---- compute: one roofline per node
struct NodeWork {
  double flops = 0;        // matrix products (2 per multiply-add); 0 for memory-bound ops
  double bytes = 0;        // every input and output read or written once
  double peak_tflops = 0;  // the ceiling its products run at on this GPU (0 when flops is 0)
  bool unaligned = false;  // a 16-bit GEMM with a leading dimension not a multiple of 16 bytes
};

// Whether a 16-bit GEMM C(m x n) = op(A) op(B) (row-major; A stored m x k or, transposed, k x m; B k x n or n x k)
// has a leading dimension whose byte size is not a multiple of 16: cuBLASLt's tensor-core kernels need 16-byte
// aligned rows, and measured on the H200 such GEMMs run at about a quarter of the aligned ones' rate.
bool gemm_is_unaligned(double m, double n, double k, bool transpose_a, bool transpose_b, int element_bytes);

// The dense peak a product with operands of `operand` type runs at under `precision`: bf16 and fp16 operands
// on the tensor-core peak of that type (fp16 falls back to the FP32 rate on GPUs without tensor cores), fp32
// operands on TF32 tensor cores with --precision tf32, else the FP32 rate. UsageError when the GPU has no figure.
double product_peak_tflops(const GpuSpec& gpu, DType operand, Precision precision);

// The work of every node of the graph, in node order.
std::vector<NodeWork> node_work(const Graph& graph, const GpuSpec& gpu, Precision precision);

// max(flops / (peak · e_gemm), bytes / (bandwidth · e_mem)) + overhead, in ms; an unaligned GEMM's products at
// e_unaligned where the calibration has it.
double roofline_ms(const NodeWork& work, const GpuSpec& gpu, const ComputeCalibration& compute);

// The optimizer's pass over `gradient_bytes` of fp32 gradients: memory-bound, `bytes_per_gradient_byte` bytes
// moved per gradient byte (AdamW: read p, g, m, v and write p, m, v = 7), plus one kernel's overhead.
double optimizer_ms(double gradient_bytes, double bytes_per_gradient_byte, const GpuSpec& gpu,
                    const ComputeCalibration& compute);

// ---- communication: α-β all-reduce
struct CommPath {
  int gpus = 1, nodes = 1;
  double busbw_gbps = 0;                                // the ring's bus bandwidth: min(inside a node, between nodes)
  std::string intra_hop = "nvlink", inter_hop = "net";  // NCCL latency classes
  double in_training_rate = 1, dilation = 0;            // of the bottleneck fabric
};

struct AllReduceCost {
  double ring_us = 0, tree_us = 0;
  double us() const { return ring_us < tree_us ? ring_us : tree_us; }  // NCCL's tuner takes the faster
  const char* algorithm() const { return ring_us <= tree_us ? "ring" : "tree"; }
};

// Ring: base + [(2(N−1) − 2(M−1)) · hop_intra + 2(M−1) · hop_net] + S · 2(N−1)/N / busbw.
// Tree: 2 · [(N/M − 1) · hop_tree + log2(M) · hop_tree] + 2 · S / (tree_factor · busbw).
AllReduceCost all_reduce_cost(const CommPath& path, double bytes, const LatencyModel& latency);
// A reduce-scatter or all-gather of S bytes in all (every rank's part), which NCCL runs as a ring: base +
// [(N−1) − (M−1)] · hop_intra + (M−1) · hop_net + S · (N−1)/N / busbw (half the all-reduce's steps); no tree
// (tree_us infinite).
AllReduceCost ring_scatter_gather_cost(const CommPath& path, double bytes, const LatencyModel& latency);

// ---- the step's timeline
struct TimelineInput {
  std::vector<double> node_ms;           // every node of the step alone, in order
  std::vector<int> bucket_ready_node;    // per bucket in issue order: the node after which it may be reduced
  std::vector<double> bucket_comm_ms;    // per bucket: its all-reduce alone
  std::vector<double> bucket_update_ms;  // per bucket: the optimizer over its parameters
  double whole_update_ms = 0;            // the optimizer in one pass (when updates do not go by bucket)
  bool overlap = true;                   // false: every bucket after the last node (--no-overlap)
  bool update_by_bucket = true;          // each bucket updated when its all-reduce ends (overlap, no clipping/scaling)
  // The data-parallel step's update in one pass when it differs from the solo step's whole_update_ms (a sharded
  // strategy updates its shard alone); < 0: whole_update_ms.
  double dp_whole_update_ms = -1;
  // Node time of the data-parallel step that the solo step does not run: zero3's casts of the parameters' backward
  // copies (its dp replica's graph alone has them; run's solo phase trains a replica without them).
  double dp_only_node_ms = 0;
  // --strategy zero1/zero2: all-gathers of the updated parameters, on the communication stream after the step's
  // reductions, in issue order; each waits for an update: gather_after_update[g] the bucket whose update it follows
  // when updates go by bucket (-1, or updates in one pass: the last update).
  std::vector<double> gather_ms;
  std::vector<int> gather_after_update;
  // --strategy zero3 (non-empty: gather_after_update is ignored): the gathers precede their use instead. Gather g is
  // issued once the compute stream reached node gather_issue_node[g] (before it runs; -1: at the step's start) and
  // node gather_needed_node[g] waits for it; the communication stream runs gathers and reductions in issue order.
  std::vector<int> gather_issue_node, gather_needed_node;
  // Gradient blocks (zero2/zero3, PlanOptions::gradient_blocks): per bucket in issue order, the node before which the
  // compute stream waits for its reduction, whose block that node's tensors may reuse (-1: none); empty: no waits.
  std::vector<int> bucket_needed_node;
  double in_training_rate = 1;           // all-reduce progress while a compute kernel runs (fraction of alone)
  double dilation = 0;                   // compute slowdown while an all-reduce runs
};

struct TimelineResult {
  double solo_ms = 0;  // nodes + optimizer, no communication
  double forward_ms = 0, backward_ms = 0,
         optimizer_ms = 0;   // parts of solo_ms (forward: nodes before the first backward node)
  double comm_alone_ms = 0;  // Σ bucket all-reduces back to back (the comm phase), and the gathers after them
  double gathers_alone_ms = 0, last_gather_end_ms = 0;  // the all-gathers (sharded strategies), 0 without
  double nodes_done_ms = 0, last_reduce_end_ms = 0, step_ms = 0;  // the data-parallel step
  std::vector<double> bucket_start_ms, bucket_end_ms;
  int sub_steps = 1;          // training passes per step, each with its own all-reduces and update
  double parts_ms = 0;        // the sub-steps' parts before their passes (input switches, decode loops)
  double generation_ms = 0;   // of which generation (decode loops, every repetition)
};

// Two streams in one event simulation: the compute stream runs the nodes then the updates; the communication
// stream runs the buckets FIFO, each once its ready node has run. While both are busy, compute runs 1/(1+d)
// as fast and the all-reduce at in_training_rate of its rate alone. `first_backward_node` splits forward from
// backward for the breakdown.
TimelineResult simulate_step(const TimelineInput& input, int first_backward_node);

// A step of sub-steps (unsupMT: two auto-encoder and two back-translation steps): sub-step k runs its parts
// (`part_ms[k]`, of which `generation_ms[k]` decode loops, every repetition counted) on the compute stream, then
// the training pass `pass` (simulate_step of the pass's nodes, its reduction and update). The step is the sum;
// "backward done" and "last all-reduce done" are those of the last sub-step, counted from the step's start.
TimelineResult sub_step_timeline(const TimelineResult& pass, const std::vector<double>& part_ms,
                                 const std::vector<double>& generation_ms);

}  // namespace sb
