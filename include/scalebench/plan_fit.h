// Fitting plan's calibration to measurements (`scalebench plan --calibrate`). Compute: the GEMM efficiency so the
// predicted "gemm" op time matches the profiled one, then the per-node overhead so the predicted solo steps
// match (least relative squares over the workloads; the memory efficiency is a measured copy rate, not fitted).
// Fabrics: the bus bandwidth so the predicted comm phase (buckets back to back) matches, then the in-training rate and
// dilation so the predicted data-parallel step matches, with each run's nodes scaled to its measured solo step so
// compute errors do not leak into the communication fit. Grid and bisection searches: deterministic, a second or two.
#pragma once

#include <string>
#include <vector>

#include "scalebench/plan.h"

namespace sb {

// `memory_efficiency` is not fitted: it is the measured device copy rate over the datasheet bandwidth (two
// workloads cannot tell it apart from the per-node overhead).
// unaligned_gemm_efficiency (0 without measurements) is the unaligned GEMMs' FLOPs over their measured time at
// the GPU's peak, fitted first; gemm_efficiency then fits the profiled GEMM time with those at that rate.
ComputeCalibration fit_compute(const std::vector<ComputeMeasurement>& measurements,
                               const std::vector<UnalignedGemmMeasurement>& unaligned, const HardwareDatabase& db,
                               double memory_efficiency);

// Fits every fabric key that has runs with used_in_fit; returns the fitted entries by key (fabric name for
// measured-only paths, else the kind). `base` supplies latency and compute.
std::map<std::string, FabricCalibration> fit_fabrics(const std::vector<RunMeasurement>& runs,
                                                     const HardwareDatabase& db, const Calibration& base);

// The run's measured configuration as a plan request (workload, GPU, count, fabric, precision, batch...).
PlanRequest request_for(const RunMeasurement& run);

// The calibration document: `base` with compute and the fitted fabrics replaced and the measurements recorded.
std::string calibration_json(const Calibration& calibration);

}  // namespace sb
