// Sub-steps of a training step (src/train/sub_steps.h).
#include "src/train/sub_steps.h"

#include <chrono>

#include "src/train/replica.h"

namespace sb {

int64_t optimizer_step_number(const Graph& graph, int64_t step, size_t sub_step) {
  return (step - 1) * static_cast<int64_t>(graph.sub_step_count()) + static_cast<int64_t>(sub_step) + 1;
}

void run_sub_step_parts(Executor& executor, size_t sub_step) {
  const Graph& graph = executor.graph();
  if (graph.sub_steps().empty()) return;
  for (const StepPart& part : graph.sub_steps().at(sub_step).parts) {
    for (int64_t r = 0; r < part.repeat; ++r) executor.run_nodes(part.begin, part.end);
  }
}

void apply_sub_step_losses(Executor& executor, const std::vector<SubStepLosses>& losses, size_t sub_step) {
  if (sub_step >= losses.size()) return;
  for (const auto& [targets, weight] : losses[sub_step].weight) executor.set_loss_weight(targets, weight);
  for (const auto& [targets, rows] : losses[sub_step].counted_rows) executor.set_counted_rows(targets, rows);
}

void for_each_sub_step(Replica& replica, const std::function<void(size_t sub_step)>& train_pass,
                       const std::function<void(size_t sub_step, int64_t optimizer_step)>& update, int64_t step,
                       const std::function<void(size_t sub_step)>& parts) {
  Executor& executor = *replica.executor;
  const size_t count = replica.graph.sub_step_count();
  const uint64_t seed = executor.seed(), random_step = executor.step();
  for (size_t k = 0; k < count; ++k) {
    executor.set_random_stream(seed, random_step * count + k);
    apply_sub_step_losses(executor, replica.sub_step_losses, k);
    if (parts) {
      parts(k);
    } else {
      run_sub_step_parts(executor, k);
    }
    train_pass(k);
    update(k, optimizer_step_number(replica.graph, step, k));
  }
  executor.set_random_stream(seed, random_step);
}

void run_local_step(Replica& replica, const OptimizerSettings& settings, int64_t step, const LocalStepMarks* marks) {
  Executor& executor = *replica.executor;
  auto train_pass = [&](size_t) {
    if (marks == nullptr) {
      executor.run_nodes(replica.graph.training_begin(), replica.graph.nodes().size());
      return;
    }
    // As the data-parallel step splits it (GradientReducer::run_nodes_and_reduce).
    const size_t forward_end = executor.forward_node_count();
    executor.run_nodes(replica.graph.training_begin(), forward_end);
    executor.mark(marks->forward_done);
    executor.run_nodes(forward_end, replica.graph.nodes().size());
    executor.mark(marks->nodes_done);
  };
  for_each_sub_step(
      replica, train_pass, [&](size_t, int64_t optimizer_step) { executor.optimizer_step(settings, optimizer_step); },
      step);
}

SubStepProfile profile_sub_steps(Replica& replica, const OptimizerSettings& settings, int64_t step) {
  Executor& executor = *replica.executor;
  const Graph& graph = replica.graph;
  // (what, mark index before, mark index after), resolved once everything is enqueued.
  struct Span {
    std::string category, op;
    size_t from;
    double host_ms;  // the host's time enqueueing it
    size_t node;     // the node's index; the node count for the optimizer (not counted as host time)
  };
  std::vector<Span> spans;
  size_t marks = 0;
  executor.mark(marks);
  const size_t optimizer = graph.nodes().size();
  auto timed = [&](const std::string& category, const std::string& op, const std::function<void()>& work,
                   size_t node) {
    const auto begin = std::chrono::steady_clock::now();
    work();
    const double host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
    spans.push_back(Span{category, op, marks, host_ms, node});
    executor.mark(++marks);
  };
  auto node_label = [&](size_t n) {
    const Node& node = graph.nodes()[n];
    return node.op + (node.backward ? " (backward)" : "");
  };
  for_each_sub_step(
      replica,
      [&](size_t) {
        for (size_t n = graph.training_begin(); n < graph.nodes().size(); ++n) {
          timed(op_category(graph.nodes()[n]), node_label(n), [&] { executor.run_nodes(n, n + 1); }, n);
        }
      },
      [&](size_t, int64_t optimizer_step) {
        timed(
            "optimizer", optimizer_name(settings.kind), [&] { executor.optimizer_step(settings, optimizer_step); },
            optimizer);
      },
      step,
      [&](size_t k) {
        if (graph.sub_steps().empty()) return;
        for (const StepPart& part : graph.sub_steps()[k].parts) {
          for (int64_t r = 0; r < part.repeat; ++r) {
            for (size_t n = part.begin; n < part.end; ++n) {
              timed(part.generation ? "decode" : op_category(graph.nodes()[n]),
                    (part.generation ? "decode: " : "") + node_label(n), [&] { executor.run_nodes(n, n + 1); }, n);
            }
          }
        }
      });
  SubStepProfile profile;
  profile.node_ms.assign(graph.nodes().size(), 0.0);
  for (const Span& span : spans) {
    const double ms = executor.elapsed_ms(span.from, span.from + 1);
    profile.by_category[span.category] += ms;
    profile.by_op[span.op] += ms;
    profile.total_ms += ms;
    if (span.node != optimizer) {
      profile.node_ms[span.node] += ms;
      profile.host_by_op[span.op] += span.host_ms;
      profile.host_ms += span.host_ms;
    }
  }
  return profile;
}

}  // namespace sb
