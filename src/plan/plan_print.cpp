// Printing predictions (src/plan/plan_print.h). Tables go through the report printers of compare, so plan's
// console and Markdown look like every other scalebench table.
#include "src/plan/plan_print.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "scalebench/byte_text.h"
#include "scalebench/workload.h"
#include "src/report/compare.h"

namespace sb {
namespace {

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string path_text(const PlanPrediction& p) {
  if (p.request.gpus <= 1) return "one GPU, no communication";
  std::string text;
  if (!p.intra_fabric.empty()) text += p.intra_fabric + " inside " + (p.request.nodes > 1 ? "each node" : "the node");
  if (!p.inter_fabric.empty()) {
    text += (text.empty() ? "" : ", ") + p.inter_fabric + " x" + std::to_string(p.nics_per_node) +
            " adapters per node between " + std::to_string(p.request.nodes) + " nodes";
  }
  return text + format("; ring bus bandwidth %.1f GB/s", p.path.busbw_gbps);
}

}  // namespace

std::string significant_text(double value, int digits) {
  if (!(value > 0) || !std::isfinite(value)) return format("%.0f", value);
  const int magnitude = static_cast<int>(std::floor(std::log10(value)));  // 1234 -> 3
  const double unit = std::pow(10.0, magnitude - digits + 1);            // the last digit kept: 10 for 1234
  const double rounded = std::round(value / unit) * unit;
  const int decimals = std::max(0, digits - 1 - static_cast<int>(std::floor(std::log10(rounded))));
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, rounded);
  return text;
}

std::string prediction_text(const PlanPrediction& p, const Calibration& calibration) {
  const TimelineResult& t = p.timeline;
  std::string out;
  out +=
      "# scalebench plan — PREDICTED by a model (roofline + alpha-beta all-reduce + the trainer's overlap), not "
      "measured\n";
  out += "# calibration: " + calibration.provenance + "\n";
  out += "# workload " + p.request.workload + " (" + p.unit + "), " + p.gpu->name + " x" +
         std::to_string(p.request.gpus) +
         (p.request.nodes > 1 ? " on " + std::to_string(p.request.nodes) + " nodes" : "") + ", " +
         precision_name(p.precision) + ", batch " + std::to_string(p.batch) + " " + p.batch_unit + " per GPU" +
         (p.batch_reduced ? " (the reference batch does not fit)" : "") +
         (p.request.strategy != "ddp" ? ", strategy " + p.request.strategy : "") + ", optimizer " +
         optimizer_name(p.optimizer) + (p.request.optimizer == "reference" ? " (the workload's)" : "") + "\n";
  out += "# path: " + path_text(p) + "\n";
  Table memory;
  memory.title = "memory per GPU (predicted from the workload's memory plan; " + gib_text(p.capacity_bytes) +
                 " usable = " + format("%g", p.request.memory_gib > 0 ? p.request.memory_gib : p.gpu->memory_gb) +
                 " GiB - " + gib_text(kPlanDeviceReserveBytes) + " reserve)";
  memory.header = {"precision", "largest batch (" + p.batch_unit + ")", "needs at batch " + std::to_string(p.batch)};
  memory.right_aligned = {false, true, true};
  for (const PrecisionFit& fit : p.fits) {
    memory.rows.push_back({precision_name(fit.precision), std::to_string(fit.max_batch),
                           fit.precision == p.precision ? gib_text(p.needed_bytes) : ""});
  }
  if (!p.pytorch_fits.empty()) {
    memory.title += "; PyTorch from its memory measured at two or more batches";
    memory.header.front() = "framework, precision";
    for (std::vector<std::string>& row : memory.rows) row.front() = "scalebench, " + row.front();
    for (const FrameworkFit& fit : p.pytorch_fits) {
      memory.rows.push_back({"PyTorch " + fit.mode + ", " + fit.precision + " autocast", std::to_string(fit.max_batch), ""});
    }
  }
  Table step;
  step.title = "step time, ms (predicted)";
  step.header = {"forward", "backward",     "optimizer",     "solo step",           "all-reduces alone",
                 "dp step", "exposed comm", "backward done", "last all-reduce done"};
  step.right_aligned.assign(step.header.size(), true);
  step.rows.push_back({format("%.2f", t.forward_ms), format("%.2f", t.backward_ms), format("%.2f", t.optimizer_ms),
                       format("%.2f", t.solo_ms), format("%.2f", t.comm_alone_ms), format("%.2f", t.step_ms),
                       format("%.2f", t.step_ms - t.solo_ms), format("%.2f", t.nodes_done_ms),
                       format("%.2f", t.last_reduce_end_ms)});
  if (t.gathers_alone_ms > 0) {  // a sharded strategy: the reductions and the gathers apart
    step.header[4] = "reductions + gathers alone";
    step.header[8] = "last reduction done";
    step.header.push_back("gathers alone");
    step.header.push_back("last gather done");
    step.right_aligned.assign(step.header.size(), true);
    step.rows.back().push_back(format("%.2f", t.gathers_alone_ms));
    step.rows.back().push_back(format("%.2f", t.last_gather_end_ms));
  }
  Table rate;
  rate.title = "throughput (predicted)";
  rate.header = {p.unit + "/s per GPU alone",
                 p.unit + "/s per GPU data-parallel",
                 p.unit + "/s total",
                 "scaling efficiency E(" + std::to_string(p.request.gpus) + ")",
                 "buckets",
                 "MB on the wire per step"};
  rate.right_aligned.assign(rate.header.size(), true);
  rate.rows.push_back({significant_text(p.solo_units_per_s), significant_text(p.dp_units_per_s_per_gpu),
                       significant_text(p.dp_units_per_s_total), format("%.1f%%", 100 * p.scaling_efficiency),
                       std::to_string(p.buckets), format("%.1f", p.wire_bytes / 1e6)});
  out += tables_console({memory, step, rate});
  if (t.sub_steps > 1) {
    out += "# step: " + std::to_string(t.sub_steps) +
           " sub-steps, each its parts, a training pass, its own all-reduces and optimizer step; parts " +
           format("%.2f", t.parts_ms) + " ms per step, of which generation (decode loops) " +
           format("%.2f", t.generation_ms) + " ms; forward, backward, optimizer and all-reduces are summed over the "
           "sub-steps\n";
  }
  for (const FrameworkFit& fit : p.pytorch_fits) {
    out += "# PyTorch " + fit.mode + " memory measured on " + fit.measured_on +
           "; step times and throughput are scalebench's engine\n";
  }
  for (const std::string& note : p.notes) out += "# note: " + note + "\n";
  return out;
}

std::string plan_tables_text(const std::vector<std::string>& workloads, const std::vector<std::string>& gpus,
                             const std::vector<PlanTableCell>& cells, int gpu_count, bool markdown, bool pytorch) {
  Table batch, rate;
  batch.title = pytorch ? "Largest batch per GPU in PyTorch, in the workload's batch unit (predicted from its memory "
                          "measured at two or more batches; mode in brackets)"
                        : "Largest batch per GPU, in the workload's batch unit (predicted from the memory plan; "
                          "precision in brackets)";
  rate.title = gpu_count > 1
                   ? "Throughput per GPU, " + std::to_string(gpu_count) +
                         " GPUs data-parallel on the default path (predicted; units/s, E(N) in brackets)"
                   : "Throughput per GPU (predicted; units/s at the reference batch)";
  if (pytorch) rate.title += "; scalebench's engine: PyTorch's time is not modelled";
  batch.header = rate.header = {"workload"};
  batch.header.push_back("batch unit");
  rate.header.push_back("unit");
  for (const std::string& gpu : gpus) {
    batch.header.push_back(gpu);
    rate.header.push_back(gpu);
  }
  batch.right_aligned.assign(batch.header.size(), true);
  batch.right_aligned[0] = batch.right_aligned[1] = false;
  rate.right_aligned = batch.right_aligned;
  std::vector<std::string> reasons;
  auto not_available = [&](const std::string& reason) {
    size_t k = std::find(reasons.begin(), reasons.end(), reason) - reasons.begin();
    if (k == reasons.size()) reasons.push_back(reason);
    return "n/a (" + std::to_string(k + 1) + ")";
  };
  size_t i = 0;
  for (const std::string& workload : workloads) {
    const WorkloadInfo& info = find_workload(workload).info();
    std::vector<std::string> batch_row{workload, info.batch_unit_name()}, rate_row{workload, info.unit + "/s"};
    for (size_t g = 0; g < gpus.size(); ++g, ++i) {
      const PlanTableCell& c = cells[i];
      if (!c.ok) {
        batch_row.push_back(not_available(c.error));
        rate_row.push_back(batch_row.back());
        continue;
      }
      const PlanPrediction& p = c.prediction;
      int64_t largest = 0;
      for (const PrecisionFit& fit : p.fits) {
        if (fit.precision == p.precision) largest = fit.max_batch;
      }
      if (pytorch) {
        std::string text;
        for (const FrameworkFit& fit : p.pytorch_fits) {
          text += (text.empty() ? "" : ", ") + std::to_string(fit.max_batch) + " (" + fit.mode + ")";
        }
        batch_row.push_back(text);
      } else {
        batch_row.push_back(std::to_string(largest) + " (" + precision_name(p.precision) + ")");
      }
      std::string value = significant_text(p.dp_units_per_s_per_gpu) + (p.batch_reduced ? "*" : "");
      if (gpu_count > 1) value += format(" (%.0f%%)", 100 * p.scaling_efficiency);
      rate_row.push_back(value);
    }
    batch.rows.push_back(batch_row);
    rate.rows.push_back(rate_row);
  }
  std::string text = markdown ? tables_markdown({batch, rate}) : tables_console({batch, rate});
  for (size_t k = 0; k < reasons.size(); ++k) text += "# n/a (" + std::to_string(k + 1) + "): " + reasons[k] + "\n";
  return text;
}

}  // namespace sb
