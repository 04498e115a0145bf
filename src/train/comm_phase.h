// The comm phase: one step's gradient buckets all-reduced back to back on the communication stream, no compute:
// pure communication time and bus bandwidth at the real message sizes.
#pragma once

#include <string>

#include "scalebench/process_group.h"
#include "scalebench/training.h"
#include "src/train/gradient_reducer.h"

namespace sb {

// Collective over the reducer's communicator, its step boundaries agreed over `boundary` (phase_steps.h: every
// rank of the job at a --gpus-sweep point, named "comm@k").
RankPhase run_comm_phase(ProcessGroup& boundary, GradientReducer& reducer, const TrainOptions& options,
                         const std::string& phase = "comm");

}  // namespace sb
