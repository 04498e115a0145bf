// `scalebench run --workload NAME` (the default subcommand): the trainer's phases on every rank, rank 0
// printing each phase as it finishes and writing JSON/CSV at the end, also after a failure (status
// "failed", whatever was measured kept). Exit 4 when --check finds the data-parallel invariant broken or
// the ranks' weights drift apart. A FaultGuard holds the result as of the last finished phase, so a stop
// signal or a stuck peer still leaves it on disk (src/cli/fault_guard.h).
#include <algorithm>
#include <cstdio>

#include "scalebench/error.h"
#include "scalebench/fault.h"
#include "scalebench/launch.h"
#include "scalebench/optimizer.h"
#include "scalebench/precision.h"
#include "scalebench/report.h"
#include "scalebench/training.h"
#include "scalebench/versions.h"
#include "src/cli/commands.h"
#include "src/cli/fault_guard.h"
#include "src/cli/gpus_sweep_plan.h"
#include "src/cli/progress_line.h"
#include "src/cli/run_context.h"
#include "src/cli/session.h"

namespace sb {
namespace {

std::string join_phases(const std::vector<std::string>& phases) {
  std::string text;
  for (const std::string& phase : phases) text += (text.empty() ? "" : ",") + phase;
  return text;
}

bool has_phase(const RunOptions& run, const char* phase) {
  return std::find(run.phases.begin(), run.phases.end(), phase) != run.phases.end();
}

TrainOptions train_options(const CommandLine& cl, const Device& device) {
  const RunOptions& run = cl.run;
  TrainOptions options;
  options.workload = run.workload;
  find_workload(options.workload);  // a bad name is the same usage error on every rank (before its reference)
  options.batch = run.batch;
  options.scale = parse_workload_scale(run.scale);
  options.warmup_steps = run.warmup_steps;
  options.steps = run.steps;
  options.min_time_seconds = run.min_time_seconds;
  options.seed = run.seed;
  options.recompute = run.recompute;
  options.optimizer = run.optimizer == "reference" ? find_workload(run.workload).reference_optimizer()
                                                   : default_optimizer(parse_optimizer_kind(run.optimizer));
  if (run.learning_rate > 0) options.optimizer.learning_rate = static_cast<float>(run.learning_rate);
  if (run.clip_norm >= 0) options.optimizer.max_grad_norm = static_cast<float>(run.clip_norm);
  const bool on_cuda = device.kind() == DeviceKind::kCuda;
  options.precision = run.precision == "auto" ? (on_cuda ? Precision::kBf16 : Precision::kFp32)
                                              : parse_precision(run.precision);
  options.solo = has_phase(run, "solo");
  options.comm = has_phase(run, "comm");
  options.dp = has_phase(run, "dp");
  options.bucket_bytes = static_cast<uint64_t>(run.bucket_mb * (1 << 20));
  options.bucket_auto = run.bucket_auto;
  options.overlap = !run.no_overlap;
  options.grad_dtype = run.grad_dtype == "bf16" ? DType::kBFloat16 : DType::kFloat32;
  options.comm_high_priority = run.comm_priority == "high";
  options.overlap_ctas = run.overlap_ctas;
  options.grad_registration = parse_buffer_registration(run.grad_registration);
  options.strategy = parse_strategy(run.strategy);
  options.embedding_grad = run.embedding_grad == "sparse"  ? EmbeddingGradMode::kSparse
                           : run.embedding_grad == "dense" ? EmbeddingGradMode::kDense
                                                           : EmbeddingGradMode::kAuto;
  options.cuda_graph = run.cuda_graph == "on"    ? CudaGraphMode::kOn
                       : run.cuda_graph == "off" ? CudaGraphMode::kOff
                                                 : CudaGraphMode::kAuto;
  if (options.cuda_graph == CudaGraphMode::kOn && !on_cuda) {  // before the header: nothing is measured
    throw UsageError("--cuda-graph on needs the cuda device (the cpu device runs each node when it is called)");
  }
  options.check = run.check;
  options.check_steps = run.check_steps;
  return options;
}

// The result files of the run as it stands: JSON, CSV, and the trace once the dp phase ran.
std::vector<OutputFile> training_outputs(const CommandLine& cl, const TrainingReport& report) {
  std::vector<OutputFile> outputs;
  if (!cl.common.json_path.empty()) {
    outputs.push_back({cl.common.json_path, training_report_json(report).dump(2) + "\n"});
  }
  if (!cl.common.csv_path.empty()) outputs.push_back({cl.common.csv_path, training_report_csv(report)});
  if (!cl.run.trace_path.empty() && report.dp.ran) {
    outputs.push_back({cl.run.trace_path, training_trace_json(report).dump() + "\n"});
  }
  return outputs;
}

// What the watchdog writes after a fault: the report as of now, marked failed with the fault's reason.
FaultGuard::Render snapshot(const CommandLine& cl, const TrainingReport& report) {
  return [cl, report](const std::string& error) {
    TrainingReport failed = report;
    failed.status = "failed";
    failed.error = error;
    return training_outputs(cl, failed);
  };
}

}  // namespace

int run_train_command(const CommandLine& cl, ProcessGroup& group) {
  const std::vector<std::string> paths{cl.common.json_path, cl.common.csv_path, cl.run.trace_path};
  agree_or_throw(group, group.rank() == 0 ? unwritable_output(paths, cl.common.force) : std::nullopt);
  Session session = open_session(group, cl.common);
  TrainingReport report;
  report.options = train_options(cl, *session.device);
  report.sweep_notice =
      plan_gpus_sweep(cl.run.gpus_sweep, cl.run.concurrent_groups, group, *session.device, report.options);
  describe_training_context(cl, group, session, report);
  const bool leader = group.rank() == 0;
  FaultGuard guard(leader, cl.common.timeout_seconds);
  guard.watch_peers(gather_peers(group), group.host());
  // Rank 1 keeps rank 0's JSON as of each finished phase, to write it if rank 0 dies (a file path only).
  const bool backup = group.rank() == 1 && !cl.common.json_path.empty() && cl.common.json_path != "-";
  // Machine-readable output on stdout moves the human-readable lines to stderr.
  std::FILE* console = (cl.common.json_path == "-" || cl.common.csv_path == "-") ? stderr : stdout;
  if (leader) {
    print_training_header(console, report);
    std::fflush(console);
    guard.update(snapshot(cl, report));
  }
  auto on_phase_done = [&](const std::string& phase) {
    if (phase == "comm" || phase == "dp") report.transport = gather_transport(group, *session.communicator);
    if (group.size() > 1 && !cl.common.json_path.empty() && cl.common.json_path != "-") {
      TrainingReport partial = report;
      partial.status = "failed";
      const std::string json = share_from_rank0(group, leader ? training_report_json(partial).dump(2) : "");
      if (backup) guard.hold_backup({cl.common.json_path, json});
    }
    if (!leader) return;
    guard.update(snapshot(cl, report));
    guard.checkpoint(phase + " phase");
    print_training_phase(console, report, phase);
    std::fflush(console);
  };
  if (leader) warn_full_scale_on_cpu(*session.device, report.options.scale, "run --workload " + cl.run.workload);
  const ProgressLine progress(leader, cl.run.warmup_steps + cl.run.steps);
  int exit_code = kExitOk;
  try {
    run_training(report.options, group, *session.device, *session.communicator, report, on_phase_done);
  } catch (const RuntimeFailure& failure) {
    report.status = "failed";
    report.error = failure.what();
    exit_code = kExitRuntime;
    // The roll call that named the silent ranks was held before the fault was thrown; this reads its answer.
    if (backup && communication_abandoned()) {
      const std::vector<int> silent = group.roll_call(0);
      if (std::find(silent.begin(), silent.end(), 0) != silent.end()) guard.write_backup(report.error);
    }
  }
  if (exit_code == kExitOk && !report.solo.ran && !report.comm.ran && !report.dp.ran && !report.check.ran) {
    // --phases dp on one rank, for instance: a run that measured nothing is not a success.
    report.status = "failed";
    report.error = "nothing measured: none of the phases " + join_phases(cl.run.phases) + " ran" +
                   (group.size() == 1 ? " (comm and dp need two or more ranks)" : "");
    exit_code = kExitRuntime;
  }
  if (exit_code == kExitOk && ((report.check.ran && !report.check.passed) ||
                               (report.dp.ran && !report.weights_identical_after_dp))) {
    report.status = "check_failed";
    report.error = report.check.ran && !report.check.passed
                       ? "--check: the data-parallel run does not match the one-rank run"
                       : "the ranks' weights differ after the data-parallel phase";
    exit_code = kExitCheckFailed;
  }
  if (leader) {
    print_training_footer(console, report);
    std::fflush(console);
    guard.write_final(training_outputs(cl, report));
    if (!cl.run.trace_path.empty() && !report.dp.ran) {
      std::fprintf(console, "# no trace written to %s: the dp phase did not run (it needs two or more ranks)\n",
                   cl.run.trace_path.c_str());
    }
  }
  if (exit_code == kExitRuntime) throw RuntimeFailure(report.error);
  if (exit_code == kExitCheckFailed) {
    std::fprintf(stderr, "scalebench: error: %s %s\n", diagnostic_prefix().c_str(), report.error.c_str());
  }
  return exit_code;
}

}  // namespace sb
