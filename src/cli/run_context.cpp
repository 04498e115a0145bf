// Gathering per-rank facts for reports (src/cli/run_context.h).
#include "src/cli/run_context.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "collectives/nccl_transport_log.h"
#include "scalebench/launch.h"
#include "scalebench/versions.h"

namespace sb {

std::vector<RankDevice> gather_rank_devices(ProcessGroup& group, const Device& device) {
  const DeviceDescription& d = device.description();
  nlohmann::json mine = {{"host", group.host()},     {"pid", static_cast<int>(getpid())},
                         {"kind", static_cast<int>(d.kind)}, {"index", d.index},
                         {"name", d.name},            {"bus_id", d.bus_id},
                         {"total_memory", d.total_memory}, {"cc", d.compute_capability}};
  std::vector<RankDevice> devices;
  int rank = 0;
  for (const std::string& text : group.allgather_strings(mine.dump())) {
    nlohmann::json entry = nlohmann::json::parse(text);
    RankDevice rd;
    rd.rank = rank++;
    rd.host = entry["host"];
    rd.pid = entry["pid"];
    rd.device.kind = static_cast<DeviceKind>(entry["kind"].get<int>());
    rd.device.index = entry["index"];
    rd.device.name = entry["name"];
    rd.device.bus_id = entry["bus_id"];
    rd.device.total_memory = entry["total_memory"];
    rd.device.compute_capability = entry["cc"];
    devices.push_back(rd);
  }
  return devices;
}

std::string gather_transport(ProcessGroup& group, const Communicator& communicator) {
  return join_transports(group.allgather_strings(communicator.transport()));
}

void describe_training_context(const CommandLine& cl, ProcessGroup& group, Session& session, TrainingReport& report) {
  const bool cuda = session.device->kind() == DeviceKind::kCuda;
  report.argv = cl.argv;
  report.emulate = cl.common.emulate;
  report.started_at = utc_timestamp();
  report.nranks = group.size();
  report.backend = backend_name(session.communicator->backend());
  report.communicator_version = session.communicator->library_version();
  report.mpi_version = group.library_version();
  report.cuda_runtime_version = cuda ? cuda_runtime_version() : "";
  report.cuda_driver_version = cuda ? cuda_driver_version() : "";
  report.cublas_version = cuda ? cublas_version() : "";
  report.environment = recorded_environment(current_environment());
  report.device_kind = device_kind_name(session.device->kind());
  for (const RankDevice& rank : gather_rank_devices(group, *session.device)) {
    report.devices.push_back({rank.host, rank.device.name, rank.device.bus_id, rank.device.index});
  }
  const WorkloadInfo& info = find_workload(report.options.workload).info();
  report.task = info.task;
  report.unit = info.unit;
  report.batch = report.options.batch > 0 ? report.options.batch : info.default_batch;
  report.peak_tflops = peak_tflops(session.device->description().name, report.options.precision);
}

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

void warn_full_scale_on_cpu(const Device& device, WorkloadScale scale, const std::string& what) {
  if (device.kind() != DeviceKind::kCpu || scale != WorkloadScale::kFull) return;
  std::fprintf(stderr,
               "scalebench: warning: %s trains the full-scale model on the CPU device: this will take minutes; add "
               "--scale tiny (same graph, small dimensions) for a quick run\n",
               what.c_str());
  std::fflush(stderr);
}

}  // namespace sb
