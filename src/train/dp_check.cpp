// The data-parallel invariant (src/train/dp_check.h).
#include "src/train/dp_check.h"

#include <algorithm>
#include <cmath>

#include "scalebench/error.h"
#include "src/train/generation_replay.h"
#include "src/train/gradient_reducer.h"
#include "src/train/overlap_communicator.h"
#include "src/train/phase_steps.h"

namespace sb {
namespace {

// The check's update rule: SGD with momentum, no weight decay, no clipping. Its update is linear in the
// gradients, so the relative difference of the updates is that of the summed gradients. The Adam family
// divides each gradient by its own running magnitude: an element whose gradient is rounding noise moves by
// a full ±lr either way, which on bf16 GPUs made 56% of the update differ with nothing wrong (measured,
// bert_base, 2 x H200). Every rank's weights under the run's own optimizer are compared bit for bit after dp.
OptimizerSettings check_optimizer() {
  OptimizerSettings settings = default_optimizer(OptimizerKind::kSgdMomentum);
  settings.learning_rate = 1e-3f;
  settings.weight_decay = 0;
  settings.max_grad_norm = 0;
  return settings;
}

// k optimizer steps on a replica, its gradients averaged across `group` when a reducer is given. With a generation
// in the step, each generating sub-step's words are appended to `generated` (N ranks), or the reference follows
// `to_follow` (rank 0: every rank's words, rank by rank, per step and generating sub-step) word by word, counting
// into `replay` (src/train/generation_replay.h).
void train_steps(Replica& replica, const TrainOptions& options, GradientReducer* reducer,
                 std::vector<int32_t>* generated, const std::vector<std::vector<int32_t>>* to_follow,
                 ReplayCount* replay) {
  Executor& executor = *replica.executor;
  size_t generation = 0;
  auto parts = [&](size_t k) {
    if (reducer != nullptr) reducer->gather_for_parts(k);
    GenerationTensors g;
    if (!find_generation(replica.graph, k, g)) {
      run_sub_step_parts(executor, k);
      return;
    }
    if (to_follow != nullptr) {
      replay_generation(executor, k, g, to_follow->at(generation++), *replay);
      return;
    }
    run_sub_step_parts(executor, k);
    const size_t at = generated->size();
    generated->resize(at + static_cast<size_t>(replica.graph.tensor(g.ids).elements()));
    executor.read_tensor(g.ids, generated->data() + at, replica.graph.tensor(g.ids).bytes());
  };
  for (int step = 1; step <= options.check_steps; ++step) {
    executor.set_random_stream(options.seed, static_cast<uint64_t>(step));
    if (reducer != nullptr) {
      for_each_sub_step(
          replica, [&](size_t k) { reducer->run_nodes_and_reduce(k); },
          [&](size_t k, int64_t optimizer_step) { reducer->update(check_optimizer(), optimizer_step, k); }, step,
          parts);
      reducer->wait_and_time("the --check all-reduce of step " + std::to_string(step));
    } else {
      for_each_sub_step(
          replica,
          [&](size_t) { executor.run_nodes(replica.graph.training_begin(), replica.graph.nodes().size()); },
          [&](size_t, int64_t optimizer_step) { executor.optimizer_step(check_optimizer(), optimizer_step); }, step,
          parts);
    }
  }
  // zero3's steps leave the other ranks' chunks stale (the next step's gathers would renew them): the weights compared
  // are gathered once, after the last step.
  if (reducer != nullptr) reducer->gather_whole_parameters("the zero3 gathers after the --check steps");
}

// Every rank's generated words (each rank's `mine`, equal sizes) regrouped per generation: rank 0's rows, then
// rank 1's..., as the one-rank reference holds them.
std::vector<std::vector<int32_t>> words_to_follow(ProcessGroup& group, const std::vector<int32_t>& mine,
                                                  int64_t words_per_generation) {
  std::vector<int32_t> all(mine.size() * static_cast<size_t>(group.size()));
  if (!mine.empty()) group.allgather(mine.data(), all.data(), mine.size() * sizeof(int32_t));
  const size_t generations = words_per_generation > 0 ? mine.size() / static_cast<size_t>(words_per_generation) : 0;
  std::vector<std::vector<int32_t>> follow(generations);
  for (size_t g = 0; g < generations; ++g) {
    for (int rank = 0; rank < group.size(); ++rank) {
      const int32_t* from = all.data() + rank * mine.size() + g * static_cast<size_t>(words_per_generation);
      follow[g].insert(follow[g].end(), from, from + words_per_generation);
    }
  }
  return follow;
}

}  // namespace

double check_tolerance(Precision precision, DType grad_dtype) {
  // fp32: summation order only (one GEMM over N·b rows against N over b, then an average). bf16 roundings
  // of activations differ with the GEMM shapes; a bf16 wire rounds the gradients themselves.
  double tolerance = precision == Precision::kFp32 ? 1e-3 : precision == Precision::kTf32 ? 1e-2 : 5e-2;
  if (grad_dtype == DType::kBFloat16) tolerance = std::max(tolerance, 5e-2);
  return tolerance;
}

CheckRecord run_dp_check(const TrainOptions& options, const ReplicaOptions& replica_options, ProcessGroup& group,
                         Device& device, Communicator& communicator) {
  if (options.check_steps < 1) throw UsageError("--check-steps must be at least 1");
  ReplicaOptions ranks_options = replica_options;
  ranks_options.dropout = false;
  // BatchNorm's fused ReLU/LeakyReLU become the identity in both runs. The N ranks and the one rank sum in
  // other orders, so their weights part by rounding after the first step; near-zero activations then fall on
  // either side of the kink, and in a BatchNorm network the gradients are small residues of cancelling sums
  // that one flipped slope moves by percents. yolov3 tiny, 2 ranks x 2 vs 1 x 4, after steps 1, 2, 3:
  // 7e-8, 3e-6, 1.4e-3 (seed 3: 8e-3; width 2: up to 0.13); 3e-7 after 3 with the activations linear.
  ranks_options.linear_batchnorm_activations = true;
  const uint64_t weight_seed = options.seed + 1000;
  CheckRecord record;
  record.ran = true;
  record.steps = options.check_steps;
  record.tolerance = check_tolerance(options.precision, options.grad_dtype);

  std::vector<float> initial, data_parallel;
  std::vector<int32_t> generated;  // this rank's generated words, per step and generating sub-step
  int64_t words_per_generation = 0;
  {
    std::unique_ptr<Replica> replica;
    std::optional<std::string> error;
    try {
      replica = build_replica(ranks_options, device, options.seed, group.rank() * ranks_options.batch, weight_seed);
    } catch (const RuntimeFailure& e) {
      error = std::string("--check: ") + e.what();
    }
    agree_or_fail(group, error);
    initial = read_parameters(*replica);
    record.linear_batchnorm_activations = replica->linear_batchnorm_activations;
    weight_losses_by_global_rows(group, *replica, true);
    std::unique_ptr<Communicator> during_backward;
    std::unique_ptr<GradientReducer> reducer;
    if (group.size() > 1) {
      during_backward = make_overlap_communicator(options, communicator, group, device, nullptr);
      reducer = make_gradient_reducer(options, device, communicator, *replica->executor, nullptr,
                                      during_backward.get());
    }
    train_steps(*replica, options, reducer.get(), &generated, nullptr, nullptr);
    GenerationTensors g;
    for (size_t k = 0; k < replica->graph.sub_step_count(); ++k) {
      if (find_generation(replica->graph, k, g)) words_per_generation = replica->graph.tensor(g.ids).elements();
    }
    data_parallel = read_parameters(*replica, &group);
    record.ranks_identical = same_on_every_rank(group, parameter_checksum(*replica, &group));
  }

  const std::vector<std::vector<int32_t>> follow = words_to_follow(group, generated, words_per_generation);
  std::optional<std::string> error;
  ReplayCount replay;
  if (group.rank() == 0) {
    try {
      ReplicaOptions reference_options = ranks_options;
      reference_options.batch = ranks_options.batch * group.size();
      // Each rank's BatchNorm normalises over its own b samples (no SyncBN, as PyTorch DDP): the reference's
      // over each rank's b of its N·b, not over all of them. Graphs without BatchNorm are unaffected.
      reference_options.batchnorm_groups = group.size();
      reference_options.optimizer_state_sharded = false;  // one rank: its optimizer updates every parameter
      std::unique_ptr<Replica> reference = build_replica(reference_options, device, options.seed, 0, weight_seed);
      weight_losses_locally(*reference);
      train_steps(*reference, options, nullptr, nullptr, &follow, &replay);
      const std::vector<float> single = read_parameters(*reference);
      double difference = 0, update = 0;
      for (size_t i = 0; i < single.size(); ++i) {
        const double d = static_cast<double>(data_parallel[i]) - single[i];
        const double u = static_cast<double>(single[i]) - initial[i];
        difference += d * d;
        update += u * u;
        record.max_abs_difference = std::max(record.max_abs_difference, std::fabs(d));
      }
      record.relative_error = update > 0 ? std::sqrt(difference / update) : std::sqrt(difference);
    } catch (const RuntimeFailure& e) {
      error = std::string("--check reference (one rank, batch ") +
              std::to_string(ranks_options.batch * group.size()) + "): " + e.what();
    }
  }
  agree_or_fail(group, error);
  double shared[5] = {record.relative_error, record.max_abs_difference, static_cast<double>(replay.words),
                       static_cast<double>(replay.flips), replay.worst_margin};
  group.broadcast(shared, sizeof shared, 0);
  record.relative_error = shared[0];
  record.max_abs_difference = shared[1];
  record.generated_words = static_cast<int64_t>(shared[2]);
  record.generation_flips = static_cast<int64_t>(shared[3]);
  record.generation_worst_margin = shared[4];
  // A flipped word is a rounding tie only when its two logits are within the check's tolerance of each other,
  // relative to the row's largest logit; anything wider is a generation that differs between the runs.
  record.passed = record.ranks_identical && std::isfinite(record.relative_error) &&
                  record.relative_error <= record.tolerance && record.generation_worst_margin <= record.tolerance;
  return record;
}

}  // namespace sb
