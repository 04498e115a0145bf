// What every subcommand needs before it measures anything (ARCHITECTURE.md step 2): ranks agree on the
// configuration, the launcher environment is cross-checked, each rank takes its device, and the
// communicator is built. Every failure here is agreed on by all ranks, so a bad input is reported
// everywhere and nothing waits forever for a rank that already gave up.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "scalebench/communicator.h"
#include "scalebench/device.h"
#include "scalebench/error.h"
#include "scalebench/process_group.h"
#include "src/cli/command_line.h"

namespace sb {

// Raised on every rank when any rank reported a usage error; carries this rank's own line.
class AgreedUsageError : public UsageError {
 public:
  using UsageError::UsageError;
};

// Collective: all ranks call it. If any rank has an error, every rank throws AgreedUsageError with its own
// message, or the first failing rank's message prefixed with its rank.
void agree_or_throw(ProcessGroup& group, const std::optional<std::string>& my_error);

// Collective: every rank's canonical configuration must hash the same as rank 0's.
void agree_on_configuration(ProcessGroup& group, const std::string& canonical);

struct Session {
  std::unique_ptr<Device> device;
  std::unique_ptr<Communicator> communicator;
};

// Collective. Chooses the device (auto: CUDA when a GPU is visible), creates the communicator, and prints
// launcher warnings once per rank.
Session open_session(ProcessGroup& group, const CommonOptions& options);

}  // namespace sb
