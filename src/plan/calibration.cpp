// Reading src/plan/data/calibration.json (include/scalebench/plan_calibration.h).
#include <fstream>
#include <sstream>

#include "scalebench/error.h"
#include "scalebench/optimizer.h"
#include "scalebench/plan_calibration.h"
#include "scalebench/strategy.h"
#include "src/plan/json_fields.h"

namespace sb {
namespace {

using detail::JsonFields;

double fraction(const JsonFields& row, const std::string& key) {
  const double value = row.positive(key);
  if (value > 1) row.fail("\"" + row.where(key) + "\" is a fraction and must be at most 1");
  return value;
}

FabricCalibration read_fabric(const JsonFields& row) {
  FabricCalibration fabric;
  if (row.has("bus_efficiency")) fabric.bus_efficiency = fraction(row, "bus_efficiency");
  fabric.busbw_gbps = row.optional_positive("busbw_gbps");
  if (fabric.bus_efficiency.has_value() == fabric.busbw_gbps.has_value()) {
    row.fail("\"" + row.where("") + "\" needs exactly one of bus_efficiency and busbw_gbps");
  }
  fabric.in_training_rate = fraction(row, "in_training_rate");
  fabric.dilation = row.number("dilation");
  if (fabric.dilation < 0) row.fail("\"" + row.where("dilation") + "\" must not be negative");
  fabric.source = row.string("source");
  fabric.borrowed = row.boolean_or("borrowed", false);
  return fabric;
}

ComputeMeasurement read_compute_measurement(const JsonFields& row) {
  ComputeMeasurement m;
  m.workload = row.string("workload");
  m.gpu = row.string("gpu");
  m.precision = row.string("precision");
  m.batch = row.has("batch") && !row.require("batch").is_null() ? row.integer("batch") : 0;
  m.gemm_ms = row.optional_positive("gemm_ms");
  m.step_ms = row.positive("step_ms");
  m.source = row.string("source");
  return m;
}

UnalignedGemmMeasurement read_unaligned_gemm(const JsonFields& row) {
  UnalignedGemmMeasurement m;
  m.workload = row.string("workload");
  m.gpu = row.string("gpu");
  m.precision = row.string("precision");
  m.node = row.string("node");
  m.m = row.positive("m");
  m.n = row.positive("n");
  m.k = row.positive("k");
  m.ms = row.positive("ms");
  m.source = row.string("source");
  return m;
}

RunMeasurement read_run_measurement(const JsonFields& row) {
  RunMeasurement m;
  m.label = row.string("label");
  m.workload = row.string("workload");
  m.gpu = row.string("gpu");
  m.fabric = row.string("fabric");
  m.precision = row.string("precision");
  m.grad_dtype = row.string_or("grad_dtype", "fp32");
  m.strategy = row.string_or("strategy", "ddp");
  m.optimizer = row.string_or("optimizer", "adamw");
  try {  // run's names, as its --strategy and --optimizer parse them
    parse_strategy(m.strategy);
  } catch (const UsageError& e) {
    row.fail(row.where("strategy") + " must be a run --strategy: " + e.what());
  }
  try {
    parse_optimizer_kind(m.optimizer);
  } catch (const UsageError& e) {
    row.fail(row.where("optimizer") + " must be a run --optimizer kind: " + e.what());
  }
  m.gpus = static_cast<int>(row.integer("gpus"));
  m.nodes = row.has("nodes") ? static_cast<int>(row.integer("nodes")) : 1;
  m.batch = row.has("batch") && !row.require("batch").is_null() ? row.integer("batch") : 0;
  m.overlap = row.boolean_or("overlap", true);
  m.bucket_mb = row.has("bucket_mb") ? row.positive("bucket_mb") : 25;
  m.solo_step_ms = row.positive("solo_step_ms");
  m.dp_step_ms = row.positive("dp_step_ms");
  m.comm_step_ms = row.optional_positive("comm_step_ms");
  m.scaling_efficiency = row.optional_positive("scaling_efficiency");
  m.used_in_fit = row.boolean_or("used_in_fit", true);
  m.source = row.string("source");
  return m;
}

}  // namespace

const FabricCalibration& Calibration::fabric(const FabricSpec& spec) const {
  auto found = fabrics.find(spec.name);
  if (found == fabrics.end()) found = fabrics.find(fabric_kind_name(spec.kind));
  if (found == fabrics.end()) {
    throw UsageError("the calibration has no entry for fabric '" + spec.name + "' or its kind '" +
                     fabric_kind_name(spec.kind) + "'");
  }
  return found->second;
}

Calibration parse_calibration(const std::string& text, const std::string& origin) {
  const nlohmann::json doc = detail::parse_json_document(text, origin);
  const JsonFields top(origin, doc);
  if (top.integer("schema_version") != 1) top.fail("schema_version must be 1");
  Calibration c;
  c.provenance = top.string("provenance");
  const JsonFields latency = top.object("latency");
  c.latency.ring_base_us = latency.positive("ring_base_us");
  const JsonFields hops = latency.object("ring_hop_us");
  c.latency.ring_hop_nvlink_us = hops.positive("nvlink");
  c.latency.ring_hop_pci_us = hops.positive("pci");
  c.latency.ring_hop_net_us = hops.positive("net");
  c.latency.tree_hop_us = latency.positive("tree_hop_us");
  c.latency.tree_bandwidth_factor = fraction(latency, "tree_bandwidth_factor");
  c.latency.source = latency.string("source");
  const JsonFields compute = top.object("compute");
  c.compute.gemm_efficiency = fraction(compute, "gemm_efficiency");
  c.compute.memory_efficiency = fraction(compute, "memory_efficiency");
  c.compute.memory_efficiency_source = compute.string("memory_efficiency_source");
  c.compute.node_overhead_us = compute.number("node_overhead_us");
  if (compute.has("unaligned_gemm_efficiency")) {
    c.compute.unaligned_gemm_efficiency = fraction(compute, "unaligned_gemm_efficiency");
  }
  if (c.compute.node_overhead_us < 0) compute.fail("\"compute.node_overhead_us\" must not be negative");
  const JsonFields fabrics = top.object("fabrics");
  for (const auto& item : fabrics.node().items()) {
    c.fabrics[item.key()] = read_fabric(fabrics.object(item.key()));
  }
  const JsonFields measurements = top.object("measurements");
  for (const JsonFields& row : measurements.array_of_objects("compute")) {
    c.compute_measurements.push_back(read_compute_measurement(row));
  }
  if (measurements.has("unaligned_gemms")) {
    for (const JsonFields& row : measurements.array_of_objects("unaligned_gemms")) {
      c.unaligned_gemm_measurements.push_back(read_unaligned_gemm(row));
    }
  }
  if ((c.compute.unaligned_gemm_efficiency > 0) != !c.unaligned_gemm_measurements.empty()) {
    compute.fail("\"compute.unaligned_gemm_efficiency\" goes with measurements.unaligned_gemms, and only with them");
  }
  for (const JsonFields& row : measurements.array_of_objects("runs")) {
    c.run_measurements.push_back(read_run_measurement(row));
  }
  return c;
}

Calibration load_calibration(const std::string& path) {
  if (path.empty()) return parse_calibration(builtin_calibration_json(), "calibration.json (built in)");
  std::ifstream file(path);
  if (!file) throw UsageError("cannot read calibration file '" + path + "'");
  std::stringstream text;
  text << file.rdbuf();
  return parse_calibration(text.str(), path);
}

}  // namespace sb
