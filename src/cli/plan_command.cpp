// `scalebench plan`'s flags on CLI11 and its entry point: every rank runs the plan library's checks (the same
// usage errors everywhere), rank 0 prints (run_plan, include/scalebench/plan.h).
#include <CLI/CLI.hpp>

#include "scalebench/plan.h"
#include "src/cli/command_line.h"
#include "src/cli/commands.h"

namespace sb {

void add_plan_command(CLI::App& app, PlanCommandOptions& o) {
  CLI::App* plan = app.add_subcommand(
      "plan", "Predict memory, throughput and scaling of a workload on GPUs you do not have (a model, not a run)");
  plan->add_option("-w,--workload", o.workloads, "Workload (scalebench list); a comma list with --table")
      ->delimiter(',');
  plan->add_option("--gpu", o.gpus, "GPU name from the database (e.g. 'RTX 4090', H100); a comma list with --table")
      ->delimiter(',');
  plan->add_option("--gpus", o.request.gpus, "GPUs in all (data-parallel ranks), up to 1024")
      ->check(CLI::Range(1, 1024));
  plan->add_option("--nodes", o.request.nodes, "Nodes the GPUs are spread over (default 1)")
      ->check(CLI::PositiveNumber);
  plan->add_option("--fabric", o.request.fabric,
                   "Path between nodes (ib-ndr, eth-100g, ...) with --nodes > 1, else between the GPUs of the node "
                   "(nvlink4-nvswitch, pcie4-host, ...); with --validate: the path of every file");
  plan->add_option("--intra-fabric", o.request.intra_fabric,
                   "Path between the GPUs of a node (default: NVLink, "
                   "PCIe P2P or host-staged PCIe, as the GPU supports)");
  plan->add_option("--nics-per-node", o.request.nics_per_node, "Network adapters per node (default: one per GPU)")
      ->check(CLI::PositiveNumber);
  plan->add_option("--precision", o.request.precision, "auto (bf16, or fp16 without bf16), bf16, fp16, tf32, fp32")
      ->check(CLI::IsMember({"auto", "bf16", "fp16", "tf32", "fp32"}));
  plan->add_option("--batch", o.request.batch, "Per-GPU batch in the workload's batch unit: sentence pairs (transformer_big, conv_seq2seq), sequences, "
                   "images (scalebench list; default: the reference batch, or the largest that fits)")
      ->check(CLI::NonNegativeNumber);
  plan->add_option("--bucket-mb", o.request.bucket_mb, "Gradient bucket size in MiB (default 25)")
      ->check(CLI::Range(0.001, 1e6));
  plan->add_option("--grad-dtype", o.request.grad_dtype, "All-reduce element type: fp32 or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  plan->add_flag("--no-overlap", o.no_overlap, "All-reduce every bucket after the backward pass");
  plan->add_option("--strategy", o.request.strategy,
                   "Data parallelism as run --strategy trains it: ddp (default), zero1, zero2 or zero3; over more "
                   "than one GPU the memory holds one shard's optimizer state per GPU and the step its shard's update "
                   "and all-gathers (zero2/zero3: reduce-scattered buckets; zero3: each bucket gathered before the "
                   "forward and the backward pass use it)")
      ->check(CLI::IsMember(strategy_choices()));
  plan->add_option("--optimizer", o.request.optimizer,
                   "The update rule as run --optimizer trains with: adamw (default, as run), adam, adamax, "
                   "sgd_momentum, nag, or reference (the workload's, WORKLOADS.md): its state in the memory (two "
                   "buffers of the parameters' size for the Adam family, one for SGD momentum and NAG) and its "
                   "update in the step")
      ->check(CLI::IsMember(optimizer_choices()));
  plan->add_option("--framework", o.request.framework,
                   "Whose memory decides the largest batch: scalebench (its memory plan) or pytorch (PyTorch's "
                   "memory measured per workload, eager and compiled)")
      ->check(CLI::IsMember({"scalebench", "pytorch"}));
  plan->add_option("--memory", o.request.memory_gib,
                   "The card's memory in GiB instead of the database's (another memory size of the same chip)")
      ->check(CLI::Range(1.0, 1e5));
  plan->add_option("--pytorch-memory", o.pytorch_memory_path,
                   "PyTorch memory lines (default: src/plan/data/pytorch_memory.json, built in)");
  plan->add_flag("--table", o.table,
                 "The two tables (largest batch, throughput per GPU) for --gpu LIST x --workload LIST "
                 "(default: every GPU and workload)");
  plan->add_option("--gpus-sweep", o.gpus_sweep,
                   "Predict the scaling curve: a list of GPU counts such as 1,2,4,8, or auto (1, 2, 4, ... within a "
                   "node, the node, whole nodes, --gpus), as run --gpus-sweep measures it");
  plan->add_flag("--validate", o.validate,
                 "Predict each measured run (files, or the calibration's own measurements) "
                 "and print predicted vs measured with the error");
  plan->add_flag("--calibrate", o.calibrate,
                 "Refit the calibration from its measurements plus the files; writes the "
                 "new calibration JSON (--out)");
  plan->add_flag("--fresh", o.fresh, "With --calibrate: fit on the files alone, dropping the recorded measurements");
  plan->add_option("files", o.files, "scalebench run --json files (--validate, --calibrate)");
  plan->add_option("--calibration", o.calibration_path,
                   "Calibration file (default: src/plan/data/calibration.json, built in)");
  plan->add_option("--out", o.out_path, "Write to PATH instead of stdout");
  plan->add_flag("--markdown", o.markdown, "Markdown tables (--table, --validate)");
}

int run_plan_command(const CommandLine& command_line, ProcessGroup& group) {
  PlanCommandOptions options = command_line.plan;
  options.json_path = command_line.common.json_path;
  return run_plan(options, group.rank() == 0);
}

}  // namespace sb
