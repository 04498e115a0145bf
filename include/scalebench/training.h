// The data-parallel trainer (ARCHITECTURE.md step 7); its result model is result.h. One job runs, in order, the
// phases asked for:
//   solo  every rank trains alone, no communication: X(1) of every GPU (stragglers show);
//   comm  the gradient buckets of one step all-reduced back to back, no compute: pure communication time
//         and bus bandwidth at the real message sizes;
//   dp    data-parallel steps: each bucket all-reduced (averaged) on a communication stream the moment its
//         last gradient is written, overlapping the rest of the backward pass, then the optimizer: X(N).
// Every phase starts from the same initial weights and optimizer state. Step times are device time between
// events on the compute stream (CUDA events on GPUs), warm-up steps excluded, every sample kept.
#pragma once

#include <functional>
#include <string>

#include "scalebench/communicator.h"
#include "scalebench/device.h"
#include "scalebench/precision.h"
#include "scalebench/process_group.h"
#include "scalebench/result.h"

namespace sb {

// Collective. Runs the phases and --check, appending to `report` as results arrive; `on_phase_done` is called
// on every rank after each phase (rank 0 prints it). Throws UsageError for bad options (the same on every
// rank) and RuntimeFailure for out-of-memory, a non-finite loss or a timeout, agreed across ranks.
void run_training(const TrainOptions& options, ProcessGroup& group, Device& device, Communicator& communicator,
                  TrainingReport& report, const std::function<void(const std::string& phase)>& on_phase_done);

// Datasheet dense tensor peak (TFLOP/s) of a device name at a precision; 0 when unknown.
double peak_tflops(const std::string& device_name, Precision precision);

}  // namespace sb
