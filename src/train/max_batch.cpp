// The largest batch that trains: measured capacity, planned prediction, verification by training
// (include/scalebench/max_batch.h).
#include "scalebench/max_batch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "scalebench/allocation_budget.h"
#include "scalebench/error.h"
#include "src/train/dp_phase.h"
#include "src/train/gradient_reducer.h"
#include "src/train/phase_steps.h"
#include "src/train/replica.h"

namespace sb {
namespace {

// cudaMalloc hands out whole 2 MiB pages: the arena and the optimizer's state may each take up to one more.
constexpr uint64_t kGranularityMargin = 4ull << 20;

uint64_t bytes_less(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

// Collective: the smallest of every rank's value.
uint64_t minimum_over_ranks(ProcessGroup& group, uint64_t mine) {
  int64_t negated = -static_cast<int64_t>(mine);
  group.allreduce_max(&negated, 1);
  return static_cast<uint64_t>(-negated);
}

// NCCL connects lazily: its buffers appear with the first collectives. A bucket-sized all-reduce and a
// barrier bring them up before anything is measured.
void warm_up_communicator(Device& device, Communicator& communicator, uint64_t bucket_bytes) {
  if (communicator.size() < 2) return;
  const size_t count = static_cast<size_t>(bucket_bytes / sizeof(float));
  void* buffer = communicator.allocate_buffer(device, count * sizeof(float));
  StreamHandle stream = device.create_stream();
  communicator.all_reduce(buffer, buffer, count, DType::kFloat32, ReduceOp::kSum, stream);
  communicator.barrier(stream);
  communicator.wait(stream, "maxbatch's warm-up all-reduce");
  device.destroy_stream(stream);
  communicator.release_buffer(device, buffer);
}

// zero3 with its parameters in blocks: each unit is gathered out of the ranks' shards before its use, which a rank
// alone cannot do; the steps run with a reducer, as the dp phase runs them.
void train_with_gathers(Replica& replica, const MaxBatchOptions& options, Device& device, Communicator& communicator,
                        DataParallelStrategy strategy, int steps) {
  GradientReducer reducer(device, communicator, *replica.executor, DType::kFloat32, true, false, nullptr,
                          EmbeddingGradMode::kAuto, nullptr, BufferRegistration::kNone, strategy);
  for (int step = 1; step <= steps; ++step) enqueue_dp_step(replica, reducer, options.optimizer, step);
  reducer.wait_and_time("maxbatch's verifying steps");
}

// Trains `steps` steps at `batch` without the capacity check, so that the allocation itself answers.
void train_at(const ReplicaOptions& base, const MaxBatchOptions& options, ProcessGroup& group, Device& device,
              Communicator& communicator, int64_t batch, int steps) {
  ReplicaOptions replica_options = base;
  replica_options.batch = batch;
  replica_options.check_capacity = false;
  std::unique_ptr<Replica> replica;
  std::string error;
  bool out_of_memory = false;
  try {
    replica = build_replica(replica_options, device, options.seed, group.rank() * batch, options.seed + 1000);
    // zero1/zero2: the state of this rank's shard alone, as its dp phase holds it (each rank steps alone here: the
    // norm over its own gradients is as good as any for the memory).
    if (replica_options.optimizer_state_sharded) {
      replica->executor->set_optimizer_shard(
          parameter_shard(replica->plan, group.rank(), parameter_shards(replica_options)).ranges);
    }
  } catch (const OutOfMemory& failure) {
    error = failure.what();
    out_of_memory = true;
  } catch (const RuntimeFailure& failure) {
    error = failure.what();
  }
  if (group.size() > 1) {
    // Steps that gather (zero3's parameter blocks) wait for every rank: whoever could not allocate says so first, so
    // that no rank waits in a collective for one that has left (ranks may differ: a context or NCCL's buffers take
    // more on some). One small agreement per attempt, whatever the strategy.
    int64_t failed = error.empty() ? 0 : out_of_memory ? 1 : 2;
    group.allreduce_max(&failed, 1);
    if (error.empty() && failed > 0) {
      out_of_memory = failed == 1;
      error = (out_of_memory ? "another rank ran out of memory at batch " : "another rank failed to build batch ") +
              std::to_string(batch);
    }
  }
  if (!error.empty()) {
    if (out_of_memory) throw OutOfMemory(error);
    throw RuntimeFailure(error);
  }
  weight_losses_locally(*replica);  // each sub-step's counted rows (the loss's size, not the memory, depends on them)
  if (replica->plan.parameters_in_blocks && group.size() > 1) {  // the same plan on every rank
    train_with_gathers(*replica, options, device, communicator, replica_options.strategy, steps);
  } else {
    for (int step = 1; step <= steps; ++step) run_local_step(*replica, options.optimizer, step);
  }
  float loss = 0;
  replica->executor->read_tensor(replica->built.loss, &loss, sizeof loss);  // waits for the steps
  if (!std::isfinite(loss)) throw RuntimeFailure("non-finite loss at batch " + std::to_string(batch));
}

// Collective: one verification attempt, its outcome agreed by every rank.
MaxBatchAttempt attempt(const ReplicaOptions& base, const MaxBatchOptions& options, ProcessGroup& group,
                        Device& device, Communicator& communicator, int64_t batch, uint64_t needed) {
  MaxBatchAttempt result;
  result.batch = batch;
  result.needed_bytes = needed;
  std::string error;
  bool out_of_memory = false;
  try {
    train_at(base, options, group, device, communicator, batch, options.verify_steps);
  } catch (const OutOfMemory& failure) {
    error = failure.what();
    out_of_memory = true;
  } catch (const RuntimeFailure& failure) {
    error = failure.what();
  }
  int64_t outcome[2] = {error.empty() ? 0 : 1, !error.empty() && !out_of_memory ? 1 : 0};
  group.allreduce_max(outcome, 2);
  result.trained = outcome[0] == 0;
  result.out_of_memory = outcome[0] == 1 && outcome[1] == 0;
  const std::vector<std::string> errors = group.allgather_strings(error);
  for (size_t r = 0; r < errors.size() && result.error.empty(); ++r) {
    if (!errors[r].empty()) result.error = (errors.size() > 1 ? "rank " + std::to_string(r) + ": " : "") + errors[r];
  }
  return result;
}

// Restores the allocation budget when the search ends, however it ends.
class BudgetScope {
 public:
  explicit BudgetScope(uint64_t bytes) : previous_(allocation_budget()) {
    if (bytes > 0) set_allocation_budget(allocated_bytes() + bytes);
  }
  ~BudgetScope() { set_allocation_budget(previous_); }
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;

 private:
  uint64_t previous_;
};

void validate(const MaxBatchOptions& options, const Device& device) {
  if (precision_needs_cuda(options.precision) && device.kind() != DeviceKind::kCuda) {
    throw UsageError(std::string("--precision ") + precision_name(options.precision) +
                     " needs the cuda device (the cpu device is the fp32 reference)");
  }
  if (device.kind() != DeviceKind::kCuda && options.memory_bytes == 0) {
    throw UsageError("maxbatch on the cpu device needs --memory GiB: host memory is not a device budget");
  }
  if (options.verify_steps < 1) throw UsageError("--verify-steps must be at least 1");
  if (options.max_attempts < 2) throw UsageError("maxbatch needs at least 2 verification attempts");
  if (options.bucket_bytes == 0) throw UsageError("--bucket-mb must be positive");
  validate_optimizer(options.optimizer);
}

}  // namespace

MaxBatchResult find_max_batch(const MaxBatchOptions& options, ProcessGroup& group, Device& device,
                              Communicator& communicator) {
  validate(options, device);
  const Workload& workload = find_workload(options.workload);
  MaxBatchResult result;
  result.workload = workload.info().name;
  result.unit = workload.info().unit;
  result.batch_unit = workload.info().batch_unit_name();
  result.precision = precision_name(options.precision);
  result.nranks = group.size();
  result.reference_batch = workload.info().default_batch;
  const int64_t smallest = workload.info().min_batch;  // below it the graph cannot be built

  ReplicaOptions base;
  base.workload = options.workload;
  base.batch = result.reference_batch;
  base.scale = options.scale;
  base.precision = options.precision;
  base.recompute = options.recompute;
  base.bucket_bytes = options.bucket_bytes;
  base.optimizer_state_buffers = optimizer_state_buffers(options.optimizer.kind);
  base.ranks = group.size();  // the graph and the shards as `run` on these ranks has them
  base.strategy = options.strategy;
  base.optimizer_state_sharded = parameter_shards(base) > 1;
  if (base.optimizer_state_sharded) result.strategy = strategy_name(options.strategy);

  std::map<int64_t, uint64_t> needed_cache;
  auto needed_for = [&](int64_t batch) {
    auto found = needed_cache.find(batch);
    if (found != needed_cache.end()) return found->second;
    ReplicaOptions replica_options = base;
    replica_options.batch = batch;
    return needed_cache[batch] = needed_bytes(*plan_replica(replica_options), replica_options, device.kind());
  };
  {
    const std::unique_ptr<Replica> reference = plan_replica(base);
    result.units_per_sample = reference->built.units_per_step / static_cast<double>(base.batch);
  }

  // What the device holds before any replica: the context and the libraries, then NCCL's buffers.
  const bool cuda = device.kind() == DeviceKind::kCuda;
  const DeviceMemoryUsage at_start = device.memory_usage();
  warm_up_communicator(device, communicator, options.bucket_bytes);
  const DeviceMemoryUsage after_warm_up = device.memory_usage();
  if (cuda) {
    result.communication_bytes = bytes_less(at_start.free, after_warm_up.free);
    // A probe step at the smallest batch (1 for most workloads): what stays allocated afterwards (kernels loaded on
    // first use, library state) joins the context; what went away with the replica beyond its counted buffers is
    // the outside-plan cost of a replica.
    uint64_t during_free = 0, charged = 0;
    std::optional<std::string> error;
    try {
      train_at(base, options, group, device, communicator, smallest, 1);  // loads everything once
      ReplicaOptions probe = base;
      probe.batch = smallest;
      probe.check_capacity = false;
      std::unique_ptr<Replica> replica = build_replica(probe, device, options.seed, group.rank(), options.seed + 1000);
      weight_losses_locally(*replica);
      run_local_step(*replica, options.optimizer, 1);
      float loss = 0;
      replica->executor->read_tensor(replica->built.loss, &loss, sizeof loss);
      during_free = device.memory_usage().free;
      charged = allocated_bytes();
    } catch (const RuntimeFailure& failure) {
      error = "the batch-" + std::to_string(smallest) + " probe step failed: " + failure.what();
    }
    agree_or_fail(group, error);
    const DeviceMemoryUsage after_probe = device.memory_usage();
    result.outside_plan_bytes = bytes_less(bytes_less(after_probe.free, during_free), charged);
    result.context_bytes = bytes_less(after_probe.total - after_probe.free, result.communication_bytes);
  }
  const uint64_t held = result.context_bytes + result.communication_bytes + result.outside_plan_bytes +
                        (cuda ? kGranularityMargin : 0);
  if (options.memory_bytes > 0) {
    result.device_total = options.memory_bytes;
    result.budget_enforced = true;
    result.capacity_bytes = bytes_less(options.memory_bytes, held);
  } else {
    result.device_total = after_warm_up.total;
    result.capacity_bytes = bytes_less(device.memory_usage().free, result.outside_plan_bytes + kGranularityMargin);
  }
  result.capacity_bytes = minimum_over_ranks(group, result.capacity_bytes);

  // The prediction: the largest batch whose plan fits, searched up to a power-of-two multiple of the reference.
  int64_t upper = std::max<int64_t>(result.reference_batch, 1);
  while (upper < (int64_t{1} << 24) && needed_for(upper) <= result.capacity_bytes) upper *= 2;
  result.predicted = largest_batch_that_fits(needed_for, result.capacity_bytes, upper, smallest);
  if (result.predicted > 0) {
    ReplicaOptions predicted = base;
    predicted.batch = result.predicted;
    const std::unique_ptr<Replica> replica = plan_replica(predicted);
    result.predicted_bytes = needed_bytes(*replica, predicted, device.kind());
    result.categories = plan_categories(replica->graph, replica->plan);
    result.executor_bytes = cuda ? cuda_outside_plan_bytes(replica->graph) : 0;
    result.gradient_shard_bytes = needed_gradient_shard_bytes(*replica, predicted);
    result.parameter_shard_bytes = needed_parameter_shard_bytes(*replica, predicted);
    result.optimizer_state_bytes = result.predicted_bytes - replica->plan.total_bytes - result.executor_bytes -
                                   result.gradient_shard_bytes - result.parameter_shard_bytes;
  }
  if (!options.verify) return result;

  // The verification: from the prediction, one batch up; then galloping away from the prediction and
  // bisecting, until a batch trains and the one above it runs out of memory.
  BudgetScope budget(result.budget_enforced ? result.capacity_bytes : 0);
  result.verified_ran = true;
  const int64_t never = std::numeric_limits<int64_t>::max();
  int64_t trained = 0, failed = never, stride = 1;
  int64_t batch = std::max<int64_t>(result.predicted, smallest);
  // A batch trains and the next runs out of memory, or already the workload's smallest batch does.
  auto answered = [&] { return failed == trained + 1 || (failed == smallest && trained == 0); };
  while (static_cast<int>(result.attempts.size()) < options.max_attempts) {
    result.attempts.push_back(attempt(base, options, group, device, communicator, batch, needed_for(batch)));
    const MaxBatchAttempt& last = result.attempts.back();
    if (!last.trained && !last.out_of_memory) {
      result.status = "failed";
      result.error = "batch " + std::to_string(batch) + " failed for another reason than memory: " + last.error;
      break;
    }
    if (last.trained) {
      trained = batch;
    } else {
      failed = batch;
    }
    if (answered()) break;
    if (failed == never) {
      batch = trained + stride;
      stride *= 2;
    } else if (trained == 0) {
      batch = std::max<int64_t>(smallest, failed - stride);
      stride *= 2;
    } else {
      batch = trained + (failed - trained) / 2;
    }
  }
  result.verified = trained;
  result.next_failed_cleanly = answered();
  if (result.status == "ok" && !result.next_failed_cleanly) {
    result.status = "failed";
    result.error = "no verified answer after " + std::to_string(result.attempts.size()) +
                   " attempts (trained up to " + std::to_string(trained) + ")";
  }
  return result;
}

double max_batch_prediction_error(const MaxBatchResult& result) {
  if (!result.verified_ran || result.verified == 0) return 0;
  return static_cast<double>(result.predicted - result.verified) / static_cast<double>(result.verified);
}

}  // namespace sb
