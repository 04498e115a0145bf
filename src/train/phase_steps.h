// Pieces the trainer's phases and the --check share: agreeing on a failure, gathering per-rank samples, and
// the step loop with its timing and its finite-loss check.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "scalebench/process_group.h"
#include "scalebench/training.h"
#include "src/train/replica.h"
#include "src/train/step_graph.h"

namespace sb {

// Collective: when any rank has an error, every rank throws RuntimeFailure (its own message, or the first
// failing rank's), so no rank goes on into a collective that the others will never join.
void agree_or_fail(ProcessGroup& group, const std::optional<std::string>& my_error);

// Collective: true when `value` is the same on every rank.
bool same_on_every_rank(ProcessGroup& group, uint64_t value);

// Collective: every rank's RankPhase, in rank order.
std::vector<RankPhase> gather_phase(ProcessGroup& group, const RankPhase& mine);

// How many steps a phase times: --steps, or more when --min-time asks for it (estimated from the last
// warm-up step, the largest estimate across ranks so that every rank runs as many).
int agreed_step_count(ProcessGroup& group, const TrainOptions& options, double warm_step_ms);

// Sets every cross-entropy's loss weight to N · local rows / global rows (executor.h, set_loss_weight), or
// back to 1 with `data_parallel` false, for every sub-step (its parts run once to switch its targets in); kept in
// replica.sub_step_losses, which each sub-step makes current (sub_steps.h), sub-step 0's applied now.
void weight_losses_by_global_rows(ProcessGroup& group, Replica& replica, bool data_parallel);
// The same on one rank, not collective: weights 1 and each sub-step's counted rows (the --check reference, maxbatch).
void weight_losses_locally(Replica& replica);

// Thrown on every rank at the same step boundary when any rank received SIGINT or SIGTERM, or had a non-finite
// loss: the phase's timed steps before it travel with it, so the trainer still gathers and reports them.
class StoppedAtBoundary : public RuntimeFailure {
 public:
  StoppedAtBoundary(const std::string& message, RankPhase partial)
      : RuntimeFailure(message), partial(std::move(partial)) {}
  RankPhase partial;
};

// Collective, after every step: agrees on a non-finite loss (StoppedAtBoundary naming the rank, carrying the
// first `timed_before` timed steps of `so_far`: those before this one, the same count on every rank) and on a
// stop signal (StoppedAtBoundary carrying `so_far`). `loss_finite` is this rank's.
void agree_at_step_boundary(ProcessGroup& group, const std::string& phase, int step, bool loss_finite,
                            const RankPhase& so_far, size_t timed_before = SIZE_MAX);

// The first `steps` timed steps of a phase's record (every per-step series cut to them).
RankPhase first_steps(RankPhase phase, size_t steps);

// The step loop's schedule and agreements: warm-up then timed steps, each followed by agree_at_step_boundary over
// `boundary`, the timed count agreed after the warm-up when `extendable` (--min-time; the comm phase is not).
// `body` runs one step (timed: not a warm-up step), records what it measured into `so_far`, and says whether its
// loss was finite and how long it took. Every rank of `boundary` runs the same schedule, so ranks that train and
// ranks idle during a --gpus-sweep point (idle_steps) meet at every boundary: a stop signal or a non-finite loss
// ends them all at the same step, and a rank that dies is missed within --timeout by everyone.
struct StepOutcome {
  bool loss_finite = true;
  double step_ms = 0;
};
RankPhase step_loop(ProcessGroup& boundary, const TrainOptions& options, const std::string& phase, bool extendable,
                    const std::function<StepOutcome(int step, bool timed, RankPhase& so_far)>& body);

// Runs one phase, gathers every rank's samples of `group` into `record` (by rank), runs `after` (complete: whether
// every step ran) and reports the phase. A phase stopped at a step boundary still has its timed steps so far
// gathered, finished and reported (every rank stopped at the same boundary), then the stop goes on up as a
// RuntimeFailure.
void record_phase(ProcessGroup& group, PhaseRecord& record, const std::string& name,
                  const std::function<RankPhase()>& run, const std::function<void(bool complete)>& after,
                  const std::function<void(const std::string& phase)>& on_phase_done);

// A rank that takes no part in `phase` (outside a --gpus-sweep group): the same schedule and agreements as the
// ranks that train it, with nothing to run; returns an empty RankPhase.
RankPhase idle_steps(ProcessGroup& boundary, const TrainOptions& options, const std::string& phase, bool extendable);

// Runs warm-up then timed training steps. `enqueue_step` enqueues one step's work on the executor (and
// returns); the step is timed between marks on the compute stream around it; `after_step`, when set,
// runs once the step is enqueued (waiting for communication) and records what it measured into the phase
// when `timed` (not a warm-up step).
// The loss is read after every step: a non-finite loss on any rank, or a stop signal on any rank, ends the phase
// at that step on every rank (StoppedAtBoundary; the steps before a non-finite loss are kept).
// Each step is issued through `graph` (src/train/step_graph.h): eagerly, or replayed from a captured graph; the
// host's time to issue it is kept per timed step (RankPhase::host_ms).
// `group` trains the phase (its rank seeds the dropout stream); the step boundaries are agreed over `boundary`
// when given (a --gpus-sweep point: every rank of the job), else over `group`.
RankPhase run_steps(ProcessGroup& group, Replica& replica, const TrainOptions& options, const std::string& phase,
                    StepGraph& graph, const std::function<void(int64_t step)>& enqueue_step,
                    const std::function<void(RankPhase& phase, bool timed)>& after_step,
                    ProcessGroup* boundary = nullptr);

}  // namespace sb
