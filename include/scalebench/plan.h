// `scalebench plan`: what a workload would do on hardware you do not have. The workload's real graph and memory
// plan (the trainer's own planner) give the bytes, hence the largest batch per GPU and precision; each node's
// roofline on the GPU's datasheet peaks, scaled by efficiencies calibrated on measured runs, gives the solo
// step; each gradient bucket's α-β all-reduce on the fabric, overlapped with the backward pass as the trainer
// issues it, gives the data-parallel step. Every figure printed is labelled predicted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scalebench/optimizer.h"
#include "scalebench/plan_calibration.h"
#include "scalebench/plan_database.h"
#include "scalebench/plan_model.h"
#include "scalebench/precision.h"
#include "scalebench/strategy.h"

namespace sb {

// The one memory reserve of plan: what a GPU holds outside a framework's own allocations (CUDA context, library
// handles, kernels loaded on first use, NCCL's buffers). `scalebench maxbatch` measured 1.08-1.15 GiB on one H200
// without NCCL (docs/PERFORMANCE.md, 2026-11-30); 1.25 GiB leaves room for NCCL's buffers. Usable memory = the
// card's memory minus this, for scalebench and PyTorch alike; plan prints it and docs/PLAN.md states it. The
// executor's GEMM workspace and kernel scratch are in needed_bytes.
constexpr uint64_t kPlanDeviceReserveBytes = 1280ull << 20;
// AdamW's fused step reads parameter, gradient and two moments and writes parameter and moments: 7 fp32 words per
// gradient word (the trainer's optimizer kernel, src/cuda/optimizer.cu). The calibration's measurements ran it.
constexpr double kAdamwBytesPerGradientByte = 7.0;
// What `kind`'s fused step moves per gradient byte: the Adam family 7 (above); SGD momentum and NAG read parameter,
// gradient and momentum and write parameter and momentum, 5.
double optimizer_bytes_per_gradient_byte(OptimizerKind kind);

struct PlanRequest {
  std::string workload, gpu;
  int gpus = 1, nodes = 1;
  std::string fabric;              // "": the default path (between nodes when nodes > 1, else inside the node)
  std::string intra_fabric;        // "": the GPU's NVLink, PCIe P2P or host-staged path
  int nics_per_node = 0;           // 0: one network adapter per GPU (rail-optimised nodes)
  std::string precision = "auto";  // auto: bf16, or fp16 on GPUs without bf16
  int64_t batch = 0;               // 0: the workload's reference batch, or the largest that fits when it does not
  double bucket_mb = 25;
  std::string grad_dtype = "fp32";
  bool overlap = true;
  double memory_gib = 0;                // > 0: the card's memory in GiB instead of the database's (--memory)
  std::string framework = "scalebench";  // or "pytorch": largest batches from PyTorch's measured memory lines
  // ddp, zero1, zero2 or zero3 (run --strategy): over more than one GPU, the optimizer's state of one shard per GPU
  // in the memory (zero2/zero3: the gradients', zero3: the parameters' too), the shard's update, the reduce-scatters
  // and the all-gathers in the step.
  std::string strategy = "ddp";
  // run --optimizer: adamw (run's default), adam, adamax, sgd_momentum, nag, or reference (the workload's): its
  // state in the memory (two buffers of the parameters' size for the Adam family, one for SGD momentum and NAG) and
  // its update's bytes in the step.
  std::string optimizer = "adamw";
};

// PyTorch's largest batch in one mode, from its measured memory line (src/plan/pytorch_memory.h).
struct FrameworkFit {
  std::string mode;       // "eager" or "compiled"
  std::string precision;  // the autocast dtype the line was measured in
  int64_t max_batch = 0;
  std::string measured_on;  // GPU, torch version and date of the measurement
};

struct PrecisionFit {
  Precision precision = Precision::kFp32;
  int64_t max_batch = 0;  // 0: not even the workload's smallest batch (WorkloadInfo::min_batch) fits
};

struct PlanPrediction {
  PlanRequest request;
  const GpuSpec* gpu = nullptr;
  Precision precision = Precision::kBf16;
  OptimizerKind optimizer = OptimizerKind::kAdamW;  // request.optimizer resolved ("reference": the workload's)
  int64_t batch = 0;
  bool batch_reduced = false;  // the reference batch did not fit; the largest that fits was used
  std::string unit;
  std::string batch_unit;  // what --batch and the largest batch count ("sentence pairs", "sequences", "images")
  double units_per_step = 0, train_flops_per_step = 0;
  uint64_t needed_bytes = 0, capacity_bytes = 0;  // plan + optimizer state; usable device memory
  std::vector<PrecisionFit> fits;                 // largest batch per precision the GPU supports
  std::vector<FrameworkFit> pytorch_fits;         // --framework pytorch: per measured mode
  std::string intra_fabric, inter_fabric;         // "" when unused
  int nics_per_node = 0;
  CommPath path;
  size_t buckets = 0;
  double wire_bytes = 0;  // per step, all buckets
  TimelineResult timeline;
  double solo_units_per_s = 0, dp_units_per_s_per_gpu = 0, dp_units_per_s_total = 0, scaling_efficiency = 1;
  std::vector<std::string> notes;  // assumptions and borrowed calibrations, printed under the figures
};

Precision resolve_plan_precision(const GpuSpec& gpu, const std::string& text);  // UsageError if unsupported

struct PytorchMemoryTable;

// `pytorch`: the PyTorch memory lines for --framework pytorch (null: the built-in table).
PlanPrediction predict_plan(const PlanRequest& request, const HardwareDatabase& db, const Calibration& calibration,
                            const PytorchMemoryTable* pytorch = nullptr);

// The largest batch of `workload` at `precision` whose plan + optimizer state fits `capacity_bytes` (cached
// per workload, precision, capacity, sharding and optimizer: --table asks for many). A sharded `strategy` over `gpus`
// GPUs plans as run --strategy holds it in its data-parallel phases (the state of one shard; zero2's bucket layout).
int64_t plan_max_batch(const std::string& workload, Precision precision, uint64_t capacity_bytes,
                       DataParallelStrategy strategy = DataParallelStrategy::kDdp, int gpus = 1,
                       OptimizerKind optimizer = OptimizerKind::kAdamW);
// memory_gib GiB (the database's memory_gb when 0) minus kPlanDeviceReserveBytes.
uint64_t usable_bytes(const GpuSpec& gpu, double memory_gib = 0);

// `scalebench plan`'s options (its flags: src/cli/plan_command.cpp).
struct PlanCommandOptions {
  std::vector<std::string> workloads, gpus;  // one each for a prediction; lists for --table
  PlanRequest request;                       // the rest of a prediction's configuration
  bool no_overlap = false;
  bool table = false;
  bool validate = false;
  bool calibrate = false;
  bool fresh = false;  // --calibrate on the files alone
  bool markdown = false;
  std::vector<std::string> files;  // --validate / --calibrate: scalebench run --json files
  std::string calibration_path;    // "": the built-in calibration
  std::string pytorch_memory_path;  // "": the built-in PyTorch memory lines
  std::string out_path;            // --calibrate: where the new calibration goes ("" stdout)
  std::string json_path;           // --json: "" none, "-" stdout (the predictions alone)
  std::string gpus_sweep;          // "": one prediction at --gpus; a list or auto: the curve at every k (issue 29)
};

// `scalebench plan`: a prediction, --table, --validate or --calibrate. Checks the options and loads the calibration
// and PyTorch memory lines (UsageError naming the problem) on every caller, so ranks fail alike; prints and writes
// only when `prints` (rank 0). Returns the exit code.
int run_plan(const PlanCommandOptions& options, bool prints);

}  // namespace sb
