// The step loop and the small agreements around it (src/train/phase_steps.h).
#include "src/train/phase_steps.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "scalebench/error.h"
#include "scalebench/fault.h"
#include "src/core/fault_injection.h"

namespace sb {

void agree_or_fail(ProcessGroup& group, const std::optional<std::string>& my_error) {
  const std::vector<std::string> errors = group.allgather_strings(my_error.value_or(""));
  for (size_t rank = 0; rank < errors.size(); ++rank) {
    if (errors[rank].empty()) continue;
    if (my_error) throw RuntimeFailure(*my_error);
    throw RuntimeFailure("rank " + std::to_string(rank) + " failed: " + errors[rank]);
  }
}

bool same_on_every_rank(ProcessGroup& group, uint64_t value) {
  const std::vector<std::string> all = group.allgather_strings(std::to_string(value));
  return std::all_of(all.begin(), all.end(), [&](const std::string& v) { return v == all.front(); });
}

std::vector<RankPhase> gather_phase(ProcessGroup& group, const RankPhase& mine) {
  const nlohmann::json doc = {{"step_ms", mine.step_ms},
                              {"bucket_ms", mine.bucket_ms},
                              {"nodes_done_ms", mine.nodes_done_ms},
                              {"bucket_ready_ms", mine.bucket_ready_ms},
                              {"bucket_start_ms", mine.bucket_start_ms},
                              {"bucket_end_ms", mine.bucket_end_ms},
                              {"step_start_ms", mine.step_start_ms},
                              {"forward_done_ms", mine.forward_done_ms},
                              {"step_done_ms", mine.step_done_ms},
                              {"host_ms", mine.host_ms},
                              {"all_gather_ms", mine.all_gather_ms},
                              {"update_done_ms", mine.update_done_ms},
                              {"gather_start_ms", mine.gather_start_ms},
                              {"gather_end_ms", mine.gather_end_ms},
                              {"gather_needed_ms", mine.gather_needed_ms},
                              {"loss_first", mine.loss_first},
                              {"loss_last", mine.loss_last}};
  std::vector<RankPhase> all;
  for (const std::string& text : group.allgather_strings(doc.dump())) {
    const nlohmann::json entry = nlohmann::json::parse(text);
    RankPhase phase;
    phase.step_ms = entry["step_ms"].get<std::vector<double>>();
    phase.bucket_ms = entry["bucket_ms"].get<std::vector<std::vector<double>>>();
    phase.nodes_done_ms = entry["nodes_done_ms"].get<std::vector<double>>();
    phase.bucket_ready_ms = entry["bucket_ready_ms"].get<std::vector<std::vector<double>>>();
    phase.bucket_start_ms = entry["bucket_start_ms"].get<std::vector<std::vector<double>>>();
    phase.bucket_end_ms = entry["bucket_end_ms"].get<std::vector<std::vector<double>>>();
    phase.step_start_ms = entry["step_start_ms"].get<std::vector<double>>();
    phase.forward_done_ms = entry["forward_done_ms"].get<std::vector<double>>();
    phase.step_done_ms = entry["step_done_ms"].get<std::vector<double>>();
    phase.host_ms = entry["host_ms"].get<std::vector<double>>();
    phase.all_gather_ms = entry["all_gather_ms"].get<std::vector<double>>();
    phase.update_done_ms = entry["update_done_ms"].get<std::vector<double>>();
    phase.gather_start_ms = entry["gather_start_ms"].get<std::vector<std::vector<double>>>();
    phase.gather_end_ms = entry["gather_end_ms"].get<std::vector<std::vector<double>>>();
    phase.gather_needed_ms = entry["gather_needed_ms"].get<std::vector<std::vector<double>>>();
    phase.loss_first = entry["loss_first"].get<float>();
    phase.loss_last = entry["loss_last"].get<float>();
    all.push_back(std::move(phase));
  }
  return all;
}

int agreed_step_count(ProcessGroup& group, const TrainOptions& options, double warm_step_ms) {
  int64_t steps = options.steps;
  if (options.min_time_seconds > 0 && warm_step_ms > 0) {
    steps = std::max<int64_t>(steps, static_cast<int64_t>(std::ceil(options.min_time_seconds * 1e3 / warm_step_ms)));
  }
  return static_cast<int>(group.max_across_ranks(steps));
}

namespace {

// Every sub-step's counted rows (its parts run once to switch its targets in) and loss weights: N · local rows /
// global rows, the global sum taken by `sum_across_ranks`, or 1 without data parallelism.
void weigh_sub_step_losses(Replica& replica, int ranks, bool data_parallel,
                           const std::function<void(std::vector<int64_t>&)>& sum_across_ranks) {
  replica.sub_step_losses.clear();
  for (size_t k = 0; k < replica.graph.sub_step_count(); ++k) {
    run_sub_step_parts(*replica.executor, k);
    const auto counts = counted_loss_rows(replica);
    std::vector<int64_t> global;
    for (const auto& entry : counts) global.push_back(entry.second);
    if (!global.empty()) sum_across_ranks(global);
    SubStepLosses losses;
    for (size_t i = 0; i < counts.size(); ++i) {
      const double weight = data_parallel && global[i] > 0 ? static_cast<double>(ranks) *
                                                                 static_cast<double>(counts[i].second) /
                                                                 static_cast<double>(global[i])
                                                           : 1.0;
      losses.weight[counts[i].first] = static_cast<float>(weight);
      losses.counted_rows[counts[i].first] = counts[i].second;
    }
    replica.sub_step_losses.push_back(std::move(losses));
  }
  apply_sub_step_losses(*replica.executor, replica.sub_step_losses, 0);
}

}  // namespace

void weight_losses_by_global_rows(ProcessGroup& group, Replica& replica, bool data_parallel) {
  weigh_sub_step_losses(replica, group.size(), data_parallel,
                        [&](std::vector<int64_t>& rows) { group.allreduce_sum(rows.data(), rows.size()); });
}

void weight_losses_locally(Replica& replica) {
  weigh_sub_step_losses(replica, 1, false, [](std::vector<int64_t>&) {});
}

// The first `steps` timed steps of a phase's record (every per-step series cut to them).
RankPhase first_steps(RankPhase phase, size_t steps) {
  auto cut = [steps](auto& series) {
    if (series.size() > steps) series.resize(steps);
  };
  cut(phase.step_ms), cut(phase.bucket_ms), cut(phase.nodes_done_ms), cut(phase.bucket_ready_ms);
  cut(phase.bucket_start_ms), cut(phase.bucket_end_ms), cut(phase.step_start_ms), cut(phase.forward_done_ms);
  cut(phase.step_done_ms), cut(phase.host_ms), cut(phase.all_gather_ms), cut(phase.update_done_ms);
  cut(phase.gather_start_ms), cut(phase.gather_end_ms), cut(phase.gather_needed_ms);
  return phase;
}

void agree_at_step_boundary(ProcessGroup& group, const std::string& phase, int step, bool loss_finite,
                            const RankPhase& so_far, size_t timed_before) {
  int64_t flags[2] = {loss_finite ? 0 : group.rank() + 1, stop_signal()};
  group.allreduce_max(flags, 2);
  if (flags[0] > 0) {  // the timed steps before this one are measurements: they travel with the failure
    const RankPhase kept = first_steps(so_far, timed_before);
    throw StoppedAtBoundary(phase + " phase: the loss is not finite at step " + std::to_string(step) + " on rank " +
                                std::to_string(flags[0] - 1) + " (" + std::to_string(kept.step_ms.size()) +
                                " timed steps of the phase kept)",
                            kept);
  }
  if (flags[1] > 0) {
    throw StoppedAtBoundary("stopped by " + signal_name(static_cast<int>(flags[1])) + " after " + phase +
                                " phase, step " + std::to_string(step) + " (" + std::to_string(so_far.step_ms.size()) +
                                " timed steps of the phase kept)",
                            so_far);
  }
}

RankPhase step_loop(ProcessGroup& boundary, const TrainOptions& options, const std::string& phase, bool extendable,
                    const std::function<StepOutcome(int step, bool timed, RankPhase& so_far)>& body) {
  RankPhase result;
  int timed = options.steps;
  bool counted = !extendable || options.min_time_seconds <= 0;
  for (int step = 0; step < options.warmup_steps + timed; ++step) {
    set_progress(phase, step + 1);
    inject_fault(phase, step + 1);
    const StepOutcome outcome = body(step, step >= options.warmup_steps, result);
    agree_at_step_boundary(boundary, phase, step + 1, outcome.loss_finite, result,
                           size_t(std::max(0, step - options.warmup_steps)));
    if (!counted && (step + 1 == options.warmup_steps || options.warmup_steps == 0)) {
      timed = agreed_step_count(boundary, options, outcome.step_ms);
      counted = true;
    }
  }
  return result;
}

void record_phase(ProcessGroup& group, PhaseRecord& record, const std::string& name,
                  const std::function<RankPhase()>& run, const std::function<void(bool complete)>& after,
                  const std::function<void(const std::string& phase)>& on_phase_done) {
  try {
    record.ranks = gather_phase(group, run());
    record.ran = true;
  } catch (const StoppedAtBoundary& stopped) {
    // Every rank stopped at the same boundary, so every rank gathers; ranks idle in a sweep bring no samples.
    record.ranks = gather_phase(group, stopped.partial);
    record.ran = std::any_of(record.ranks.begin(), record.ranks.end(),
                             [](const RankPhase& rank) { return !rank.step_ms.empty(); });
    if (record.ran) {
      after(false);
      on_phase_done(name);
    }
    throw RuntimeFailure(stopped.what());
  }
  after(true);
  // Read after "during" by a signal's message: "stopped by SIGTERM during the set-up after the comm phase".
  set_progress("the set-up after the " + name + " phase");
  on_phase_done(name);
}

RankPhase idle_steps(ProcessGroup& boundary, const TrainOptions& options, const std::string& phase, bool extendable) {
  return step_loop(boundary, options, phase, extendable, [](int, bool, RankPhase&) { return StepOutcome{}; });
}

RankPhase run_steps(ProcessGroup& group, Replica& replica, const TrainOptions& options, const std::string& phase,
                    StepGraph& graph, const std::function<void(int64_t step)>& enqueue_step,
                    const std::function<void(RankPhase& phase, bool timed)>& after_step, ProcessGroup* boundary) {
  Executor& executor = *replica.executor;
  auto step_body = [&](int step, bool timed, RankPhase& result) {
    executor.set_random_stream(options.seed + static_cast<uint64_t>(group.rank()), static_cast<uint64_t>(step));
    executor.mark(0);
    const auto issue_start = std::chrono::steady_clock::now();
    graph.issue(step, [&] { enqueue_step(step + 1); });
    const double host_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - issue_start).count();
    executor.mark(1);
    if (after_step) after_step(result, timed);
    StepOutcome outcome;
    outcome.step_ms = executor.elapsed_ms(0, 1);
    float loss = 0;
    executor.read_tensor(replica.built.loss, &loss, sizeof loss);
    if (take_injected_nan_loss()) loss = std::numeric_limits<float>::quiet_NaN();  // SCALEBENCH_FAULT=nan:...
    outcome.loss_finite = std::isfinite(loss);
    if (outcome.loss_finite) {
      if (step == 0) result.loss_first = loss;
      result.loss_last = loss;
      if (timed) {
        result.step_ms.push_back(outcome.step_ms);
        result.host_ms.push_back(host_ms);
      }
    }
    return outcome;
  };
  return step_loop(boundary != nullptr ? *boundary : group, options, phase, true, step_body);
}

}  // namespace sb
