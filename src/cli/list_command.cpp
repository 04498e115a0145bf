// `scalebench list [--json FILE|-]`: every workload with its task, unit, default batch, trainable parameter count,
// frozen weights (graph inputs, used but never trained: pix2pixhd's VGG19, maskrcnn's stem and res2), forward
// FLOPs per unit and gradient bytes, all read off the full-scale graph (no device needed).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "scalebench/autodiff.h"
#include "scalebench/planner.h"
#include "scalebench/report.h"
#include "scalebench/workload.h"
#include "src/cli/commands.h"
#include "src/cli/run_context.h"
#include "src/cli/session.h"
#include "src/train/replica.h"

namespace sb {

int run_list_command(const CommandLine& command_line, ProcessGroup& group) {
  agree_or_throw(group, group.rank() == 0
                            ? unwritable_output({command_line.common.json_path}, command_line.common.force)
                            : std::nullopt);
  nlohmann::json rows = nlohmann::json::array();
  for (const Workload* workload : workload_registry()) {
    const WorkloadInfo& info = workload->info();
    Graph graph;
    GraphBuilder builder(graph);
    BuiltWorkload built = workload->build(builder, info.default_batch, WorkloadScale::kFull);
    // Counted in the default dataset's first batch, as `run` counts its own (pytorch_reference.py credits the same).
    built.units_per_step = credited_units(*workload, graph, built, kDefaultDataSeed, 0);
    // Before the backward pass exists: the forward products of a whole step (every sub-step, repeated parts as
    // often as they run).
    const double forward_flops = step_matmul_flops(graph);
    append_backward(graph, built.loss);
    const MemoryPlan plan = plan_memory(graph);
    rows.push_back({{"name", info.name},
                    {"task", info.task},
                    {"unit", info.unit},
                    {"default_batch", info.default_batch},
                    {"batch_unit", info.batch_unit.empty() ? info.unit : info.batch_unit},
                    {"units_per_step", built.units_per_step},
                    {"parameters", graph.parameter_count()},
                    {"frozen_parameters", graph.frozen_parameter_count()},
                    {"forward_gflops_per_unit", forward_flops / built.units_per_step / 1e9},
                    {"train_gflops_per_step", step_matmul_flops(graph) / 1e9},
                    {"gradient_bytes", plan.gradient_bytes},
                    {"reference", info.reference}});
  }
  if (group.rank() != 0) return 0;
  if (!command_line.common.json_path.empty()) {
    nlohmann::json document = {{"schema_version", 1}, {"tool", "scalebench"}, {"command", "list"}, {"workloads", rows}};
    write_text_file(command_line.common.json_path, document.dump(2) + "\n");
    if (command_line.common.json_path == "-") return 0;
  }
  std::printf("# %-16s %-30s %-9s %-20s %13s %11s %14s %14s %12s\n", "workload", "task", "unit", "batch", "parameters",
              "frozen", "fwd GFLOP/unit", "train GFLOP/step", "grad (MiB)");
  for (const auto& row : rows) {
    const std::string batch =
        std::to_string(row["default_batch"].get<int64_t>()) + " " + row["batch_unit"].get<std::string>();
    std::printf("  %-16s %-30s %-9s %-20s %13lld %11lld %14.3f %16.1f %12.1f\n", row["name"].get<std::string>().c_str(),
                row["task"].get<std::string>().c_str(), row["unit"].get<std::string>().c_str(), batch.c_str(),
                static_cast<long long>(row["parameters"].get<int64_t>()),
                static_cast<long long>(row["frozen_parameters"].get<int64_t>()), row["forward_gflops_per_unit"].get<double>(),
                row["train_gflops_per_step"].get<double>(), row["gradient_bytes"].get<double>() / (1 << 20));
  }
  std::printf("# unit: what throughput counts (units/s); batch: per rank, in its own unit (a translation batch is "
              "sentence pairs, its throughput tokens)\n");
  std::printf("# parameters: trained; frozen: weights of the model that are inputs (no gradient, not all-reduced)\n");
  std::printf("# FLOPs: matrix products of the graph (2 per multiply-add); elementwise work not counted\n");
  return 0;
}

}  // namespace sb
