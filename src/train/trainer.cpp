// The trainer's phases (include/scalebench/training.h): one replica per rank, built once; solo, comm and dp
// run on it in turn, each from the initial weights, and --check builds its own after them.
#include <algorithm>
#include <map>

#include "scalebench/error.h"
#include "scalebench/fault.h"
#include "src/core/fault_injection.h"
#include "src/core/ops/shape_text.h"
#include "src/cpu/optimizer.h"
#include "scalebench/training.h"
#include "src/train/bucket_auto.h"
#include "src/train/comm_phase.h"
#include "src/train/dp_check.h"
#include "src/train/dp_phase.h"
#include "src/train/gradient_reducer.h"
#include "src/train/overlap_communicator.h"
#include "src/train/phase_steps.h"
#include "src/train/replica.h"
#include "src/train/step_graph.h"
#include "src/train/sub_steps.h"
#include "src/train/sweep_points.h"

namespace sb {
namespace {

void validate(const TrainOptions& options, const Device& device, int ranks) {
  if (options.steps < 1) throw UsageError("--steps must be at least 1");
  if (options.warmup_steps < 0) throw UsageError("--warmup must not be negative");
  if (options.min_time_seconds < 0) throw UsageError("--min-time must not be negative");
  if (options.bucket_bytes == 0) throw UsageError("--bucket-mb must be positive");
  if (precision_needs_cuda(options.precision) && device.kind() != DeviceKind::kCuda) {
    throw UsageError(std::string("--precision ") + precision_name(options.precision) +
                     " needs the cuda device (the cpu device is the fp32 reference)");
  }
  if (!options.solo && !options.comm && !options.dp && !options.check) throw UsageError("--phases selects no phase");
  // The sweep trains every size from one replica, whose parameters are laid out for the job's shards.
  const std::string sweep_refused = sweep_sizes_refusal(options.strategy, options.sweep_sizes, ranks);
  if (!sweep_refused.empty()) {
    throw UsageError("--gpus-sweep with " + sweep_refused);
  }
  if (shards_by_bucket(options.strategy) && options.bucket_auto) {
    throw UsageError(std::string("--bucket-mb auto with --strategy ") + strategy_name(options.strategy) +
                     ": its shards are the buckets' chunks, laid out when the graph is planned; give --bucket-mb a "
                     "size");
  }
  validate_optimizer(options.optimizer);
}

// The dp phases' memory per GPU (TrainingReport::dp_plan_bytes, dp_device_used_bytes), after the dp phase on every
// rank: the plan with the optimizer's state they held (one shard's where sharded), and what the device says is in
// use, the largest over the ranks.
void record_dp_memory(ProcessGroup& group, Device& device, const Replica& replica, ReplicaOptions options,
                      TrainingReport& report) {
  options.optimizer_state_sharded = parameter_shards(options) > 1;
  report.dp_plan_bytes = needed_bytes(replica, options, device.kind());
  report.dp_gradient_shard_bytes = needed_gradient_shard_bytes(replica, options);
  report.dp_parameter_shard_bytes = needed_parameter_shard_bytes(replica, options);
  // The CPU device answers its total as free (device.h): nothing measured there.
  const DeviceMemoryUsage usage = device.memory_usage();
  const int64_t used = device.kind() == DeviceKind::kCuda ? static_cast<int64_t>(usage.total - usage.free) : -1;
  const int64_t largest = group.max_across_ranks(used);
  if (largest >= 0) report.dp_device_used_bytes = static_cast<uint64_t>(largest);
}

std::vector<std::pair<std::string, double>> largest_first(const std::map<std::string, double>& totals) {
  std::vector<std::pair<std::string, double>> sorted(totals.begin(), totals.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return sorted;
}

// The profiled step's kSlowestNodes slowest nodes, slowest first (a node's time summed over its runs in the step:
// once per sub-step, and per repetition of a decode loop).
constexpr size_t kSlowestNodes = 15;
std::vector<TrainingReport::SlowNode> slowest_nodes(const Replica& replica, const std::vector<double>& node_ms) {
  std::vector<size_t> order(node_ms.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const size_t kept = std::min(kSlowestNodes, order.size());
  std::partial_sort(order.begin(), order.begin() + long(kept), order.end(),
                    [&](size_t a, size_t b) { return node_ms[a] > node_ms[b]; });
  std::vector<TrainingReport::SlowNode> slowest;
  for (size_t k = 0; k < kept; ++k) {
    const size_t i = order[k];
    const Node& node = replica.graph.nodes()[i];
    TrainingReport::SlowNode entry;
    entry.index = int64_t(i);
    entry.op = node.op + (node.backward ? " (backward)" : "");
    if (!node.outputs.empty()) {
      const TensorInfo& out = replica.graph.tensor(node.outputs[0]);
      entry.output = out.name;
      entry.shape = shape_text(out.shape);
    }
    entry.detail = replica.executor->node_detail(i);
    entry.ms = node_ms[i];
    slowest.push_back(std::move(entry));
  }
  return slowest;
}

// One more solo step timed node by node (each repetition of a decode loop included): where the time goes, by op
// category ("decode" for generation parts) and by op, with the host's time enqueueing those nodes by op, and the
// slowest nodes.
void profile_solo_step(Replica& replica, const TrainOptions& options, int64_t step, TrainingReport& report) {
  const SubStepProfile profile = profile_sub_steps(replica, options.optimizer, step);
  report.breakdown_ms = largest_first(profile.by_category);
  report.op_ms = largest_first(profile.by_op);
  report.profiled_host_ms = profile.host_ms;
  report.op_host_ms = largest_first(profile.host_by_op);
  report.slowest_nodes = slowest_nodes(replica, profile.node_ms);
}


}  // namespace

void run_training(const TrainOptions& options, ProcessGroup& group, Device& device, Communicator& communicator,
                  TrainingReport& report, const std::function<void(const std::string& phase)>& on_phase_done) {
  validate(options, device, group.size());
  const Workload& workload = find_workload(options.workload);
  ReplicaOptions replica_options;
  replica_options.workload = options.workload;
  replica_options.batch = options.batch > 0 ? options.batch : workload.info().default_batch;
  replica_options.scale = options.scale;
  replica_options.precision = options.precision;
  replica_options.recompute = options.recompute;
  replica_options.bucket_bytes = options.bucket_bytes;
  replica_options.optimizer_state_buffers = optimizer_state_buffers(options.optimizer.kind);
  replica_options.check_capacity = options.check_memory;
  replica_options.arena_memory = registrable_arena(communicator, device, options.grad_registration);
  replica_options.ranks = group.size();
  replica_options.embedding_grad = options.embedding_grad;
  replica_options.overlap = options.overlap;
  replica_options.strategy = options.strategy;
  // The solo phase updates every parameter first.
  replica_options.optimizer_state_sharded = parameter_shards(replica_options) > 1 && !options.solo;
  report.options = options;
  report.batch = replica_options.batch;
  report.unit = workload.info().unit;
  report.task = workload.info().task;
  report.nranks = group.size();
  const bool data_parallel = group.size() > 1;
  const uint64_t weight_seed = options.seed + 1000;

  if (options.solo || (data_parallel && (options.comm || options.dp))) {
    // zero2/zero3 may hold the gradients in blocks with a shard (GradientLayout). The solo phase then trains a replica
    // of its own with the gradient region whole, as ddp's solo phase does: on blocks every step would copy each
    // bucket into the shard, work the data-parallel steps do not do (their reduce-scatters fill it), and X(1) would
    // count it. Its graph is the data-parallel one (a tied table kept whole: dense); it is freed before the
    // data-parallel phases' replica is built, which then holds one shard's state from the start.
    ReplicaOptions solo_options = replica_options;
    const bool separate_solo = options.solo && data_parallel && (options.comm || options.dp) &&
                               shards_by_bucket(options.strategy) &&
                               plan_replica(replica_options)->plan.gradients_in_blocks;
    report.solo_own_replica = separate_solo;
    if (separate_solo) {
      solo_options.gradient_layout = GradientLayout::kWhole;
      solo_options.embedding_grad = EmbeddingGradMode::kDense;
      replica_options.optimizer_state_sharded = true;
    }
    auto build = [&](const ReplicaOptions& built_options, const char* what) {
      set_progress(what);
      std::unique_ptr<Replica> built;
      std::optional<std::string> error;
      try {
        built = build_replica(built_options, device, options.seed, group.rank() * built_options.batch, weight_seed);
      } catch (const RuntimeFailure& e) {
        error = e.what();
      }
      agree_or_fail(group, error);
      return built;
    };
    std::unique_ptr<Replica> replica =
        build(options.solo ? solo_options : replica_options,
              separate_solo ? "building the solo phase's replica (the gradient region whole)" : "building the replica");
    auto executor = [&replica]() -> Executor& { return *replica->executor; };
    report.parameters = replica->graph.parameter_count();
    // Each rank credits what its own batch holds (other samples: other lengths); the report carries every rank's
    // count and their mean per GPU, so totals are what the batches held, not rank 0's count N times.
    {
      const double mine = replica->built.units_per_step;
      report.units_per_step_by_rank.assign(static_cast<size_t>(group.size()), 0.0);
      group.allgather(&mine, report.units_per_step_by_rank.data(), sizeof mine);
      double sum = 0;
      for (double units : report.units_per_step_by_rank) sum += units;
      report.units_per_step = sum / static_cast<double>(group.size());
    }
    for (const SubStep& sub_step : replica->graph.sub_steps()) report.sub_steps.push_back(sub_step.name);
    report.train_flops_per_step = step_matmul_flops(replica->graph);
    report.plan_bytes = needed_bytes(*replica, options.solo ? solo_options : replica_options, device.kind());
    report.weights_identical_at_start = same_on_every_rank(group, parameter_checksum(*replica));
    if (!report.weights_identical_at_start) {
      throw RuntimeFailure("the ranks' initial weights differ (checksums of the parameters disagree)");
    }
    // Solo steps marked as the dp step's timeline is (forward done, last node done), for the decomposition of
    // 1 − E (efficiency_decomposition.h); marks 0 and 1 are run_steps' own, around the step.
    const LocalStepMarks solo_marks{2, 3};
    auto train_step = [&](int64_t step) { run_local_step(*replica, options.optimizer, step, &solo_marks); };
    auto solo_timeline = [&](RankPhase& phase, bool timed) {
      if (!timed) return;
      phase.forward_done_ms.push_back(executor().elapsed_ms(0, solo_marks.forward_done));
      phase.nodes_done_ms.push_back(executor().elapsed_ms(0, solo_marks.nodes_done));
      phase.step_done_ms.push_back(executor().elapsed_ms(0, 1));
    };

    if (options.solo) {
      weight_losses_by_global_rows(group, *replica, false);
      StepGraph graph(group, executor(), options.cuda_graph, "solo", std::nullopt);
      record_phase(
          group, report.solo, "solo",
          [&] { return run_steps(group, *replica, options, "solo", graph, train_step, solo_timeline); },
          [&](bool complete) {
            report.solo.cuda_graph = graph.status();
            if (complete && options.profile) {
              profile_solo_step(*replica, options, options.warmup_steps + options.steps + 1, report);
            }
          },
          on_phase_done);
    }
    if (data_parallel && (options.comm || options.dp)) {
      if (separate_solo) {
        const size_t solo_nodes = replica->graph.nodes().size();
        replica.reset();
        replica = build(replica_options, "building the data-parallel replica (the gradients in blocks, a shard kept)");
        // zero3's parameters in blocks: the backward copies' casts, which only the dp step runs (its dilation term).
        report.dp_only_nodes = static_cast<int64_t>(replica->graph.nodes().size() - solo_nodes);
      }
      std::vector<GradientBucket> chosen_buckets = executor().plan().buckets;
      if (options.bucket_auto) {
        set_progress("choosing the bucket size (--bucket-mb auto)");
        report.bucket_auto =
            choose_buckets_by_measurement(group, device, communicator, *replica, options, options.bucket_bytes);
        if (report.bucket_auto->kept_default_because.empty()) {
          const uint64_t chosen = report.bucket_auto->chosen_bytes;
          chosen_buckets = cut_gradient_buckets(replica->graph, executor().plan(), chosen);
          report.options.bucket_bytes = chosen;
          replica_options.bucket_bytes = chosen;  // --check's replica reduces in the same buckets
        }
      }
      std::unique_ptr<Communicator> during_backward =
          make_overlap_communicator(options, communicator, group, device, &report.overlap_ctas_not_applied);
      const std::unique_ptr<GradientReducer> made =
          make_gradient_reducer(options, device, communicator, executor(), &chosen_buckets, during_backward.get());
      GradientReducer& reducer = *made;
      report.grad_registration = reducer.registration();
      report.parameters_updated_per_rank = reducer.shard().count;
      report.all_gather_bytes = reducer.all_gather_bytes_per_step();
      report.all_gathers_per_step = reducer.all_gathers_per_step();
      report.buckets_reduce_scattered = reducer.reduce_scatters();
      report.optimizer_state_bytes_per_rank =
          cpu::optimizer_state_bytes(optimizer_state_buffers(options.optimizer.kind), reducer.shard().count);
      for (size_t b = 0; b < reducer.bucket_count(); ++b) {
        report.bucket_bytes.push_back(reducer.wire_bytes(b));
        report.reduction_kinds.push_back(reducer.reduction_kind(b));
      }
      report.embedding_grad = reducer.embedding_grad();
      // --gpus-sweep: the sizes between 1 (the solo phase) and N (the phases below) first, each from the initial
      // weights, in the same buckets.
      for (size_t i = 0; i < options.sweep_sizes.size(); ++i) {
        if (options.sweep_sizes[i] <= 1 || options.sweep_sizes[i] >= group.size()) continue;
        report.sweep.emplace_back();
        run_sweep_point(options, i, group, device, communicator.backend(), *replica, weight_seed, chosen_buckets,
                        report.sweep.back(), on_phase_done);
      }
      if (options.comm) {
        record_phase(
            group, report.comm, "comm", [&] { return run_comm_phase(group, reducer, options); }, [](bool) {},
            on_phase_done);
      }
      if (options.dp) {
        restart_from_initial_weights(*replica, weight_seed);
        weight_losses_by_global_rows(group, *replica, true);
        std::optional<std::string> no_capture;
        if (!communicator.supports_graph_capture()) {
          no_capture = std::string("the ") + backend_name(communicator.backend()) +
                       " backend's all-reduces cannot be captured into a graph";
        }
        StepGraph graph(group, executor(), options.cuda_graph, "dp", no_capture);
        // Stopped or not, every rank has finished the same steps, so the weights still compare.
        record_phase(
            group, report.dp, "dp", [&] { return run_dp_phase(group, *replica, reducer, options, graph); },
            [&](bool) {
              report.dp.cuda_graph = graph.status();
              reducer.gather_whole_parameters("the zero3 gathers after the dp phase");
              record_dp_memory(group, device, *replica, replica_options, report);
              report.weights_checksum_after_dp = parameter_checksum(*replica, &group);
              report.weights_identical_after_dp = same_on_every_rank(group, report.weights_checksum_after_dp);
            },
            on_phase_done);
      }
    }
    if (const auto scale = executor().loss_scale_state()) {
      report.loss_scaled = true;
      report.loss_scale = scale->scale;
      report.skipped_steps = scale->skipped_steps;
    }
  }
  if (options.check) {
    set_progress("check");
    report.check = run_dp_check(options, replica_options, group, device, communicator);
    on_phase_done("check");
    for (SweepPoint& point : report.sweep) {
      check_sweep_point(options, replica_options, group, device, communicator.backend(), point, on_phase_done);
    }
  }
}

}  // namespace sb
