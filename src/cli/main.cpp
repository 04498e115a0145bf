// scalebench's entry point: start the process group (MPI when built with it), run, shut down in order.
#include "scalebench/error.h"
#include "scalebench/process_group.h"
#include "src/cli/commands.h"

int main(int argc, char** argv) {
  std::unique_ptr<sb::ProcessGroup> group;
  try {
    group = sb::start_process_group(&argc, &argv);
  } catch (const sb::RuntimeFailure& e) {
    std::fprintf(stderr, "scalebench: error: %s\n", e.what());
    return sb::kExitRuntime;
  }
  const int exit_code = sb::run_scalebench(*group, argc, argv);
  group->finalize();
  return exit_code;
}
