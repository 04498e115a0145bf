// Every node's outputs compared between the CPU (fp32 graph) and the GPU (a graph of any compute dtype built by
// the same function), in node order: where a gradient comparison says only that something broke, the first
// output off names the op that broke it. Each activation must survive to be read after the run
// (plan_keeping_every_activation), so this is for small test graphs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "scalebench/executor.h"
#include "scalebench/graph.h"
#include "scalebench/planner.h"
#include "tests/support/bf16_data.h"
#include "tests/support/fp16_data.h"
#include "tests/support/tensor_compare.h"

namespace sb::test {

// The planner's layout with every activation read after the step (TensorInfo::read_after_step keeps it, and a
// view's storage, live to the step's end), so nothing is overwritten once written.
inline MemoryPlan plan_keeping_every_activation(Graph& graph) {
  for (TensorId id : graph.tensors_with_role(TensorRole::kActivation)) graph.tensor(id).read_after_step = true;
  return plan_memory(graph);
}

// A floating tensor's values as fp32, whatever its storage dtype; empty for integer tensors.
inline std::vector<float> read_as_float(Executor& executor, const TensorInfo& info, TensorId id) {
  const size_t n = size_t(info.elements());
  if (info.dtype == DType::kFloat32) {
    std::vector<float> values(n);
    executor.read_tensor(id, values.data(), info.bytes());
    return values;
  }
  if (info.dtype != DType::kBFloat16 && info.dtype != DType::kFloat16) return {};
  std::vector<uint16_t> bits(n);
  executor.read_tensor(id, bits.data(), info.bytes());
  return info.dtype == DType::kBFloat16 ? widen(bits) : widen_fp16(bits);
}

// After both executors ran their graphs: the non-cast nodes of the two graphs pair up in order (the GPU graph
// differs only by its casts), and each pair's floating outputs (workspaces aside) must agree within `tolerance`
// in relative L2 error. Every output off is reported, the first one named as where it starts.
inline void expect_every_output_matches(const Graph& cpu_graph, Executor& cpu, const Graph& gpu_graph,
                                        Executor& gpu, double tolerance) {
  auto compute_nodes = [](const Graph& graph) {
    std::vector<const Node*> kept;
    for (const Node& node : graph.nodes()) {
      if (node.op != "cast") kept.push_back(&node);
    }
    return kept;
  };
  const std::vector<const Node*> want_nodes = compute_nodes(cpu_graph), got_nodes = compute_nodes(gpu_graph);
  ASSERT_EQ(want_nodes.size(), got_nodes.size()) << "the graphs differ by more than their casts";
  std::string first_off;
  for (size_t k = 0; k < want_nodes.size(); ++k) {
    const Node& want_node = *want_nodes[k];
    const Node& got_node = *got_nodes[k];
    ASSERT_EQ(want_node.op, got_node.op) << "node " << k << " (casts aside) differs between the graphs";
    ASSERT_EQ(want_node.outputs.size(), got_node.outputs.size()) << want_node.op;
    for (size_t o = 0; o < want_node.outputs.size(); ++o) {
      const TensorInfo& want_info = cpu_graph.tensor(want_node.outputs[o]);
      const TensorInfo& got_info = gpu_graph.tensor(got_node.outputs[o]);
      if (want_info.role == TensorRole::kWorkspace || want_info.elements() != got_info.elements()) continue;
      const std::vector<float> want = read_as_float(cpu, want_info, want_node.outputs[o]);
      const std::vector<float> got = read_as_float(gpu, got_info, got_node.outputs[o]);
      if (want.empty() || got.empty()) continue;
      const double error = relative_l2(got, want);
      if (error <= tolerance) continue;
      const std::string where = "node " + std::to_string(k) + " " + want_node.op +
                                (want_node.backward ? " (backward)" : "") + " output " + std::to_string(o) + " '" +
                                want_info.name + "' (" + dtype_name(got_info.dtype) + " on the GPU)";
      if (first_off.empty()) first_off = where;
      ADD_FAILURE() << where << ": relative L2 error " << error << " > " << tolerance;
    }
  }
  if (!first_off.empty()) ADD_FAILURE() << "the GPU first departs from the CPU at " << first_off;
}

}  // namespace sb::test
