// The console's lines for --gpus-sweep (issue 29): the plan in the header, a line per point's phase as it
// finishes ("comm@2", "dp@2", "check@2"), and the curve as a table in the footer.
#pragma once

#include <cstdio>
#include <string>

#include "scalebench/result.h"

namespace sb {

// Whether `phase` names a sweep point's phase ("dp@2").
bool is_sweep_phase(const std::string& phase);
void print_sweep_plan(std::FILE* out, const TrainingReport& report);
void print_sweep_phase(std::FILE* out, const TrainingReport& report, const std::string& phase);
void print_sweep_curve(std::FILE* out, const TrainingReport& report);

}  // namespace sb
