// What the model of `scalebench plan` takes from measured runs (src/plan/data/calibration.json): how close the
// GEMMs and memory-bound kernels come to a GPU's datasheet peaks, and per fabric what NCCL achieves and how
// the all-reduces and the backward pass slow each other down inside training. Each fitted value sits beside
// the measurements it was fitted on, with their sources, so `plan --calibrate` can refit them and a test can
// check that the stored values are the fit of the stored measurements.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scalebench/plan_database.h"

namespace sb {

// Roofline efficiencies: a node takes max(FLOPs / (peak · gemm_efficiency), bytes / (bandwidth ·
// memory_efficiency)) + node_overhead_us (launch and gaps between kernels).
// A 16-bit GEMM whose operands' leading dimensions are not all multiples of 16 bytes (a vocabulary of 30,522 or
// 64,699 columns) cannot use cuBLASLt's aligned tensor-core kernels and runs at unaligned_gemm_efficiency instead
// (0: no such figure, every GEMM at gemm_efficiency).
struct ComputeCalibration {
  double gemm_efficiency = 0, memory_efficiency = 0, node_overhead_us = 0;
  std::string memory_efficiency_source;  // a measured copy rate, not a fit
  double unaligned_gemm_efficiency = 0;
};

// Per fabric (by name, else by kind): the ring's bus bandwidth as a fraction of the nominal rate (or an
// absolute one where the path has no nominal rate), and inside training the all-reduces' progress rate while
// compute kernels run (a fraction of their rate alone) and the compute kernels' slowdown while an all-reduce
// runs (dilation: 0.3 = 30% slower).
struct FabricCalibration {
  std::optional<double> bus_efficiency, busbw_gbps;
  double in_training_rate = 1, dilation = 0;
  std::string source;     // where the values come from
  bool borrowed = false;  // not measured on this kind of path: taken from another (said in every output)
};

// NCCL's own latency model of an all-reduce with the Simple protocol (src/graph/tuning.cc): ring = base +
// per-step latency × 2(N−1) steps (network steps at the network's latency), tree = 2 × (intra-node chain + log2
// nodes) steps at the tree's per-step latency; a tree moves 2·S through its bottleneck at 0.92 of the bus rate.
struct LatencyModel {
  double ring_base_us = 0, ring_hop_nvlink_us = 0, ring_hop_pci_us = 0, ring_hop_net_us = 0;
  double tree_hop_us = 0, tree_bandwidth_factor = 0;
  std::string source;
};

// A measured solo step (compute calibration): gemm_ms is the profiled step's "gemm" + "gemm (backward)" op time.
struct ComputeMeasurement {
  std::string workload, gpu, precision, source;
  int64_t batch = 0;  // 0: the workload's default
  std::optional<double> gemm_ms;
  double step_ms = 0;
};

// One profiled GEMM node of unaligned shape (compute calibration: unaligned_gemm_efficiency is their FLOPs over
// their time at the GPU's peak): C(m x n) += A(m x k) B(k x n), its operand type and its measured time.
struct UnalignedGemmMeasurement {
  std::string workload, gpu, precision, node, source;
  double m = 0, n = 0, k = 0, ms = 0;
};

// A measured data-parallel run (fabric calibration and --validate without files).
struct RunMeasurement {
  std::string workload, gpu, fabric, precision, grad_dtype = "fp32", source, label;
  std::string strategy = "ddp", optimizer = "adamw";  // run --strategy and --optimizer (the kind it resolved to)
  int gpus = 0, nodes = 1;
  int64_t batch = 0;  // 0: the workload's default
  bool overlap = true;
  double bucket_mb = 25;
  double solo_step_ms = 0, dp_step_ms = 0;
  std::optional<double> comm_step_ms, scaling_efficiency;
  bool used_in_fit = true;  // false: recorded for validation only (e.g. bf16 wire)
};

struct Calibration {
  std::string provenance;
  ComputeCalibration compute;
  std::map<std::string, FabricCalibration> fabrics;  // key: fabric name or kind name
  LatencyModel latency;
  std::vector<ComputeMeasurement> compute_measurements;
  std::vector<UnalignedGemmMeasurement> unaligned_gemm_measurements;
  std::vector<RunMeasurement> run_measurements;

  // The fabric's entry: by name first, then by kind; UsageError when neither exists.
  const FabricCalibration& fabric(const FabricSpec& spec) const;
};

// Parses and checks calibration.json; `origin` names it in errors.
Calibration parse_calibration(const std::string& text, const std::string& origin = "calibration.json");
// Reads FILE, or the compiled-in calibration when `path` is empty.
Calibration load_calibration(const std::string& path);

}  // namespace sb
