// Calibration fits (include/scalebench/plan_fit.h).
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "scalebench/error.h"
#include "scalebench/plan_fit.h"
#include "scalebench/replica_plan.h"
#include "src/plan/paths.h"

namespace sb {
namespace {

// x in [lo, hi] with f(x) = target for f decreasing in x (times fall as efficiencies rise).
double bisect_decreasing(const std::function<double(double)>& f, double target, double lo, double hi) {
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) > target ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

struct WorkloadWork {
  std::vector<NodeWork> works;
  std::vector<bool> is_gemm;
  double gradient_bytes = 0;
  const GpuSpec* gpu = nullptr;
};

WorkloadWork work_of(const std::string& workload, const std::string& precision_text, int64_t batch,
                     const GpuSpec& gpu) {
  WorkloadWork out;
  out.gpu = &gpu;
  ReplicaPlanOptions options;
  options.workload = workload;
  options.precision = resolve_plan_precision(gpu, precision_text);
  options.batch = batch > 0 ? batch : find_workload(workload).info().default_batch;
  const ReplicaPlan replica = plan_replica_graph(options);
  out.works = node_work(replica.graph, gpu, options.precision);
  for (const Node& node : replica.graph.nodes()) out.is_gemm.push_back(node.op == "gemm");
  out.gradient_bytes = static_cast<double>(replica.plan.gradient_bytes);
  return out;
}

double predicted_ms(const WorkloadWork& w, const ComputeCalibration& c, bool gemm_only) {
  double ms = 0;
  for (size_t i = 0; i < w.works.size(); ++i) {
    if (!gemm_only || w.is_gemm[i]) ms += roofline_ms(w.works[i], *w.gpu, c);
  }
  if (!gemm_only) ms += optimizer_ms(w.gradient_bytes, kAdamwBytesPerGradientByte, *w.gpu, c);
  return ms;
}

std::string fabric_key(const FabricSpec& fabric) { return fabric.gbps ? fabric_kind_name(fabric.kind) : fabric.name; }

}  // namespace

PlanRequest request_for(const RunMeasurement& run) {
  PlanRequest request;
  request.workload = run.workload;
  request.gpu = run.gpu;
  request.gpus = run.gpus;
  request.nodes = run.nodes;
  if (run.nodes > 1) {
    request.fabric = run.fabric;
  } else {
    request.intra_fabric = run.fabric;
  }
  request.precision = run.precision;
  request.batch = run.batch;
  request.bucket_mb = run.bucket_mb;
  request.grad_dtype = run.grad_dtype;
  request.overlap = run.overlap;
  request.strategy = run.strategy;
  request.optimizer = run.optimizer;
  return request;
}

double fit_unaligned_gemm_efficiency(const std::vector<UnalignedGemmMeasurement>& measurements,
                                     const HardwareDatabase& db) {
  double flops = 0, ideal_flops = 0;  // measured work, and what the peak would do in the measured time
  for (const UnalignedGemmMeasurement& m : measurements) {
    if (m.precision != "bf16" && m.precision != "fp16") {
      throw UsageError("unaligned GEMM measurement of " + m.workload + " (" + m.node + "): precision '" + m.precision +
                       "' (16-bit GEMMs only)");
    }
    const GpuSpec& gpu = db.gpu(m.gpu);
    const double peak = product_peak_tflops(gpu, m.precision == "fp16" ? DType::kFloat16 : DType::kBFloat16,
                                            parse_precision(m.precision));
    flops += 2 * m.m * m.n * m.k;
    ideal_flops += m.ms * 1e-3 * peak * 1e12;
  }
  return ideal_flops > 0 ? flops / ideal_flops : 0;
}

ComputeCalibration fit_compute(const std::vector<ComputeMeasurement>& measurements,
                               const std::vector<UnalignedGemmMeasurement>& unaligned, const HardwareDatabase& db,
                               double memory_efficiency) {
  if (measurements.empty()) throw UsageError("--calibrate: no compute measurements");
  std::vector<WorkloadWork> works;
  double gemm_measured = 0;
  for (const ComputeMeasurement& m : measurements) {
    works.push_back(work_of(m.workload, m.precision, m.batch, db.gpu(m.gpu)));
    if (m.gemm_ms) gemm_measured += *m.gemm_ms;
  }
  ComputeCalibration c{0.7, memory_efficiency, 0, "", fit_unaligned_gemm_efficiency(unaligned, db)};
  for (int round = 0; round < 8; ++round) {
    if (gemm_measured > 0) {
      c.gemm_efficiency = bisect_decreasing(
          [&](double e) {
            ComputeCalibration t = c;
            t.gemm_efficiency = e;
            double ms = 0;
            for (size_t i = 0; i < works.size(); ++i) {
              if (measurements[i].gemm_ms) ms += predicted_ms(works[i], t, true);
            }
            return ms;
          },
          gemm_measured, 0.01, 1.0);
    }
    // The step is a + n·overhead per workload (n nodes plus the optimizer's kernel): least relative squares.
    double numerator = 0, denominator = 0;
    for (size_t i = 0; i < works.size(); ++i) {
      ComputeCalibration zero = c;
      zero.node_overhead_us = 0;
      const double a = predicted_ms(works[i], zero, false);
      const double n = 1e-3 * static_cast<double>(works[i].works.size() + 1);
      const double m = measurements[i].step_ms;
      numerator += (n / m) * (1 - a / m);
      denominator += (n / m) * (n / m);
    }
    c.node_overhead_us = std::max(0.0, numerator / denominator);
  }
  return c;
}

std::map<std::string, FabricCalibration> fit_fabrics(const std::vector<RunMeasurement>& runs,
                                                     const HardwareDatabase& db, const Calibration& base) {
  std::map<std::string, std::vector<const RunMeasurement*>> groups;
  for (const RunMeasurement& run : runs) {
    if (run.used_in_fit && run.gpus > 1) groups[fabric_key(db.fabric(run.fabric))].push_back(&run);
  }
  std::map<std::string, FabricCalibration> fitted;
  for (const auto& [key, members] : groups) {
    const FabricSpec& fabric = db.fabric(members.front()->fabric);
    // Each run's timeline inputs at a unit bus bandwidth; the all-reduce times are recomputed per trial.
    struct Prepared {
      const RunMeasurement* run;
      PlanPrediction prediction;
      std::vector<double> bucket_bytes;
      TimelineInput input;
      int first_backward = 0;
    };
    std::vector<Prepared> prepared;
    Calibration trial = base;
    FabricCalibration unit;
    unit.busbw_gbps = 1;
    trial.fabrics[key] = unit;
    trial.fabrics[fabric.name] = unit;
    for (const RunMeasurement* run : members) {
      Prepared p{run, predict_plan(request_for(*run), db, trial), {}, {}, 0};
      // Rebuild the inputs the prediction used, scaled to the measured solo step.
      ReplicaPlanOptions options;
      options.workload = run->workload;
      options.precision = p.prediction.precision;
      options.batch = p.prediction.batch;
      options.bucket_bytes = static_cast<uint64_t>(run->bucket_mb * (1 << 20));
      options.ranks = run->gpus;
      options.overlap = run->overlap;
      const ReplicaPlan replica = plan_replica_graph(options);
      const double scale = run->solo_step_ms / p.prediction.timeline.solo_ms;
      for (const NodeWork& w : node_work(replica.graph, *p.prediction.gpu, options.precision)) {
        p.input.node_ms.push_back(scale * roofline_ms(w, *p.prediction.gpu, base.compute));
      }
      for (size_t i = 0; i < replica.graph.nodes().size(); ++i) {
        if (replica.graph.nodes()[i].backward) {
          p.first_backward = static_cast<int>(i);
          break;
        }
      }
      std::vector<GradientBucket> buckets = replica.plan.buckets;
      std::stable_sort(buckets.begin(), buckets.end(), [](const GradientBucket& a, const GradientBucket& b) {
        return a.ready_after_node < b.ready_after_node;
      });
      const double wire = run->grad_dtype == "bf16" ? 0.5 : 1.0;
      for (const GradientBucket& b : buckets) {
        p.bucket_bytes.push_back(static_cast<double>(b.bytes) * wire);
        p.input.bucket_ready_node.push_back(b.ready_after_node);
        p.input.bucket_update_ms.push_back(scale * optimizer_ms(static_cast<double>(b.bytes),
                                                                kAdamwBytesPerGradientByte, *p.prediction.gpu,
                                                                base.compute));
      }
      p.input.whole_update_ms = scale * p.prediction.timeline.optimizer_ms;
      p.input.overlap = run->overlap;
      p.input.update_by_bucket = run->overlap && options.precision != Precision::kFp16;
      prepared.push_back(std::move(p));
    }
    auto comm_ms = [&](const Prepared& p, double busbw) {
      CommPath path = p.prediction.path;
      path.busbw_gbps = busbw;
      std::vector<double> ms;
      for (double bytes : p.bucket_bytes) ms.push_back(1e-3 * all_reduce_cost(path, bytes, base.latency).us());
      return ms;
    };
    double comm_measured = 0;
    for (const Prepared& p : prepared) comm_measured += p.run->comm_step_ms.value_or(0);
    if (comm_measured <= 0) throw UsageError("--calibrate: fabric '" + key + "' has no comm-phase time to fit");
    const double busbw = bisect_decreasing(
        [&](double b) {
          double ms = 0;
          for (const Prepared& p : prepared) {
            if (!p.run->comm_step_ms) continue;
            for (double x : comm_ms(p, b)) ms += x;
          }
          return ms;
        },
        comm_measured, 0.01, 5000);
    FabricCalibration result;
    if (fabric.gbps) {
      result.bus_efficiency = busbw / *fabric.gbps;
    } else {
      result.busbw_gbps = busbw;
    }
    for (Prepared& p : prepared) p.input.bucket_comm_ms = comm_ms(p, busbw);
    // Ties (a flat error, as on a path where communication dominates) keep the first point in this order: no
    // interference (rate 1, dilation 0) unless the measurements ask for it. Improvements below 1e-6 count as ties.
    double best_error = std::numeric_limits<double>::infinity();
    for (int r = 100; r >= 5; --r) {
      for (int d = 0; d <= 200; ++d) {
        double error = 0;
        for (Prepared& p : prepared) {
          p.input.in_training_rate = 0.01 * r;
          p.input.dilation = 0.01 * d;
          const double e = simulate_step(p.input, p.first_backward).step_ms / p.run->dp_step_ms - 1;
          error += e * e;
        }
        if (error < best_error * (1 - 1e-6)) {
          best_error = error;
          result.in_training_rate = 0.01 * r;
          result.dilation = 0.01 * d;
        }
      }
    }
    std::string labels;
    for (const Prepared& p : prepared) labels += (labels.empty() ? "" : ", ") + p.run->label;
    result.source = "fit (scalebench plan --calibrate) of measurements.runs: " + labels;
    fitted[key] = result;
  }
  return fitted;
}

std::string calibration_json(const Calibration& c) {
  using nlohmann::json;
  json fabrics = json::object();
  for (const auto& [key, f] : c.fabrics) {
    json entry = {{"in_training_rate", f.in_training_rate}, {"dilation", f.dilation}, {"source", f.source}};
    if (f.bus_efficiency) entry["bus_efficiency"] = *f.bus_efficiency;
    if (f.busbw_gbps) entry["busbw_gbps"] = *f.busbw_gbps;
    if (f.borrowed) entry["borrowed"] = true;
    fabrics[key] = entry;
  }
  json compute_rows = json::array();
  for (const ComputeMeasurement& m : c.compute_measurements) {
    compute_rows.push_back({{"workload", m.workload},
                            {"gpu", m.gpu},
                            {"precision", m.precision},
                            {"batch", m.batch > 0 ? json(m.batch) : json(nullptr)},
                            {"gemm_ms", m.gemm_ms ? json(*m.gemm_ms) : json(nullptr)},
                            {"step_ms", m.step_ms},
                            {"source", m.source}});
  }
  json unaligned_rows = json::array();
  for (const UnalignedGemmMeasurement& m : c.unaligned_gemm_measurements) {
    unaligned_rows.push_back({{"workload", m.workload}, {"gpu", m.gpu}, {"precision", m.precision}, {"node", m.node},
                              {"m", m.m}, {"n", m.n}, {"k", m.k}, {"ms", m.ms}, {"source", m.source}});
  }
  json run_rows = json::array();
  for (const RunMeasurement& m : c.run_measurements) {
    run_rows.push_back({{"label", m.label},
                        {"workload", m.workload},
                        {"gpu", m.gpu},
                        {"gpus", m.gpus},
                        {"nodes", m.nodes},
                        {"fabric", m.fabric},
                        {"precision", m.precision},
                        {"grad_dtype", m.grad_dtype},
                        {"strategy", m.strategy},
                        {"optimizer", m.optimizer},
                        {"batch", m.batch > 0 ? json(m.batch) : json(nullptr)},
                        {"overlap", m.overlap},
                        {"bucket_mb", m.bucket_mb},
                        {"solo_step_ms", m.solo_step_ms},
                        {"comm_step_ms", m.comm_step_ms ? json(*m.comm_step_ms) : json(nullptr)},
                        {"dp_step_ms", m.dp_step_ms},
                        {"scaling_efficiency", m.scaling_efficiency ? json(*m.scaling_efficiency) : json(nullptr)},
                        {"used_in_fit", m.used_in_fit},
                        {"source", m.source}});
  }
  const LatencyModel& l = c.latency;
  json doc = {
      {"schema_version", 1},
      {"provenance", c.provenance},
      {"latency",
       {{"ring_base_us", l.ring_base_us},
        {"ring_hop_us", {{"nvlink", l.ring_hop_nvlink_us}, {"pci", l.ring_hop_pci_us}, {"net", l.ring_hop_net_us}}},
        {"tree_hop_us", l.tree_hop_us},
        {"tree_bandwidth_factor", l.tree_bandwidth_factor},
        {"source", l.source}}},
      {"compute",
       {{"gemm_efficiency", c.compute.gemm_efficiency},
        {"memory_efficiency", c.compute.memory_efficiency},
        {"memory_efficiency_source", c.compute.memory_efficiency_source},
        {"node_overhead_us", c.compute.node_overhead_us},
        {"source", "gemm_efficiency and node_overhead_us: fit (scalebench plan --calibrate) of measurements.compute"
                   "; unaligned_gemm_efficiency: the FLOPs of measurements.unaligned_gemms over their time at the "
                   "GPU's peak"}}},
      {"fabrics", fabrics},
      {"measurements", {{"compute", compute_rows}, {"runs", run_rows}}}};
  if (c.compute.unaligned_gemm_efficiency > 0) {
    doc["compute"]["unaligned_gemm_efficiency"] = c.compute.unaligned_gemm_efficiency;
    doc["measurements"]["unaligned_gemms"] = unaligned_rows;
  }
  return doc.dump(2) + "\n";
}

}  // namespace sb
