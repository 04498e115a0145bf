// CLI11 definitions of `maxbatch` and `suite` (src/cli/command_line.h).
#include <CLI/CLI.hpp>

#include "src/cli/command_line.h"

#include "src/cli/number_options.h"

namespace sb {
namespace {

// The flags both commands share: what is planned and trained.
void add_plan_flags(CLI::App* command, MemoryOptions& options) {
  command->add_option("--scale", options.scale, "full, or tiny (same graph, small dimensions, for the CPU)")
      ->check(CLI::IsMember({"full", "tiny"}));
  command->add_option("--precision", options.precision, "auto (bf16 on GPUs, fp32 on the CPU), bf16, fp16, tf32, fp32")
      ->check(CLI::IsMember({"auto", "bf16", "fp16", "tf32", "fp32"}));
  command->add_option("--optimizer", options.optimizer,
                      "adamw (default), adam, adamax, sgd_momentum, nag, or reference (the workload's): its state is "
                      "part of the memory")
      ->check(CLI::IsMember(optimizer_choices()));
  command->add_flag("--recompute", options.recompute, "Recompute GELU outputs in the backward pass (less memory)");
  command->add_option("--memory", options.memory_gib,
                      "Answer for a card with this many GiB instead of this device (a prediction, labelled so); "
                      "required on the cpu device")
      ->check(finite_number(0, kMaxMemoryGib, true));
  command->add_flag("--no-verify", options.no_verify, "Predict only; do not train at the predicted batch and one up");
  command->add_option("--verify-steps", options.verify_steps, "Training steps per verification attempt (default 2)")
      ->check(whole_number(1, kMaxIterations));
  command->add_option("--bucket-mb", options.bucket_mb, "Gradient bucket size in MiB (default 25)")
      ->check(finite_number(0.001, 1e6));
  command->add_option("--seed", options.seed, "Seed of the synthetic data and weights")->check(unsigned_number(UINT64_MAX));
  command->add_option("--strategy", options.strategy,
                      "ddp (default), zero1, zero2 or zero3: the optimizer's state sharded across the job's ranks, "
                      "as run --strategy holds it in its data-parallel phases (zero2 and zero3 with the gaps that "
                      "lay each bucket out in equal chunks, and a shard of the gradients where that needs less; "
                      "zero3 a shard of the parameters too where that needs less); suite trains with it too")
      ->check(CLI::IsMember(strategy_choices()));
}

}  // namespace

void add_memory_commands(CLI::App& app, MemoryOptions& options) {
  CLI::App* maxbatch = app.add_subcommand(
      "maxbatch", "Largest per-GPU batch before out-of-memory: predicted from the memory plan, verified by training");
  maxbatch->add_option("-w,--workload", options.workloads, "Workload name (scalebench list), or all")
      ->required()
      ->expected(1);
  add_plan_flags(maxbatch, options);


  CLI::App* suite = app.add_subcommand(
      "suite", "For every workload: maxbatch, then solo and data-parallel throughput at the reference and the max "
               "batch; the guide's two tables");
  suite->add_option("--workloads", options.workloads, "Workloads, comma-separated (default: all)")->delimiter(',');
  suite->add_option("--out", options.out_dir, "Folder for one JSON per workload and suite.json (default results/suite)");
  suite->add_option("--warmup", options.warmup_steps, "Untimed steps per phase")->check(whole_number(0, kMaxIterations));
  suite->add_option("--steps", options.steps, "Timed steps per phase")->check(whole_number(1, kMaxIterations));
  suite->add_flag("--reference-only", options.reference_only,
                  "Train at the reference batch only (no maxbatch search, no max-batch run): the quick table");
  suite->add_option("--gpus-sweep", options.gpus_sweep,
                    "The reference-batch runs train at each size k as run --gpus-sweep does (a list such as 1,2,4, "
                    "or auto), for a table of units/s at every k")
      ->check(gpus_sweep_list());
  suite->add_flag("--concurrent-groups", options.concurrent_groups,
                  "With --gpus-sweep: N/k groups of k ranks train at once at every size k");
  add_plan_flags(suite, options);
}

std::string memory_canonical_form(const std::string& command, const MemoryOptions& o) {
  std::string text = ";workloads=";
  for (const std::string& name : o.workloads) text += name + ",";
  text += ";scale=" + o.scale + ";precision=" + o.precision + ";optimizer=" + o.optimizer +
          ";recompute=" + std::to_string(o.recompute) + ";memory=" + std::to_string(o.memory_gib) +
          ";no_verify=" + std::to_string(o.no_verify) + ";verify_steps=" + std::to_string(o.verify_steps) +
          ";bucket=" + std::to_string(o.bucket_mb) + ";seed=" + std::to_string(o.seed) + ";strategy=" + o.strategy;
  if (command == "suite") {
    text += ";out=" + o.out_dir + ";warmup=" + std::to_string(o.warmup_steps) +
            ";steps=" + std::to_string(o.steps) + ";reference_only=" + std::to_string(o.reference_only) +
            ";gpus_sweep=" + o.gpus_sweep + ";concurrent_groups=" + std::to_string(o.concurrent_groups);
  }
  return text;
}

}  // namespace sb
