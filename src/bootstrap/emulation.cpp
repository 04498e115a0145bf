// The NCCL variables behind --emulate (include/scalebench/emulation.h).
#include "scalebench/emulation.h"

#include <cstdlib>

#include "scalebench/error.h"

namespace sb {

Emulation parse_emulation(const std::string& text) {
  for (Emulation e : {Emulation::kNone, Emulation::kHost, Emulation::kSocket}) {
    if (text == emulation_name(e)) return e;
  }
  throw UsageError("unknown --emulate '" + text + "' (accepted: none, host, socket)");
}

const char* emulation_name(Emulation emulation) {
  switch (emulation) {
    case Emulation::kNone: return "none";
    case Emulation::kHost: return "host";
    case Emulation::kSocket: return "socket";
  }
  return "none";
}

std::vector<std::pair<std::string, std::string>> emulation_variables(Emulation emulation) {
  switch (emulation) {
    case Emulation::kNone: return {};
    case Emulation::kHost: return {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_NVLS_ENABLE", "0"}};
    case Emulation::kSocket:
      return {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}, {"NCCL_IB_DISABLE", "1"},
              {"NCCL_NET", "Socket"},    {"NCCL_NVLS_ENABLE", "0"}};
  }
  return {};
}

std::optional<std::string> emulation_conflict(Emulation emulation, const Environment& env) {
  for (const auto& [name, value] : emulation_variables(emulation)) {
    auto it = env.find(name);
    if (it != env.end() && it->second != value) {
      return std::string("--emulate ") + emulation_name(emulation) + " sets " + name + "=" + value +
             ", but the environment has " + name + "=" + it->second + "; unset it or drop --emulate";
    }
  }
  return std::nullopt;
}

void apply_emulation(Emulation emulation) {
  for (const auto& [name, value] : emulation_variables(emulation)) setenv(name.c_str(), value.c_str(), 1);
}

std::string emulation_label(Emulation emulation) {
  switch (emulation) {
    case Emulation::kNone: return "";
    case Emulation::kHost: return "emulated host path (NCCL_P2P_DISABLE=1)";
    case Emulation::kSocket: return "emulated socket path (NCCL P2P, SHM and IB off, NCCL_NET=Socket)";
  }
  return "";
}

}  // namespace sb
