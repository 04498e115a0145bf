// Measured runs against the model (src/plan/validate.h).
#include "src/plan/validate.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "scalebench/error.h"
#include "scalebench/plan_fit.h"
#include "src/plan/paths.h"
#include "src/report/compare.h"

namespace sb {
namespace {

std::string fabric_from_transport(const std::string& transport, int hosts, const GpuSpec& gpu, int per_node,
                                  const std::string& path) {
  if (transport.find("P2P") != std::string::npos) {
    if (!gpu.nvlink_fabric.empty() && per_node <= gpu.nvlink_max_gpus) return gpu.nvlink_fabric;
    return "pcie" + std::to_string(gpu.pcie_gen) + "-p2p";
  }
  if (transport.find("SHM") != std::string::npos) return "pcie" + std::to_string(gpu.pcie_gen) + "-host";
  if (transport.find("NET/Socket") != std::string::npos && hosts == 1) return "tcp-loopback";
  if (transport.find("NET/IB") != std::string::npos) return "ib-ndr";
  throw UsageError(path + ": cannot tell the fabric from transport '" + transport + "'; give --fabric");
}

std::string cell(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string signed_percent(double predicted, double measured) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", 100.0 * (predicted / measured - 1));
  return text;
}

}  // namespace

RunMeasurement measurement_from_result(const std::string& path, const HardwareDatabase& db,
                                       const std::string& fabric_override) {
  const ResultFile file = load_result_file(path);
  if (file.kind != ResultKind::kRun) throw UsageError(path + ": not a `scalebench run` result");
  const RunSummary& run = file.run;
  if (run.status != "ok") throw UsageError(path + ": the run's status is '" + run.status + "'");
  if (!run.solo.ran) throw UsageError(path + ": no solo phase (the model predicts from it)");
  if (run.scale != "full") throw UsageError(path + ": scale '" + run.scale + "' (plan models the full graphs)");
  // Fields compare does not read: hosts and bucket size.
  std::ifstream stream(path);
  std::stringstream text;
  text << stream.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, false);
  RunMeasurement m;
  m.label = path;
  m.source = path;
  m.workload = run.workload;
  m.gpu = db.gpu(file.device_name).name;
  m.gpus = file.nranks;
  m.nodes = 1;
  if (doc.contains("context") && doc["context"].contains("topology") && doc["context"]["topology"].contains("hosts") &&
      doc["context"]["topology"]["hosts"].is_number_integer()) {
    m.nodes = doc["context"]["topology"]["hosts"].get<int>();
  }
  if (doc.contains("config") && doc["config"].contains("bucket_mb") && doc["config"]["bucket_mb"].is_number()) {
    m.bucket_mb = doc["config"]["bucket_mb"].get<double>();
  }
  m.precision = run.precision;
  m.grad_dtype = run.grad_dtype;
  m.strategy = run.strategy;
  // The update rule the run trained with (files without it: run's default, AdamW).
  if (doc.contains("config") && doc["config"].contains("optimizer") && doc["config"]["optimizer"].is_object() &&
      doc["config"]["optimizer"].contains("kind") && doc["config"]["optimizer"]["kind"].is_string()) {
    m.optimizer = optimizer_name(parse_optimizer_kind(doc["config"]["optimizer"]["kind"].get<std::string>()));
  }
  m.overlap = run.overlap;
  m.batch = run.batch_per_rank;
  m.solo_step_ms = run.solo.step_ms_p50;
  m.dp_step_ms = run.dp.ran ? run.dp.step_ms_p50 : run.solo.step_ms_p50;
  if (run.comm.ran) m.comm_step_ms = run.comm.step_ms_p50;
  m.scaling_efficiency = run.scaling_efficiency;
  // The fabric fit takes the trainer's default configuration only; bf16 on the wire, --no-overlap, sharded and
  // non-AdamW runs are predicted and shown, not fitted (over NVLink a bf16 wire does not behave like half the bytes:
  // PERFORMANCE.md; the fit's step is ddp's all-reduces and AdamW's update).
  m.used_in_fit = m.grad_dtype == "fp32" && m.overlap && m.strategy == "ddp" && m.optimizer == "adamw";
  if (m.gpus > 1 && !run.dp.ran) throw UsageError(path + ": no dp phase to compare with");
  const GpuSpec& gpu = db.gpu(m.gpu);
  m.fabric = !fabric_override.empty() ? fabric_override
             : m.gpus > 1 ? fabric_from_transport(file.transport, m.nodes, gpu, m.gpus / std::max(1, m.nodes), path)
                          : default_intra_fabric(gpu, 1);
  return m;
}

std::vector<RunMeasurement> measurements_from_result(const std::string& path, const HardwareDatabase& db,
                                                     const std::string& fabric_override) {
  std::vector<RunMeasurement> measurements{measurement_from_result(path, db, fabric_override)};
  const RunMeasurement& whole = measurements.front();
  const ResultFile file = load_result_file(path);
  for (const RunSummary::SweepFigures& point : file.run.sweep) {
    if (point.gpus <= 1 || point.gpus >= whole.gpus || !point.measured || !point.step_ms_p50) continue;
    RunMeasurement m = whole;
    m.label = path + " k=" + std::to_string(point.gpus);
    m.gpus = point.gpus;
    m.dp_step_ms = *point.step_ms_p50;
    m.comm_step_ms.reset();
    m.scaling_efficiency = point.efficiency;
    m.used_in_fit = false;
    if (point.link != "network" && whole.nodes > 1) {  // within one node of a multi-node job
      m.nodes = 1;
      if (fabric_override.empty()) m.fabric = default_intra_fabric(db.gpu(m.gpu), m.gpus);
    }
    measurements.push_back(m);
  }
  return measurements;
}

std::vector<ValidationRow> validate_runs(const std::vector<RunMeasurement>& runs, const HardwareDatabase& db,
                                         const Calibration& calibration) {
  std::vector<ValidationRow> rows;
  for (const RunMeasurement& run : runs) {
    ValidationRow row;
    row.measured = run;
    row.predicted = predict_plan(request_for(run), db, calibration);
    row.measured_units_per_s_per_gpu = row.predicted.units_per_step / (run.dp_step_ms * 1e-3);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string validation_text(const std::vector<ValidationRow>& rows, const std::string& title, bool markdown) {
  Table table;
  table.title = title;
  table.header = {"run", "GPUs",        "solo ms pred", "meas", "err",    "dp ms pred", "meas",
                  "err", "/s/GPU pred", "meas",         "err",  "E pred", "meas",       "diff (points)"};
  table.right_aligned.assign(table.header.size(), true);
  table.right_aligned[0] = false;
  for (const ValidationRow& r : rows) {
    const PlanPrediction& p = r.predicted;
    const RunMeasurement& m = r.measured;
    const double e_measured = m.solo_step_ms / m.dp_step_ms;
    table.rows.push_back({m.label, std::to_string(m.gpus), cell(p.timeline.solo_ms, 2), cell(m.solo_step_ms, 2),
                          signed_percent(p.timeline.solo_ms, m.solo_step_ms), cell(p.timeline.step_ms, 2),
                          cell(m.dp_step_ms, 2), signed_percent(p.timeline.step_ms, m.dp_step_ms),
                          cell(p.dp_units_per_s_per_gpu, 0), cell(r.measured_units_per_s_per_gpu, 0),
                          signed_percent(p.dp_units_per_s_per_gpu, r.measured_units_per_s_per_gpu),
                          cell(100 * p.scaling_efficiency, 1) + "%", cell(100 * e_measured, 1) + "%",
                          cell(100 * (p.scaling_efficiency - e_measured), 1)});
  }
  return markdown ? tables_markdown({table}) : tables_console({table});
}

}  // namespace sb

namespace sb {

std::optional<double> gemm_ms_of_result(const std::string& path) {
  std::ifstream stream(path);
  std::stringstream text;
  text << stream.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (!doc.is_object() || !doc.contains("op_ms") || !doc["op_ms"].is_array()) return std::nullopt;
  double ms = 0;
  bool found = false;
  for (const nlohmann::json& entry : doc["op_ms"]) {
    if (!entry.is_object() || !entry.contains("op") || !entry.contains("ms") || !entry["ms"].is_number()) continue;
    const std::string op = entry["op"].is_string() ? entry["op"].get<std::string>() : "";
    if (op == "gemm" || op == "gemm (backward)") {
      ms += entry["ms"].get<double>();
      found = true;
    }
  }
  return found ? std::optional<double>(ms) : std::nullopt;
}

}  // namespace sb
