// `scalebench plan`: predictions for hardware you do not have, --table, --validate and --calibrate (run_plan,
// include/scalebench/plan.h). Reads no device and needs no MPI; its flags are src/cli/plan_command.cpp's.
#include <cstdio>

#include "scalebench/error.h"
#include "scalebench/plan_fit.h"
#include "scalebench/report.h"
#include "src/plan/plan_json.h"
#include "src/plan/plan_print.h"
#include "src/plan/pytorch_memory.h"
#include "src/plan/validate.h"
#include "scalebench/gpus_sweep.h"
#include "src/report/compare.h"

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

// --gpus-sweep: the prediction at every size k, filling rank 0's node first as run --gpus-sweep does (a node holds
// --gpus / --nodes GPUs), with the curve's table after each prediction's own text.
int run_sweep(const PlanCommandOptions& o, const Calibration& calibration, const PytorchMemoryTable& pytorch) {
  const PlanRequest& whole = o.request;
  if (whole.nodes < 1 || whole.gpus % whole.nodes != 0) {
    throw UsageError("plan --gpus-sweep: --gpus must be a multiple of --nodes");
  }
  const int per_node = whole.gpus / whole.nodes;
  const std::vector<int> sizes = resolve_sweep_sizes(parse_gpus_sweep(o.gpus_sweep), whole.gpus,
                                                     std::vector<int>(static_cast<size_t>(whole.nodes), per_node));
  Table curve;
  curve.title = "PREDICTED scaling curve: " + whole.workload + " on " + whole.gpu + " (" + std::to_string(per_node) +
                " per node)";
  curve.header = {"GPUs (k)", "nodes", "path", "step ms", "units/s total", "units/s per GPU", "E(k)"};
  curve.right_aligned.assign(curve.header.size(), true);
  nlohmann::json predictions = nlohmann::json::array();
  for (int k : sizes) {
    PlanRequest request = whole;
    request.gpus = k;
    request.nodes = (k + per_node - 1) / per_node;
    const PlanPrediction p = predict_plan(request, builtin_hardware_database(), calibration, &pytorch);
    predictions.push_back(prediction_json(p));
    char step[32], total[32], per_gpu[32], e[32];
    std::snprintf(step, sizeof step, "%.2f", k > 1 ? p.timeline.step_ms : p.timeline.solo_ms);
    std::snprintf(total, sizeof total, "%.0f", k > 1 ? p.dp_units_per_s_total : p.solo_units_per_s);
    std::snprintf(per_gpu, sizeof per_gpu, "%.0f", k > 1 ? p.dp_units_per_s_per_gpu : p.solo_units_per_s);
    std::snprintf(e, sizeof e, "%.1f%%", 100 * (k > 1 ? p.scaling_efficiency : 1.0));
    const std::string path = k == 1 ? "-" : request.nodes > 1 ? p.inter_fabric : p.intra_fabric;
    curve.rows.push_back({std::to_string(k), std::to_string(request.nodes), path, step, total, per_gpu, e});
  }
  const std::string text = "# scalebench plan --gpus-sweep — PREDICTED figures, not measurements\n# calibration: " +
                           calibration.provenance + "\n" +
                           (o.markdown ? tables_markdown({curve}) : tables_console({curve}));
  write_predictions(o.json_path, o.out_path, plan_document(predictions, calibration), text);
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
    for (const std::string& path : o.files) {
      for (RunMeasurement& run : measurements_from_result(path, db, o.request.fabric)) runs.push_back(std::move(run));
    }
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
    // The solo step and its profiled GEMM time calibrate compute too, where its update is the model's (AdamW's).
    if (run.optimizer != "adamw") continue;
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

int run_plan(const PlanCommandOptions& options, bool prints) {
  PlanCommandOptions o = options;
  o.request.overlap = !o.no_overlap;
  const int modes = o.table + o.validate + o.calibrate;
  if (modes > 1) throw UsageError("plan: --table, --validate and --calibrate exclude each other");
  if (!o.gpus_sweep.empty() && modes > 0) throw UsageError("plan: --gpus-sweep predicts one workload on one GPU");
  if (o.fresh && !o.calibrate) throw UsageError("plan: --fresh goes with --calibrate");
  if (!o.files.empty() && !o.validate && !o.calibrate) {
    throw UsageError("plan: result files are read by --validate or --calibrate only");
  }
  const Calibration calibration = load_calibration(o.calibration_path);
  const PytorchMemoryTable pytorch = load_pytorch_memory(o.pytorch_memory_path);
  if (!prints) return kExitOk;
  if (o.table) return run_table(o, calibration, pytorch, o.json_path);
  if (o.validate) return run_validate(o, calibration);
  if (o.calibrate) return run_calibrate(o, calibration);
  if (o.workloads.size() != 1) throw UsageError("plan: give one --workload (or --table for several)");
  if (o.gpus.size() != 1) throw UsageError("plan: give one --gpu (or --table for several)");
  o.request.workload = o.workloads.front();
  o.request.gpu = o.gpus.front();
  if (!o.gpus_sweep.empty()) return run_sweep(o, calibration, pytorch);
  const PlanPrediction prediction = predict_plan(o.request, builtin_hardware_database(), calibration, &pytorch);
  write_predictions(o.json_path, o.out_path,
                    plan_document(nlohmann::json::array({prediction_json(prediction)}), calibration),
                    prediction_text(prediction, calibration));
  return kExitOk;
}

}  // namespace sb
