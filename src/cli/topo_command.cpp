// `scalebench topo`: open the session (so NCCL connects the GPUs the way a training run would) and report
// the topology with the transport the communicator actually used.
#include "scalebench/topology.h"
#include "src/cli/commands.h"
#include "src/cli/run_context.h"
#include "src/cli/session.h"

namespace sb {

int run_topo_command_line(const CommandLine& command_line, ProcessGroup& group) {
  agree_or_throw(group, group.rank() == 0
                            ? unwritable_output({command_line.common.json_path}, command_line.common.force)
                            : std::nullopt);
  Session session = open_session(group, command_line.common);
  TopoOptions options;
  options.json_path = command_line.common.json_path;
  return run_topo_command(options, group, session.device.get(), session.communicator.get());
}

}  // namespace sb
