// `scalebench plan --validate`: each measured run predicted from its own configuration and printed beside the
// measurement with the error (src/plan/validate.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scalebench/plan.h"

namespace sb {

// A `scalebench run --json` file (schema 2 or 3) as a measurement: workload, GPU (its device name looked up in the
// database), ranks and hosts, the fabric (from NCCL's reported transport: P2P → the GPU's NVLink or PCIe P2P,
// SHM → host-staged PCIe, NET/Socket on one host → tcp-loopback, NET/IB → ib-ndr; `fabric_override` wins),
// precision, batch, bucket size, wire type, overlap, and the solo, comm and dp step times (p50). Only fp32-wire
// runs with overlap are marked for the fabric fit.
RunMeasurement measurement_from_result(const std::string& path, const HardwareDatabase& db,
                                       const std::string& fabric_override);
// The same, plus one measurement per --gpus-sweep point between 1 and N (schema 3; labelled "PATH k=K"), each with
// its own GPU count, dp step and E(k), over the file's fabric (the GPU's own path when the point's ranks share a
// node of a multi-node job). Points are for validation only, not the fit: one job's k's are not independent runs.
std::vector<RunMeasurement> measurements_from_result(const std::string& path, const HardwareDatabase& db,
                                                     const std::string& fabric_override);

struct ValidationRow {
  RunMeasurement measured;
  PlanPrediction predicted;
  double measured_units_per_s_per_gpu = 0;  // dp (solo with one rank)
};

std::vector<ValidationRow> validate_runs(const std::vector<RunMeasurement>& runs, const HardwareDatabase& db,
                                         const Calibration& calibration);

// Predicted vs measured with errors: solo and dp step, per-GPU throughput (%), E(N) (points).
std::string validation_text(const std::vector<ValidationRow>& rows, const std::string& title, bool markdown);

}  // namespace sb

namespace sb {
// The profiled step's GEMM time of a run file: op_ms "gemm" + "gemm (backward)" (none when absent).
std::optional<double> gemm_ms_of_result(const std::string& path);
}  // namespace sb
