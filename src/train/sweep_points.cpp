// --gpus-sweep's points (src/train/sweep_points.h).
#include "src/train/sweep_points.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>

#include "scalebench/error.h"
#include "scalebench/fault.h"
#include "src/train/comm_phase.h"
#include "src/train/dp_check.h"
#include "src/train/dp_phase.h"
#include "src/train/gradient_reducer.h"
#include "src/train/overlap_communicator.h"
#include "src/train/phase_steps.h"
#include "src/train/step_graph.h"

namespace sb {
namespace {

// This rank's team at one point: its group's index and its place in the group, or nothing (idle at this k).
struct Team {
  std::unique_ptr<ProcessGroup> group;
  std::unique_ptr<Communicator> communicator;
  std::unique_ptr<Communicator> during_backward;  // --overlap-ctas (nullptr: off, or not nccl)
};

// Collective over `world`: splits off the groups of `groups` and makes each a communicator of `backend`; a rank
// in no group gets an empty Team. A failure on any rank (a communicator that cannot be made) fails every rank.
Team form_team(ProcessGroup& world, Device& device, Backend backend, const std::vector<SweepGroup>& groups,
               const std::string& what) {
  set_progress("forming " + what);
  int color = -1, key = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto found = std::find(groups[g].ranks.begin(), groups[g].ranks.end(), world.rank());
    if (found != groups[g].ranks.end()) color = int(g), key = int(found - groups[g].ranks.begin());
  }
  Team team;
  team.group = world.split(color, key);
  std::optional<std::string> error;
  if (team.group) {
    try {
      CommunicatorOptions options;
      options.timeout_seconds = world.timeout();
      team.communicator = make_communicator(backend, *team.group, device, options);
    } catch (const std::exception& e) {  // UsageError too: made on some ranks only, it is a runtime fault
      error = what + ": " + e.what();
    }
  }
  agree_or_fail(world, error);
  return team;
}

std::string point_name(const char* phase, int gpus) { return std::string(phase) + "@" + std::to_string(gpus); }

// The point's verdict: a failing group's record, else the group with the largest relative error.
CheckRecord worst_check(const std::vector<CheckRecord>& groups) {
  CheckRecord worst = groups.front();
  for (const CheckRecord& check : groups) {
    const bool fails = !check.passed || !check.ranks_identical;
    const bool worst_fails = !worst.passed || !worst.ranks_identical;
    if ((fails && !worst_fails) || (fails == worst_fails && check.relative_error > worst.relative_error)) {
      worst = check;
    }
  }
  return worst;
}

}  // namespace

void run_sweep_point(const TrainOptions& options, size_t index, ProcessGroup& world, Device& device,
                     Backend backend, Replica& replica, uint64_t weight_seed,
                     const std::vector<GradientBucket>& buckets, SweepPoint& point,
                     const std::function<void(const std::string& phase)>& on_phase_done) {
  point.gpus = options.sweep_sizes.at(index);
  point.groups = options.sweep_groups.at(index);
  const std::string comm_name = point_name("comm", point.gpus), dp_name = point_name("dp", point.gpus);
  Team team = form_team(world, device, backend, point.groups, "the " + std::to_string(point.gpus) + "-GPU groups");
  // What a team member fails to set up (out of memory, --cuda-graph on over the mpi backend) fails every rank
  // here, before the idle ranks wait at a step boundary the team would never reach.
  auto agree_on = [&](const std::function<void()>& set_up) {
    std::optional<std::string> error;
    try {
      if (team.group) set_up();
    } catch (const RuntimeFailure& e) {
      error = e.what();
    }
    agree_or_fail(world, error);
  };
  std::unique_ptr<GradientReducer> reducer;
  agree_on([&] {
    team.during_backward = make_overlap_communicator(options, *team.communicator, *team.group, device, nullptr);
    reducer = make_gradient_reducer(options, device, *team.communicator, *replica.executor, &buckets,
                                    team.during_backward.get());
  });
  if (options.comm) {
    record_phase(
        world, point.comm, comm_name,
        [&] {
          return team.group ? run_comm_phase(world, *reducer, options, comm_name)
                            : idle_steps(world, options, comm_name, false);
        },
        [](bool) {}, on_phase_done);
  }
  if (!options.dp) return;
  std::unique_ptr<StepGraph> graph;
  agree_on([&] {
    restart_from_initial_weights(replica, weight_seed);
    weight_losses_by_global_rows(*team.group, replica, true);
    std::optional<std::string> no_capture;
    if (!team.communicator->supports_graph_capture()) {
      no_capture = std::string("the ") + backend_name(backend) + " backend's all-reduces cannot be captured into a graph";
    }
    graph = std::make_unique<StepGraph>(*team.group, *replica.executor, options.cuda_graph, dp_name, no_capture);
  });
  record_phase(
      world, point.dp, dp_name,
      [&] {
        return team.group ? run_dp_phase(*team.group, replica, *reducer, options, *graph, dp_name, &world)
                          : idle_steps(world, options, dp_name, true);
      },
      [&](bool) {
        // Rank 0 is in the first group of every point, so its status is the one reported.
        point.dp.cuda_graph = graph ? graph->status() : "";
        if (team.group) reducer->gather_whole_parameters("the zero3 gathers after " + dp_name);
        const uint64_t checksum = team.group ? parameter_checksum(replica, team.group.get()) : 0;
        point.weights_checksum_after_dp = checksum;
        const bool identical = !team.group || same_on_every_rank(*team.group, checksum);
        point.weights_identical_after_dp = world.max_across_ranks(identical ? 0 : 1) == 0;
      },
      on_phase_done);
}

void check_sweep_point(const TrainOptions& options, const ReplicaOptions& replica_options, ProcessGroup& world,
                       Device& device, Backend backend, SweepPoint& point,
                       const std::function<void(const std::string& phase)>& on_phase_done) {
  const std::string name = point_name("check", point.gpus);
  Team team = form_team(world, device, backend, point.groups, "the " + std::to_string(point.gpus) + "-GPU groups");
  set_progress(name);
  // A group's failure to run its check (out of memory) is every rank's, agreed below like the trainer's own.
  std::optional<std::string> error;
  CheckRecord mine;
  if (team.group) {
    try {
      mine = run_dp_check(options, replica_options, *team.group, device, *team.communicator);
    } catch (const RuntimeFailure& e) {
      error = name + ": " + e.what();
    }
  }
  agree_or_fail(world, error);
  // Every group's first rank brings its group's verdict (the record is plain numbers: every rank runs this binary).
  static_assert(std::is_trivially_copyable_v<CheckRecord>, "CheckRecord travels as bytes");
  std::vector<CheckRecord> all(static_cast<size_t>(world.size()));
  world.allgather(&mine, all.data(), sizeof mine);
  std::vector<CheckRecord> groups;
  for (const SweepGroup& group : point.groups) groups.push_back(all.at(static_cast<size_t>(group.ranks.front())));
  point.check = worst_check(groups);
  on_phase_done(name);
}

}  // namespace sb
