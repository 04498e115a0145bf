// --check, the data-parallel invariant: k steps on N ranks with batch b must leave the same weights as k
// steps on one rank with batch N·b (SGD with momentum: an update linear in the gradients, see dp_check.cpp). Both are built without dropout (their masks would differ by
// construction) from the same initial weights; rank r's data are samples r·b .. r·b + b - 1 of the
// synthetic dataset, the reference's all N·b of them with BatchNorm statistics over each rank's b samples
// (N statistics groups, GraphBuilder::set_batchnorm_groups), and the cross-entropies of the ranks are weighted
// by their share of the global row count. The comparison is of the updates, Δp = p_k - p_0:
// ||Δp(N) - Δp(1)|| / ||Δp(1)|| within a tolerance of the precision, and every rank's weights bit-identical.
#pragma once

#include "scalebench/communicator.h"
#include "scalebench/device.h"
#include "scalebench/training.h"
#include "src/train/replica.h"

namespace sb {

// Collective. The one-rank reference runs on rank 0 after the N-rank steps have freed their memory.
CheckRecord run_dp_check(const TrainOptions& options, const ReplicaOptions& replica_options, ProcessGroup& group,
                         Device& device, Communicator& communicator);

// The relative tolerance of the comparison at a precision and gradient wire type.
double check_tolerance(Precision precision, DType grad_dtype);

}  // namespace sb
