// Per-node work and its roofline time on a GPU of the database (include/scalebench/plan_model.h).
#include <algorithm>
#include <cmath>
#include <set>

#include "scalebench/error.h"
#include "scalebench/plan_model.h"

namespace sb {
namespace {

double required(const std::optional<double>& value, const GpuSpec& gpu, const char* what) {
  if (!value) throw UsageError(gpu.name + " has no sourced " + what + " peak in the GPU database");
  return *value;
}

// The floating-point element type a node's products read: its first floating input (GEMM operand A).
DType operand_type(const Graph& graph, const Node& node) {
  for (TensorId id : node.inputs) {
    const DType type = graph.tensor(id).dtype;
    if (type == DType::kFloat32 || type == DType::kBFloat16 || type == DType::kFloat16) return type;
  }
  return DType::kFloat32;
}

}  // namespace

double product_peak_tflops(const GpuSpec& gpu, DType operand, Precision precision) {
  // The tensor cores where they multiply the operand's precision; else the CUDA cores' FP32 rate (cuBLAS computes
  // fp16 operands in FP32 where no tensor core takes them, as on Pascal). Peaks are quoted at the boost clock: the
  // board's sustained clock, where sourced, scales them.
  const char* tensor = operand == DType::kBFloat16  ? "bf16"
                       : operand == DType::kFloat16 ? "fp16"
                       : precision == Precision::kTf32 ? "tf32"
                                                       : "";
  double peak = 0;
  if (operand == DType::kBFloat16 && !gpu.tensor_cores_for("bf16")) {
    throw UsageError(gpu.name + " (" + gpu.architecture + ") has no bf16 tensor cores");
  }
  if (precision == Precision::kTf32 && operand == DType::kFloat32 && !gpu.tensor_cores_for("tf32")) {
    throw UsageError(gpu.name + " (" + gpu.architecture + ") has no TF32 tensor cores");
  }
  if (*tensor != '\0' && gpu.tensor_cores_for(tensor)) {
    peak = required(std::string(tensor) == "bf16"   ? gpu.bf16_tflops
                    : std::string(tensor) == "fp16" ? gpu.fp16_tflops
                                                    : gpu.tf32_tflops,
                    gpu, tensor);
  } else {
    peak = required(gpu.fp32_tflops, gpu, "fp32");
  }
  return peak * gpu.clock_scale();
}

bool gemm_is_unaligned(double m, double n, double k, bool transpose_a, bool transpose_b, int element_bytes) {
  const double lda = transpose_a ? m : k, ldb = transpose_b ? k : n, ldc = n;
  for (const double ld : {lda, ldb, ldc}) {
    if (std::fmod(ld * element_bytes, 16.0) != 0) return true;
  }
  return false;
}

std::vector<NodeWork> node_work(const Graph& graph, const GpuSpec& gpu, Precision precision) {
  std::vector<NodeWork> works;
  works.reserve(graph.nodes().size());
  for (const Node& node : graph.nodes()) {
    NodeWork work;
    const NodeAttributes& a = node.attributes;
    if (node.op == "gemm") {
      work.flops = 2.0 * a.at("m") * a.at("n") * a.at("k") * a.at("batch");
    } else if (a.count("matmul_flops") != 0) {
      work.flops = a.at("matmul_flops");
    }
    if (work.flops > 0) {
      const DType operand = operand_type(graph, node);
      work.peak_tflops = product_peak_tflops(gpu, operand, precision);
      // Measured for bf16 tensor-core GEMMs only (calibration.json, measurements.unaligned_gemms).
      const auto flag = [&](const char* key) { return a.count(key) != 0 && a.at(key) != 0; };
      work.unaligned = node.op == "gemm" && (operand == DType::kBFloat16 || operand == DType::kFloat16) &&
                       gemm_is_unaligned(a.at("m"), a.at("n"), a.at("k"), flag("transpose_a"), flag("transpose_b"), 2);
    }
    // A tensor read twice by one node (x · x) is read once from memory.
    std::set<TensorId> touched(node.inputs.begin(), node.inputs.end());
    touched.insert(node.outputs.begin(), node.outputs.end());
    for (TensorId id : touched) work.bytes += static_cast<double>(graph.tensor(id).bytes());
    works.push_back(work);
  }
  return works;
}

double roofline_ms(const NodeWork& work, const GpuSpec& gpu, const ComputeCalibration& compute) {
  const double efficiency = work.unaligned && compute.unaligned_gemm_efficiency > 0 ? compute.unaligned_gemm_efficiency
                                                                                     : compute.gemm_efficiency;
  const double compute_s = work.flops > 0 ? work.flops / (work.peak_tflops * 1e12 * efficiency) : 0;
  const double memory_s = work.bytes / (gpu.memory_bandwidth_gbps * 1e9 * compute.memory_efficiency);
  return 1e3 * std::max(compute_s, memory_s) + 1e-3 * compute.node_overhead_us;
}

double optimizer_ms(double gradient_bytes, double bytes_per_gradient_byte, const GpuSpec& gpu,
                    const ComputeCalibration& compute) {
  NodeWork work;
  work.bytes = gradient_bytes * bytes_per_gradient_byte;
  return roofline_ms(work, gpu, compute);
}

}  // namespace sb
