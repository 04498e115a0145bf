// The data-parallel step as two streams in one event simulation (include/scalebench/plan_model.h). The compute
// stream runs every node, then the optimizer: bucket by bucket, each waiting for its own all-reduce, or in one
// pass after the last one. The communication stream runs the buckets in issue order, each once the node that
// writes its last gradient has run (or after the last node without overlap). This is the trainer's order of
// events (GradientReducer::run_nodes_and_reduce and ::update), so what the timeline hides or exposes is the
// schedule's consequence, not a fitted number.
#include <algorithm>
#include <limits>
#include <numeric>

#include "scalebench/error.h"
#include "scalebench/plan_model.h"

namespace sb {

TimelineResult simulate_step(const TimelineInput& in, int first_backward_node) {
  const size_t nodes = in.node_ms.size(), buckets = in.bucket_comm_ms.size(), gathers = in.gather_ms.size();
  const bool before_use = !in.gather_needed_node.empty();
  if (in.bucket_ready_node.size() != buckets || (in.update_by_bucket && in.bucket_update_ms.size() != buckets) ||
      (before_use ? in.gather_issue_node.size() != gathers || in.gather_needed_node.size() != gathers
                  : in.gather_after_update.size() != gathers)) {
    throw UsageError("timeline: per-bucket inputs differ in length");
  }
  const double dp_whole_update_ms = in.dp_whole_update_ms < 0 ? in.whole_update_ms : in.dp_whole_update_ms;
  TimelineResult out;
  const double node_total = std::accumulate(in.node_ms.begin(), in.node_ms.end(), 0.0);
  const int split = std::clamp(first_backward_node, 0, static_cast<int>(nodes));
  out.forward_ms = std::accumulate(in.node_ms.begin(), in.node_ms.begin() + split, 0.0);
  out.backward_ms = node_total - out.forward_ms;
  out.optimizer_ms = in.whole_update_ms;
  out.solo_ms = node_total - in.dp_only_node_ms + in.whole_update_ms;
  out.gathers_alone_ms = std::accumulate(in.gather_ms.begin(), in.gather_ms.end(), 0.0);
  out.comm_alone_ms = std::accumulate(in.bucket_comm_ms.begin(), in.bucket_comm_ms.end(), 0.0) + out.gathers_alone_ms;

  // Communication tasks in issue order, each waiting for one compute task (a node, or an update) to be done: its
  // index, or -1 for none. The reductions after their ready node; zero1/zero2's gathers after them, each after an
  // update; zero3's gathers where the compute stream issues them, merged in (a reduction first where both follow the
  // same node, as GradientReducer::run_training_nodes issues them).
  struct CommTask {
    int after = -1;      // the compute task it waits for
    int bucket = -1;     // a reduction's bucket; -1: a gather
    size_t gather = 0;
  };
  std::vector<CommTask> comm;
  for (size_t b = 0; b < buckets; ++b) {
    comm.push_back(CommTask{in.overlap ? in.bucket_ready_node[b] : static_cast<int>(nodes) - 1, static_cast<int>(b)});
  }
  if (before_use) {
    for (size_t g = 0; g < gathers; ++g) comm.push_back(CommTask{in.gather_issue_node[g] - 1, -1, g});
    std::stable_sort(comm.begin(), comm.end(), [](const CommTask& a, const CommTask& b) {
      return a.after != b.after ? a.after < b.after : a.bucket >= 0 && b.bucket < 0;
    });
  }
  std::vector<int> position_of_bucket(buckets), position_of_gather(gathers);
  for (size_t m = 0; m < comm.size(); ++m) {
    if (comm[m].bucket >= 0) position_of_bucket[static_cast<size_t>(comm[m].bucket)] = static_cast<int>(m);
    if (comm[m].bucket < 0 && before_use) position_of_gather[comm[m].gather] = static_cast<int>(m);
  }
  // Compute tasks: the nodes (zero3: a node waits for the units it needs), then the updates; each update may wait
  // for one bucket's reduction.
  std::vector<double> compute(in.node_ms);
  std::vector<int> compute_waits(nodes, -1);
  if (before_use) {
    for (size_t g = 0; g < gathers; ++g) {
      const auto node = static_cast<size_t>(in.gather_needed_node[g]);
      if (node < nodes) compute_waits[node] = std::max(compute_waits[node], position_of_gather[g]);
    }
  }
  if (!in.bucket_needed_node.empty() && in.bucket_needed_node.size() != buckets) {
    throw UsageError("timeline: per-bucket inputs differ in length");
  }
  for (size_t b = 0; b < in.bucket_needed_node.size(); ++b) {
    const int node = in.bucket_needed_node[b];
    if (node < 0 || static_cast<size_t>(node) >= nodes) continue;
    int& wait = compute_waits[static_cast<size_t>(node)];
    wait = std::max(wait, position_of_bucket[b]);
  }
  const bool by_bucket = in.update_by_bucket && buckets > 0;
  if (by_bucket) {
    for (size_t b = 0; b < buckets; ++b) {
      compute.push_back(in.bucket_update_ms[b]);
      compute_waits.push_back(position_of_bucket[b]);
    }
  } else {
    int last_reduction = -1;  // -1 without buckets: no wait
    for (size_t b = 0; b < buckets; ++b) last_reduction = std::max(last_reduction, position_of_bucket[b]);
    compute.push_back(dp_whole_update_ms);
    compute_waits.push_back(last_reduction);
  }
  if (!before_use) {
    for (size_t g = 0; g < gathers; ++g) {
      const int after = in.gather_after_update[g];
      CommTask task{static_cast<int>(compute.size()) - 1, -1, g};  // the last update
      if (by_bucket && after >= 0) task.after = static_cast<int>(nodes) + after;
      comm.push_back(task);
    }
  }
  const size_t comm_tasks = comm.size();
  std::vector<int> comm_waits(comm_tasks);
  std::vector<double> comm_ms(comm_tasks);
  for (size_t m = 0; m < comm_tasks; ++m) {
    comm_waits[m] = comm[m].after;
    comm_ms[m] =
        comm[m].bucket >= 0 ? in.bucket_comm_ms[static_cast<size_t>(comm[m].bucket)] : in.gather_ms[comm[m].gather];
  }
  out.bucket_start_ms.assign(buckets, 0);
  out.bucket_end_ms.assign(buckets, 0);

  const double inf = std::numeric_limits<double>::infinity();
  size_t ci = 0, mi = 0;  // tasks done on each stream
  double compute_left = compute.empty() ? 0 : compute[0];
  double comm_left = comm_tasks > 0 ? comm_ms[0] : 0;
  bool comm_started = false;
  double t = 0;
  while (ci < compute.size() || mi < comm_tasks) {
    const bool compute_ready =
        ci < compute.size() && (compute_waits[ci] < 0 || compute_waits[ci] < static_cast<int>(mi));
    const bool comm_ready = mi < comm_tasks && comm_waits[mi] < static_cast<int>(ci);
    if (!compute_ready && !comm_ready) throw UsageError("timeline: the streams wait for each other");
    if (comm_ready && !comm_started) {
      if (comm[mi].bucket >= 0) out.bucket_start_ms[static_cast<size_t>(comm[mi].bucket)] = t;
      comm_started = true;
    }
    const double compute_rate = comm_ready ? 1.0 / (1.0 + in.dilation) : 1.0;
    const double comm_rate = compute_ready ? in.in_training_rate : 1.0;
    const double compute_dt = compute_ready ? compute_left / compute_rate : inf;
    const double comm_dt = comm_ready ? comm_left / comm_rate : inf;
    const double dt = std::min(compute_dt, comm_dt);
    t += dt;
    if (compute_ready) compute_left -= dt * compute_rate;
    if (comm_ready) comm_left -= dt * comm_rate;
    if (compute_ready && dt == compute_dt) {
      if (++ci == nodes) out.nodes_done_ms = t;
      compute_left = ci < compute.size() ? compute[ci] : 0;
    }
    if (comm_ready && dt == comm_dt) {
      if (comm[mi].bucket >= 0) {
        out.bucket_end_ms[static_cast<size_t>(comm[mi].bucket)] = t;
        out.last_reduce_end_ms = t;
      } else {
        out.last_gather_end_ms = t;
      }
      comm_started = false;
      if (++mi < comm_tasks) comm_left = comm_ms[mi];
    }
  }
  if (nodes == 0) out.nodes_done_ms = 0;
  out.step_ms = t;
  return out;
}

TimelineResult sub_step_timeline(const TimelineResult& pass, const std::vector<double>& part_ms,
                                 const std::vector<double>& generation_ms) {
  if (part_ms.empty() || part_ms.size() != generation_ms.size()) {
    throw UsageError("timeline: sub-step part times differ in length or are missing");
  }
  const auto k = static_cast<double>(part_ms.size());
  TimelineResult out;
  out.sub_steps = static_cast<int>(part_ms.size());
  out.parts_ms = std::accumulate(part_ms.begin(), part_ms.end(), 0.0);
  out.generation_ms = std::accumulate(generation_ms.begin(), generation_ms.end(), 0.0);
  out.forward_ms = k * pass.forward_ms;
  out.backward_ms = k * pass.backward_ms;
  out.optimizer_ms = k * pass.optimizer_ms;
  out.comm_alone_ms = k * pass.comm_alone_ms;
  out.gathers_alone_ms = k * pass.gathers_alone_ms;
  out.solo_ms = out.parts_ms + k * pass.solo_ms;
  out.step_ms = out.parts_ms + k * pass.step_ms;
  const double last_pass_start = out.step_ms - pass.step_ms;
  out.nodes_done_ms = last_pass_start + pass.nodes_done_ms;
  out.last_reduce_end_ms = last_pass_start + pass.last_reduce_end_ms;
  if (pass.last_gather_end_ms > 0) out.last_gather_end_ms = last_pass_start + pass.last_gather_end_ms;
  return out;
}

}  // namespace sb
