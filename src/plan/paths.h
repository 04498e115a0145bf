// Which fabric a plan's all-reduces cross and at what bus bandwidth (src/plan/paths.cpp).
#pragma once

#include <string>
#include <vector>

#include "scalebench/plan.h"

namespace sb {

struct ResolvedPath {
  CommPath path;
  std::string intra_fabric, inter_fabric;  // "" when unused
  int nics_per_node = 0;
  std::vector<std::string> notes;
};

// Inside a node: --intra-fabric (or --fabric on one node), else the GPU's NVLink when the node's GPUs fit its
// domain, else PCIe P2P where the GPU is documented to support it, else host-staged PCIe. Between nodes:
// --fabric, default ib-ndr, one adapter per GPU unless --nics-per-node. The ring's bus bandwidth is the
// smaller of the two; the in-training behaviour is the bottleneck fabric's.
ResolvedPath resolve_path(const PlanRequest& request, const GpuSpec& gpu, const HardwareDatabase& db,
                          const Calibration& calibration);

// A fabric's achieved bus bandwidth (GB/s): nominal × calibrated efficiency, or the calibrated absolute rate.
double fabric_busbw_gbps(const FabricSpec& fabric, const FabricCalibration& calibration);

// The default path between the GPUs of one node.
std::string default_intra_fabric(const GpuSpec& gpu, int gpus_per_node);

}  // namespace sb
