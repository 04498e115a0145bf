// --emulate none|host|socket: on one machine, make NCCL take the path a weaker machine has, so a DGX-class
// box can show what a box without GPU peer-to-peer or an Ethernet cluster would get. It works by the NCCL
// variables below, set in every rank's environment before the communicator is created; the transport NCCL
// then reports (nccl_transport_log.h) is printed beside the label, so an emulated figure is never mistaken
// for a measured fabric.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scalebench/launch.h"

namespace sb {

enum class Emulation { kNone, kHost, kSocket };

Emulation parse_emulation(const std::string& text);  // throws UsageError
const char* emulation_name(Emulation emulation);     // "none", "host", "socket"

// host:   NCCL_P2P_DISABLE=1 (GPU pairs exchange through host memory, as without P2P);
// socket: also NCCL_SHM_DISABLE=1, NCCL_IB_DISABLE=1 and NCCL_NET=Socket (TCP through the kernel, as
//         between nodes over Ethernet). Both: NCCL_NVLS_ENABLE=0 (NVLink SHARP would still use NVLink).
std::vector<std::pair<std::string, std::string>> emulation_variables(Emulation emulation);

// A usage error when the environment already sets one of those variables to another value.
std::optional<std::string> emulation_conflict(Emulation emulation, const Environment& env);

// Sets the variables in this process (before NCCL reads them).
void apply_emulation(Emulation emulation);

// The label every output carries: "" for none, "emulated host path (NCCL_P2P_DISABLE=1)", ...
std::string emulation_label(Emulation emulation);

}  // namespace sb
