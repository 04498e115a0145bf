// Gathering per-rank facts for reports (src/cli/run_context.h).
#include "src/cli/run_context.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "collectives/nccl_transport_log.h"

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

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::optional<std::string> unwritable_output(const std::vector<std::string>& paths, bool force) {
  for (const std::string& path : paths) {
    if (path.empty() || path == "-") continue;
    const bool existed = std::ifstream(path).good();
    if (existed && !force) return "output file '" + path + "' exists; pass --force to overwrite it";
    std::ofstream probe(path, std::ios::app);
    if (!probe) return "cannot write '" + path + "': " + std::strerror(errno);
    probe.close();
    if (!existed) std::remove(path.c_str());
  }
  return std::nullopt;
}

}  // namespace sb
