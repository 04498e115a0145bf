// `--bucket-mb auto` on a job (issue 26): measures what it needs and chooses (the model: bucket_choice.h).
#pragma once

#include "scalebench/communicator.h"
#include "scalebench/device.h"
#include "scalebench/process_group.h"
#include "scalebench/result.h"
#include "src/train/replica.h"

namespace sb {

// Collective. One profiled training step gives each node's finish time (the largest across ranks, so every rank
// predicts alike); an all-reduce sweep on the job's communicator (fp32 or bf16 as the gradients travel, 3 warm-up
// and 7 timed calls per size, the median, the largest across ranks) gives the cost per size; the size with the
// shortest predicted tail is chosen, the same on every rank. A step of sub-steps keeps `default_bytes` and says
// why. The sweep's buffer (at most 64 MiB: larger sizes extrapolate the measured bandwidth) is freed after it.
BucketAuto choose_buckets_by_measurement(ProcessGroup& group, Device& device, Communicator& communicator,
                                         Replica& replica, const TrainOptions& options, uint64_t default_bytes);

}  // namespace sb
