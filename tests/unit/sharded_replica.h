// One rank of a sharded strategy's layout on the CPU device, trained alone (test_gradient_blocks.cpp,
// test_parameter_blocks_training.cpp): tiny replicas at batch 2 laid out for two shards, with 4 KiB buckets.
#pragma once

#include <memory>
#include <vector>

#include "scalebench/optimizer.h"
#include "src/train/phase_steps.h"
#include "src/train/replica.h"
#include "src/train/sub_steps.h"

namespace sb::test {

inline std::unique_ptr<Replica> sharded_replica(const char* workload, DataParallelStrategy strategy,
                                                GradientLayout layout) {
  ReplicaOptions options;
  options.workload = workload;
  options.batch = 2;
  options.scale = WorkloadScale::kTiny;
  options.bucket_bytes = 4096;
  options.ranks = 2;  // laid out for two shards; trained here by one rank alone
  options.strategy = strategy;
  options.gradient_layout = layout;
  static const std::unique_ptr<Device> device = make_cpu_device();
  return build_replica(options, *device, 1, 0, 7);
}

// The weights after three AdamW steps (clipped at `max_grad_norm` when positive) on this rank alone.
inline std::vector<float> trained_alone(Replica& replica, double max_grad_norm) {
  OptimizerSettings settings = default_optimizer(OptimizerKind::kAdamW);
  settings.max_grad_norm = max_grad_norm;
  weight_losses_locally(replica);
  for (int step = 1; step <= 3; ++step) {
    replica.executor->set_random_stream(3, static_cast<uint64_t>(step));
    run_local_step(replica, settings, step);
  }
  return read_parameters(replica);
}

}  // namespace sb::test
