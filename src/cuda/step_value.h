// A per-step scalar that a kernel reads: dropout's Philox offset, the optimizer's step count (bias correction),
// Mask R-CNN's sampling step. In an eager step it is the host's value, passed as a kernel argument as always. A
// step captured into a CUDA graph (issue 25) replays the same kernel arguments every step, so the value that
// changes must come from the device: the value at capture plus `per_step` times the replays since capture, a
// counter on the device that the graph's last node advances. One code path either way: `resolve()`.
#pragma once

#include <cstdint>

#include "scalebench/host_device.h"

namespace sb::cuda {

struct StepValue {
  int64_t at_capture = 0;            // the host's value (eager), or its value in the captured step
  int64_t per_step = 0;              // how much it grows from one training step to the next
  const int64_t* replays = nullptr;  // device: replays since capture; null in an eager step

  // On the device only where `replays` is set (it is device memory); on the host for an eager value.
  SB_HOST_DEVICE int64_t resolve() const { return replays == nullptr ? at_capture : at_capture + per_step * *replays; }
};

// An eager step's value: what the kernels got before graphs existed.
inline StepValue eager_value(int64_t value) { return StepValue{value, 0, nullptr}; }

}  // namespace sb::cuda
