// The program's top level: parse, agree across ranks, dispatch, and turn errors into one line and an exit
// code (2 usage, 3 runtime, 4 failed check).
#include <cstdio>
#include <optional>

#include "scalebench/error.h"
#include "src/cli/commands.h"
#include "src/cli/session.h"
#include "src/cli/startup_watchdog.h"

namespace sb {
namespace {

void print_error(ProcessGroup& group, const std::string& message) {
  if (group.size() > 1) {
    std::fprintf(stderr, "scalebench: error: %s %s\n", diagnostic_prefix().c_str(), message.c_str());
  } else {
    std::fprintf(stderr, "scalebench: error: %s\n", message.c_str());
  }
  std::fflush(stderr);
}

}  // namespace

int run_scalebench(ProcessGroup& group, int argc, char** argv) {
  CommandLine command_line;
  std::optional<std::string> parse_error;
  try {
    command_line = parse_command_line(argc, argv);
  } catch (const UsageError& e) {
    parse_error = e.what();
  }
  try {
    startup_stage("the first agreement between ranks (every rank's command line checked)");
    agree_or_throw(group, parse_error);
    agree_on_configuration(group, command_line.canonical);
    end_startup_watchdog();
    group.set_timeout(command_line.common.timeout_seconds);
    if (command_line.help_requested) {
      if (group.rank() == 0) std::fputs(command_line.help_text.c_str(), stdout);
      return kExitOk;
    }
    if (command_line.command == "bandwidth") return run_bandwidth_command(command_line, group);
    if (command_line.command == "topo") return run_topo_command_line(command_line, group);
    if (command_line.command == "list") return run_list_command(command_line, group);
    if (command_line.command == "run") return run_train_command(command_line, group);
    if (command_line.command == "compare") return run_compare_command(command_line, group);
    if (command_line.command == "report") return run_report_command(command_line, group);
    if (command_line.command == "maxbatch") return run_maxbatch_command(command_line, group);
    if (command_line.command == "suite") return run_suite_command(command_line, group);
    if (command_line.command == "plan") return run_plan_command(command_line, group);
    throw UsageError("no command given (run 'scalebench --help')");
  } catch (const UsageError& e) {
    print_error(group, e.what());
    return kExitUsage;
  } catch (const RuntimeFailure& e) {
    print_error(group, e.what());
    return kExitRuntime;
  }
}

}  // namespace sb
