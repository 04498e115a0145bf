// `scalebench plan`: predictions for hardware you do not have, --table, --validate and --calibrate. Reads no
// device and needs no MPI; every rank may call it, rank 0 prints.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "scalebench/error.h"
#include "scalebench/plan_fit.h"
#include "scalebench/report.h"
#include "src/cli/commands.h"
#include "src/plan/plan_json.h"
#include "src/plan/plan_options.h"
#include "src/plan/plan_print.h"
#include "src/plan/pytorch_memory.h"
#include "src/plan/validate.h"

namespace sb {
namespace {

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::fputs(text.c_str(), stdout);
  } else {
    write_text_file(path, text);
  }
}

// --json FILE writes the predictions beside the text; --json - writes them alone to stdout (as `list` does).
void write_predictions(const std::string& json_path, const std::string& out_path, const nlohmann::json& document,
                       const std::string& text) {
  if (!json_path.empty()) write_text_file(json_path, document.dump(2) + "\n");
  if (json_path != "-") write_output(out_path, text);
}

int run_table(const PlanCommandOptions& o, const Calibration& calibration, const PytorchMemoryTable& pytorch,
              const std::string& json_path) {
  const HardwareDatabase& db = builtin_hardware_database();
  std::vector<std::string> workloads = o.workloads, gpus = o.gpus;
  if (workloads.empty()) {
    for (const Workload* w : workload_registry()) workloads.push_back(w->info().name);
  }
  if (gpus.empty()) {
    for (const GpuSpec& g : db.gpus) gpus.push_back(g.name);
  }
  std::vector<PlanTableCell> cells;
  for (const std::string& workload : workloads) {
    find_workload(workload);  // an unknown name is a usage error, not a cell
    for (std::string& gpu : gpus) {
      gpu = db.gpu(gpu).name;
      PlanTableCell cell{workload, gpu, false, "", {}};
      PlanRequest request = o.request;
      request.workload = workload;
      request.gpu = gpu;
      try {
        cell.prediction = predict_plan(request, db, calibration, &pytorch);
        cell.ok = true;
      } catch (const UsageError& e) {
        cell.error = e.what();  // does not fit at the smallest batch, no peak for the precision...
      }
      cells.push_back(std::move(cell));
    }
  }
  std::string text = "# scalebench plan --table — every figure PREDICTED by the model, not measured\n# calibration: " +
                     calibration.provenance + "\n";
  text += plan_tables_text(workloads, gpus, cells, o.request.gpus, o.markdown, o.request.framework == "pytorch");
  text += "# *: at the largest batch that fits (the reference batch does not)\n";
  nlohmann::json predictions = nlohmann::json::array();
  for (const PlanTableCell& cell : cells) {
    if (cell.ok) predictions.push_back(prediction_json(cell.prediction));
  }
  write_predictions(json_path, o.out_path, plan_document(predictions, calibration), text);
  return kExitOk;
}

int run_validate(const PlanCommandOptions& o, const Calibration& calibration) {
  const HardwareDatabase& db = builtin_hardware_database();
  std::vector<RunMeasurement> runs;
  std::string title;
  if (o.files.empty()) {
    runs = calibration.run_measurements;
    title = "predicted vs measured: the calibration's own measurements (in-sample for the rows used in the fit)";
  } else {
    for (const std::string& path : o.files) runs.push_back(measurement_from_result(path, db, o.request.fabric));
    title = "predicted vs measured (files)";
  }
  std::string text =
      "# scalebench plan --validate — PREDICTED figures from the model beside MEASURED ones\n# calibration: " +
      calibration.provenance + "\n";
  text += validation_text(validate_runs(runs, db, calibration), title, o.markdown);
  for (const RunMeasurement& run : runs) {
    if (o.files.empty())
      text += "# " + run.label + ": " + run.source + (run.used_in_fit ? "" : " (not used in the fit)") + "\n";
  }
  write_output(o.out_path, text);
  return kExitOk;
}

// Refits compute and every measured fabric from the calibration's measurements plus the given run files, keeps
// the borrowed entries' bus figures and gives them the host-staged path's in-training behaviour.
int run_calibrate(const PlanCommandOptions& o, Calibration calibration) {
  const HardwareDatabase& db = builtin_hardware_database();
  if (o.fresh) {
    if (o.files.empty()) throw UsageError("plan --calibrate --fresh needs run files to fit on");
    calibration.compute_measurements.clear();
    calibration.unaligned_gemm_measurements.clear();
    calibration.run_measurements.clear();
    calibration.provenance = "fit of run files:";
  } else if (!o.files.empty()) {
    calibration.provenance += "; plus run files:";
  }
  for (const std::string& path : o.files) calibration.provenance += " " + path;
  for (const std::string& path : o.files) {
    RunMeasurement run = measurement_from_result(path, db, o.request.fabric);
    calibration.run_measurements.push_back(run);
    // The solo step and its profiled GEMM time calibrate compute too.
    ComputeMeasurement compute;
    compute.workload = run.workload;
    compute.gpu = run.gpu;
    compute.precision = run.precision;
    compute.batch = run.batch;
    compute.step_ms = run.solo_step_ms;
    compute.gemm_ms = gemm_ms_of_result(path);
    compute.source = path;
    calibration.compute_measurements.push_back(compute);
  }
  const std::string memory_source = calibration.compute.memory_efficiency_source;
  calibration.compute = fit_compute(calibration.compute_measurements, calibration.unaligned_gemm_measurements, db,
                                    calibration.compute.memory_efficiency);
  calibration.compute.memory_efficiency_source = memory_source;
  for (auto& [key, fitted] : fit_fabrics(calibration.run_measurements, db, calibration)) {
    calibration.fabrics[key] = fitted;
  }
  if (auto host = calibration.fabrics.find("host_staged"); host != calibration.fabrics.end()) {
    for (auto& [key, entry] : calibration.fabrics) {
      if (!entry.borrowed) continue;
      entry.in_training_rate = host->second.in_training_rate;
      entry.dilation = host->second.dilation;
    }
  }
  write_output(o.out_path, calibration_json(calibration));
  return kExitOk;
}

}  // namespace

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
  PlanCommandOptions o = command_line.plan;
  o.request.overlap = !o.no_overlap;
  const int modes = o.table + o.validate + o.calibrate;
  if (modes > 1) throw UsageError("plan: --table, --validate and --calibrate exclude each other");
  if (o.fresh && !o.calibrate) throw UsageError("plan: --fresh goes with --calibrate");
  if (!o.files.empty() && !o.validate && !o.calibrate) {
    throw UsageError("plan: result files are read by --validate or --calibrate only");
  }
  const Calibration calibration = load_calibration(o.calibration_path);
  const PytorchMemoryTable pytorch = load_pytorch_memory(o.pytorch_memory_path);
  if (group.rank() != 0) return kExitOk;
  if (o.table) return run_table(o, calibration, pytorch, command_line.common.json_path);
  if (o.validate) return run_validate(o, calibration);
  if (o.calibrate) return run_calibrate(o, calibration);
  if (o.workloads.size() != 1) throw UsageError("plan: give one --workload (or --table for several)");
  if (o.gpus.size() != 1) throw UsageError("plan: give one --gpu (or --table for several)");
  o.request.workload = o.workloads.front();
  o.request.gpu = o.gpus.front();
  const PlanPrediction prediction = predict_plan(o.request, builtin_hardware_database(), calibration, &pytorch);
  write_predictions(command_line.common.json_path, o.out_path,
                    plan_document(nlohmann::json::array({prediction_json(prediction)}), calibration),
                    prediction_text(prediction, calibration));
  return kExitOk;
}

}  // namespace sb
