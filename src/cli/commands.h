// Subcommand entry points. Each is collective (every rank calls it) and returns the process exit code;
// usage errors throw UsageError, runtime failures RuntimeFailure (after saving what was measured).
#pragma once

#include "scalebench/process_group.h"
#include "src/cli/command_line.h"

namespace sb {

int run_bandwidth_command(const CommandLine& command_line, ProcessGroup& group);
int run_topo_command_line(const CommandLine& command_line, ProcessGroup& group);
int run_list_command(const CommandLine& command_line, ProcessGroup& group);
int run_train_command(const CommandLine& command_line, ProcessGroup& group);
int run_compare_command(const CommandLine& command_line, ProcessGroup& group);
int run_report_command(const CommandLine& command_line, ProcessGroup& group);
int run_maxbatch_command(const CommandLine& command_line, ProcessGroup& group);
int run_suite_command(const CommandLine& command_line, ProcessGroup& group);
int run_plan_command(const CommandLine& command_line, ProcessGroup& group);

// Parses, agrees and dispatches; prints usage and runtime errors as one line. Returns the exit code.
int run_scalebench(ProcessGroup& group, int argc, char** argv);

}  // namespace sb
