// run_topo_command(): the engine of `scalebench topo`. Node-local rank 0 of each node discovers its node;
// with a communicator on CUDA every rank runs one small all_reduce so that NCCL connects and can say which
// transport it chose (it connects lazily, so nothing is known before a collective); rank 0 gathers one
// JSON entry per rank, prints the console report and writes --json.
#include <fstream>
#include <iostream>
#include <string>

#include "scalebench/error.h"
#include "scalebench/pattern.h"
#include "scalebench/topology.h"
#include "src/topo/topology_detail.h"

namespace sb {
namespace {

// fp32 elements of the probe: 4 KiB is enough for NCCL to set up its channels and small enough that the
// probe costs nothing next to communicator creation.
constexpr size_t kProbeCount = 1024;

const char* backend_label(Backend backend) {
  switch (backend) {
    case Backend::kNccl: return "nccl";
    case Backend::kMpi: return "mpi";
    case Backend::kLocal: return "local";
    case Backend::kAuto: return "auto";
  }
  return "unknown";
}

class ScopedStream {
 public:
  explicit ScopedStream(Device& device) : device_(device), stream_(device.create_stream()) {}
  ~ScopedStream() { device_.destroy_stream(stream_); }
  ScopedStream(const ScopedStream&) = delete;
  ScopedStream& operator=(const ScopedStream&) = delete;
  StreamHandle get() const { return stream_; }

 private:
  Device& device_;
  StreamHandle stream_;
};

// One verified all_reduce, then the transport the communicator reports. A wrong result does not stop
// the command (the other ranks would hang in the gather) but shows next to the transport.
std::string probe_transport(Device& device, Communicator& communicator) {
  DeviceBuffer buffer(device, kProbeCount * dtype_size(DType::kFloat32));
  ScopedStream stream(device);
  PatternSpec spec;
  spec.op = CollectiveOp::kAllReduce;
  spec.reduce = ReduceOp::kSum;
  spec.rank = communicator.rank();
  spec.nranks = communicator.size();
  spec.block = kProbeCount;
  spec.amplitude = pattern_amplitude(spec.nranks, dtype_exact_integer_limit(DType::kFloat32));
  spec.role = PatternRole::kInput;
  device.fill_pattern(buffer.data(), kProbeCount, DType::kFloat32, spec, stream.get());
  communicator.all_reduce(buffer.data(), buffer.data(), kProbeCount, DType::kFloat32, ReduceOp::kSum,
                          stream.get());
  communicator.wait(stream.get(), "the topo transport probe (all_reduce of 4 KiB)");
  spec.role = PatternRole::kExpected;
  const uint64_t wrong =
      device.count_mismatches(buffer.data(), kProbeCount, DType::kFloat32, spec, stream.get());
  std::string transport = communicator.transport();
  if (wrong > 0) transport += " (probe all_reduce WRONG in " + std::to_string(wrong) + " elements)";
  return transport;
}

std::string device_label(const Device* device) {
  if (device == nullptr) return "none";
  if (device->kind() == DeviceKind::kCpu) return "cpu";
  return "cuda:" + std::to_string(device->description().index);
}

void write_json(const std::string& path, const TopoReport& report) {
  std::ofstream out(path);
  if (!out) throw UsageError("cannot write the --json file '" + path + "'");
  out << topo_report_json(report);
  if (!out.flush()) throw UsageError("cannot write the --json file '" + path + "'");
}

}  // namespace

TopoReport gather_topology(ProcessGroup& group, const Device* device, const std::string& transport) {
  const bool discovers = group.local_rank() == 0;
  NodeTopology node;
  if (discovers) {
    node = discover_node_topology();
    node.host = group.host();
    node.node_index = group.node_index();
    node.local_ranks = group.local_size();
  }
  RankPlacement placement;
  placement.rank = group.rank();
  placement.node_index = group.node_index();
  placement.host = group.host();
  placement.local_rank = group.local_rank();
  placement.device = device_label(device);
  placement.transport = transport;
  return detail::assemble_topo_report(
      group.allgather_strings(detail::rank_entry_json(placement, discovers ? &node : nullptr)));
}

int run_topo_command(const TopoOptions& options, ProcessGroup& group, Device* device,
                     Communicator* communicator) {
  // Every rank takes the same branch: the CLI builds the same device kind and backend everywhere.
  std::string not_probed;
  if (communicator == nullptr) {
    not_probed = "no communicator";
  } else if (device == nullptr) {
    not_probed = "no device";
  } else if (device->kind() == DeviceKind::kCpu) {
    not_probed = "CPU device";
  }
  TopoReport report =
      gather_topology(group, device, not_probed.empty() ? probe_transport(*device, *communicator) : "");
  if (group.rank() != 0) return kExitOk;
  report.transport_probed = not_probed.empty();
  report.transport_backend = report.transport_probed ? backend_label(communicator->backend()) : "";
  report.transport_note = not_probed;

  if (options.json_path == "-") {
    std::cout << topo_report_json(report) << std::flush;  // stdout stays parseable: JSON only
    return kExitOk;
  }
  print_topo_report(std::cout, report);
  std::cout << std::flush;
  if (!options.json_path.empty()) write_json(options.json_path, report);
  return kExitOk;
}

}  // namespace sb
