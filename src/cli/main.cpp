// scalebench's entry point: start the process group (MPI when built with it), run, shut down in order.
#include "scalebench/error.h"
#include "scalebench/process_group.h"
#include "src/cli/commands.h"
#include "src/cli/startup_watchdog.h"

int main(int argc, char** argv) {
  sb::start_startup_watchdog(argc, argv);
  sb::startup_stage("MPI initialisation (MPI_Init_thread: every rank of the job must start)");
  std::unique_ptr<sb::ProcessGroup> group;
  try {
    group = sb::start_process_group(&argc, &argv);
  } catch (const sb::RuntimeFailure& e) {
    std::fprintf(stderr, "scalebench: error: %s\n", e.what());
    sb::end_startup_watchdog();
    return sb::kExitRuntime;
  }
  const int exit_code = sb::run_scalebench(*group, argc, argv);
  group->finalize();
  return exit_code;
}
