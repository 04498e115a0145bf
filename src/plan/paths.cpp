// Choosing the communication path of a plan (src/plan/paths.h).
#include "src/plan/paths.h"

#include <algorithm>
#include <limits>

#include "scalebench/error.h"

namespace sb {

double fabric_busbw_gbps(const FabricSpec& fabric, const FabricCalibration& calibration) {
  if (calibration.busbw_gbps) return *calibration.busbw_gbps;
  if (!fabric.gbps) throw UsageError("fabric '" + fabric.name + "' has no nominal rate and no calibrated one");
  return *fabric.gbps * *calibration.bus_efficiency;
}

std::string default_intra_fabric(const GpuSpec& gpu, int gpus_per_node) {
  if (!gpu.nvlink_fabric.empty() && gpus_per_node <= gpu.nvlink_max_gpus) return gpu.nvlink_fabric;
  const std::string gen = "pcie" + std::to_string(gpu.pcie_gen);
  return gpu.pcie_p2p.value_or(false) ? gen + "-p2p" : gen + "-host";
}

ResolvedPath resolve_path(const PlanRequest& request, const GpuSpec& gpu, const HardwareDatabase& db,
                          const Calibration& calibration) {
  ResolvedPath out;
  if (request.gpus < 1 || request.nodes < 1) throw UsageError("--gpus and --nodes must be at least 1");
  if (request.gpus % request.nodes != 0) {
    throw UsageError("--gpus " + std::to_string(request.gpus) + " is not a multiple of --nodes " +
                     std::to_string(request.nodes));
  }
  if (request.gpus > 1024) throw UsageError("--gpus: the model is meant for up to 1024 GPUs");
  const int per_node = request.gpus / request.nodes;
  out.path.gpus = request.gpus;
  out.path.nodes = request.nodes;
  if (request.gpus == 1) return out;

  const double inf = std::numeric_limits<double>::infinity();
  double intra_bw = inf, inter_bw = inf;
  const FabricCalibration* intra_cal = nullptr;
  const FabricCalibration* inter_cal = nullptr;
  if (per_node > 1) {
    std::string name = !request.intra_fabric.empty()                   ? request.intra_fabric
                       : request.nodes == 1 && !request.fabric.empty() ? request.fabric
                                                                       : default_intra_fabric(gpu, per_node);
    const FabricSpec& fabric = db.fabric(name);
    if (fabric.inter_node) throw UsageError("fabric '" + name + "' joins nodes, not the GPUs of one node");
    if (fabric.max_gpus > 0 && per_node > fabric.max_gpus) {
      throw UsageError("fabric '" + name + "' joins at most " + std::to_string(fabric.max_gpus) + " GPUs");
    }
    if (request.intra_fabric.empty() && (request.nodes > 1 || request.fabric.empty()) &&
        fabric.kind == FabricKind::kHostStaged) {
      out.notes.push_back(gpu.name + (gpu.pcie_p2p.has_value() ? " has no PCIe P2P" : ": PCIe P2P not documented") +
                          ", so the GPUs of a node exchange through host memory (" + name + ")");
    }
    intra_cal = &calibration.fabric(fabric);
    intra_bw = fabric_busbw_gbps(fabric, *intra_cal);
    out.intra_fabric = name;
    out.path.intra_hop = fabric.hop;
  }
  if (request.nodes > 1) {
    const std::string name = request.fabric.empty() ? "ib-ndr" : request.fabric;
    if (request.fabric.empty()) out.notes.push_back("between nodes: ib-ndr (the default; --fabric to change)");
    const FabricSpec& fabric = db.fabric(name);
    if (!fabric.inter_node) throw UsageError("fabric '" + name + "' is inside a node; between nodes use ib-* or eth-*");
    out.nics_per_node = request.nics_per_node > 0 ? request.nics_per_node : per_node;
    inter_cal = &calibration.fabric(fabric);
    inter_bw = out.nics_per_node * fabric_busbw_gbps(fabric, *inter_cal);
    out.inter_fabric = name;
    out.path.inter_hop = fabric.hop;
    if (per_node == 1) out.path.intra_hop = fabric.hop;
  }
  const bool inter_bound = inter_bw < intra_bw;
  const FabricCalibration& bottleneck = inter_bound ? *inter_cal : *intra_cal;
  out.path.busbw_gbps = std::min(intra_bw, inter_bw);
  out.path.in_training_rate = bottleneck.in_training_rate;
  out.path.dilation = bottleneck.dilation;
  for (const FabricCalibration* cal : {intra_cal, inter_cal}) {
    if (cal != nullptr && cal->borrowed) {
      out.notes.push_back("calibration borrowed for " +
                          std::string(cal == intra_cal ? out.intra_fabric : out.inter_fabric) + ": " + cal->source);
    }
  }
  return out;
}

}  // namespace sb
