// The flags of `scalebench plan` (src/plan/plan_command.cpp defines them on CLI11 and runs the command).
#pragma once

#include <string>
#include <vector>

#include "scalebench/plan.h"

namespace CLI {
class App;
}

namespace sb {

struct PlanCommandOptions {
  std::vector<std::string> workloads, gpus;  // one each for a prediction; lists for --table
  PlanRequest request;                       // the rest of a prediction's configuration
  bool no_overlap = false;
  bool table = false;
  bool validate = false;
  bool calibrate = false;
  bool fresh = false;  // --calibrate on the files alone
  bool markdown = false;
  std::vector<std::string> files;  // --validate / --calibrate: scalebench run --json files
  std::string calibration_path;    // "": the built-in calibration
  std::string pytorch_memory_path;  // "": the built-in PyTorch memory lines
  std::string out_path;            // --calibrate: where the new calibration goes ("" stdout)
};

// Adds the `plan` subcommand to the CLI11 app, writing into `options`.
void add_plan_command(CLI::App& app, PlanCommandOptions& options);

}  // namespace sb
