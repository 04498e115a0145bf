// Which transport NCCL used, read from NCCL's own INFO log: the per-channel connection lines
// "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read" (src/transport/{p2p,shm,net}.cc in NCCL). NCCL offers
// no API for this, so scalebench points NCCL_DEBUG_FILE at a private file before NCCL starts and reads it.
#pragma once

#include <string>
#include <vector>

#include "scalebench/launch.h"

namespace sb {

// Distinct transports named in `log_text`, normalised ("P2P/CUMEM/read", "SHM/direct/direct",
// "NET/Socket", "NET/IB/GDRDMA"), in first-seen order.
std::vector<std::string> parse_nccl_transports(const std::string& log_text);

// Joins transports from several ranks into one label, "P2P/CUMEM/read" or "SHM/direct/direct + NET/Socket".
std::string join_transports(const std::vector<std::string>& transports);

// Sets NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE for this process unless the user set
// NCCL_DEBUG; returns the log path, or "" when the user's own NCCL_DEBUG settings are kept.
std::string capture_nccl_log(const Environment& env, int pid);

}  // namespace sb
