// The command line: CLI11 parses argv into one CommandLine (ARCHITECTURE.md step 1). Usage errors throw
// UsageError with one line naming the problem; --help prints and asks main to exit 0.
#pragma once

#include <string>
#include <vector>

#include "scalebench/bandwidth.h"
#include "scalebench/communicator.h"
#include "scalebench/plan.h"

namespace CLI {
class App;
}

namespace sb {

struct CommonOptions {
  std::string device = "auto";  // auto | cpu | cuda
  Backend backend = Backend::kAuto;
  bool allow_gpu_sharing = false;
  double timeout_seconds = 300;  // a collective or host agreement; one training step may take twice it
  std::string emulate = "none";  // none | host | socket (include/scalebench/emulation.h)
  bool force = false;            // overwrite existing output files
  std::string json_path;  // "" none, "-" stdout
  std::string csv_path;
};

struct RunOptions {
  std::string workload;
  int64_t batch = 0;  // 0: the workload's default
  std::string scale = "full";
  int warmup_steps = 3;
  int steps = 20;
  uint64_t seed = 1;
  double learning_rate = 0;         // 0: the optimizer's (1e-4, or the reference's with --optimizer reference)
  std::string optimizer = "adamw";  // adamw | adam | adamax | sgd_momentum | nag | reference (the workload's)
  double clip_norm = -1;            // global gradient-norm clipping; < 0: the optimizer's (reference: as it clips)
  std::string precision = "auto";  // auto | bf16 | tf32 | fp32 (include/scalebench/precision.h)
  bool recompute = false;          // GELU outputs recomputed in the backward pass (less memory)
  std::vector<std::string> phases{"solo", "comm", "dp"};
  double min_time_seconds = 0;     // > 0: each phase runs at least this long
  double bucket_mb = 25;           // gradient bucket size, MiB (PyTorch DDP's default)
  bool bucket_auto = false;        // --bucket-mb auto: chosen by measurement at run time
  bool no_overlap = false;         // all-reduce after the backward pass instead of during it
  std::string grad_dtype = "fp32";  // fp32 | bf16: the all-reduce's element type
  std::string embedding_grad = "auto";  // auto | sparse | dense: how a tied embedding table's gradient is reduced
  std::string comm_priority = "normal";  // high | normal: the gradient all-reduces' stream priority
  std::string grad_registration = "none";  // none | local | symmetric: the gradient buffers registered with NCCL
  std::string strategy = "ddp";  // ddp | zero1 | zero2: how data parallelism keeps the training state (issue 31)
  int overlap_ctas = 0;  // --overlap-ctas: CTAs of the all-reduces issued during the backward pass (0: NCCL's choice)
  std::string cuda_graph = "auto";       // auto | on | off: steps replayed from one captured graph (issue 25)
  std::string trace_path;          // "": none; the dp phase as a Chrome/Perfetto trace
  bool check = false;              // the data-parallel invariant (exit 4 when it fails)
  int check_steps = 3;
  std::string gpus_sweep;          // "": none; "auto" or "1,2,4": the scaling curve in one job (issue 29)
  bool concurrent_groups = false;  // with --gpus-sweep: N/k groups of k train at once
};

// `compare FILE...` and `report FILE` (one file): result files read back, tables printed.
struct CompareOptions {
  std::vector<std::string> files;
  std::string baseline;             // a column label; "" the first
  std::vector<std::string> labels;  // FILE=LABEL, one per --label
  bool markdown = false;
  bool csv = false;
  std::string out_path;  // "" stdout
  std::string html_path;  // "": none; the tables and charts as one self-contained HTML page
};

// `maxbatch` (one workload or all) and `suite` (several, with training runs at two batches).
struct MemoryOptions {
  std::vector<std::string> workloads;  // maxbatch --workload NAME|all; suite --workloads a,b (default: all)
  std::string scale = "full";
  std::string precision = "auto";
  std::string optimizer = "adamw";
  bool recompute = false;
  double memory_gib = 0;  // > 0: plan for a card with this much memory (a prediction)
  bool no_verify = false;
  int verify_steps = 2;
  double bucket_mb = 25;
  uint64_t seed = 1;
  std::string strategy = "ddp";  // maxbatch and suite: ddp | zero1 | zero2 (the optimizer's state sharded over the ranks)
  // suite only
  std::string out_dir = "results/suite";
  int warmup_steps = 3;
  int steps = 20;
  bool reference_only = false;  // train at the reference batch only: no maxbatch, no max-batch run
  std::string gpus_sweep;          // suite: the reference-batch runs sweep these sizes ("": none)
  bool concurrent_groups = false;
};

struct CommandLine {
  std::string command;  // "bandwidth", "topo"; empty when help was printed
  CommonOptions common;
  BandwidthOptions bandwidth;
  RunOptions run;
  CompareOptions compare;  // compare and report
  MemoryOptions memory;    // maxbatch and suite
  PlanCommandOptions plan;
  std::vector<std::string> argv;
  // Every option's effective value in a fixed order: hashed so that ranks can check they agree.
  std::string canonical;
  bool help_requested = false;
  std::string help_text;
};

CommandLine parse_command_line(int argc, const char* const* argv);

// The values run's --optimizer and --strategy take, for every command that takes them (run, maxbatch, suite, plan).
const std::vector<std::string>& optimizer_choices();
const std::vector<std::string>& strategy_choices();

// The maxbatch and suite subcommands (src/cli/memory_command_line.cpp), and their part of the canonical form.
void add_memory_commands(CLI::App& app, MemoryOptions& options);
// The plan subcommand (src/cli/plan_command.cpp).
void add_plan_command(CLI::App& app, PlanCommandOptions& options);
std::string memory_canonical_form(const std::string& command, const MemoryOptions& options);

}  // namespace sb
