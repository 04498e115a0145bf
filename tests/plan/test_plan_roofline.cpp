// Roofline per node and the peak each product runs at (include/scalebench/plan_model.h).
#include <gtest/gtest.h>

#include "scalebench/error.h"
#include "scalebench/plan_model.h"

namespace sb {
namespace {

GpuSpec test_gpu() {
  GpuSpec gpu;
  gpu.name = "test";
  gpu.memory_bandwidth_gbps = 1000;  // 1e12 B/s
  gpu.fp32_tflops = 10;
  gpu.tf32_tflops = 20;
  gpu.fp16_tflops = 40;
  gpu.bf16_tflops = 40;
  gpu.tensor_core_generation = 3;
  gpu.tensor_precisions = {"fp16", "bf16", "tf32"};
  return gpu;
}

TEST(PlanRoofline, ProductPeaksFollowOperandTypeAndPrecision) {
  GpuSpec gpu = test_gpu();
  EXPECT_EQ(product_peak_tflops(gpu, DType::kBFloat16, Precision::kBf16), 40);
  EXPECT_EQ(product_peak_tflops(gpu, DType::kFloat16, Precision::kFp16), 40);
  EXPECT_EQ(product_peak_tflops(gpu, DType::kFloat32, Precision::kTf32), 20);
  EXPECT_EQ(product_peak_tflops(gpu, DType::kFloat32, Precision::kBf16), 10);  // an fp32 head in a bf16 graph
  gpu.fp16_tflops.reset();                                                     // Pascal: fp16 operands at the FP32 rate
  gpu.bf16_tflops.reset();
  gpu.tensor_precisions.clear();
  EXPECT_EQ(product_peak_tflops(gpu, DType::kFloat16, Precision::kFp16), 10);
  EXPECT_THROW(product_peak_tflops(gpu, DType::kBFloat16, Precision::kBf16), UsageError);
}

// The tensor cores' precisions decide the peak, not a figure's presence: a tensor peak the cores do not take
// for that precision (a GPU row with TF32 listed but fp16 not) is not used, the CUDA cores' FP32 rate is.
TEST(PlanRoofline, WithoutTensorCoresForAPrecisionItsProductsRunOnCudaCores) {
  GpuSpec gpu = test_gpu();
  gpu.tensor_precisions = {"tf32"};
  EXPECT_EQ(product_peak_tflops(gpu, DType::kFloat16, Precision::kFp16), 10);
  EXPECT_EQ(product_peak_tflops(gpu, DType::kFloat32, Precision::kTf32), 20);
}

// Datasheet peaks are quoted at the boost clock; a board's sourced sustained clock scales them.
TEST(PlanRoofline, ASustainedClockScalesEveryComputePeak) {
  GpuSpec gpu = test_gpu();
  gpu.boost_clock_mhz = 2000;
  EXPECT_EQ(product_peak_tflops(gpu, DType::kBFloat16, Precision::kBf16), 40);  // no sustained clock: as quoted
  gpu.sustained_clock_mhz = 1500;
  EXPECT_DOUBLE_EQ(product_peak_tflops(gpu, DType::kBFloat16, Precision::kBf16), 30);
  EXPECT_DOUBLE_EQ(product_peak_tflops(gpu, DType::kFloat32, Precision::kFp32), 7.5);
}

TEST(PlanRoofline, TheSlowerOfComputeAndMemoryPlusOverhead) {
  const GpuSpec gpu = test_gpu();
  const ComputeCalibration c{0.5, 0.5, 3, ""};
  NodeWork gemm{2e9, 1e6, 40};  // 2 GFLOP at 20 TFLOP/s = 100 µs; 1 MB at 500 GB/s = 2 µs
  EXPECT_NEAR(roofline_ms(gemm, gpu, c), 0.1 + 0.003, 1e-12);
  NodeWork copy{0, 1e9, 0};  // 1 GB at 500 GB/s = 2 ms
  EXPECT_NEAR(roofline_ms(copy, gpu, c), 2.0 + 0.003, 1e-12);
  EXPECT_NEAR(optimizer_ms(1e8, 7, gpu, c), 7e8 / 5e11 * 1e3 + 0.003, 1e-12);
}

// cuBLASLt's tensor-core kernels need 16-byte aligned rows: the leading dimensions are what counts, not every
// extent (unsupMT's 7,975 target words are rows, never a row's length, in its hidden-size GEMMs).
TEST(PlanRoofline, AGemmIsUnalignedWhenALeadingDimensionIsNotA16ByteMultiple) {
  EXPECT_TRUE(gemm_is_unaligned(2560, 30522, 768, false, true, 2));    // bert_base's MLM decoder: C's rows
  EXPECT_TRUE(gemm_is_unaligned(2560, 768, 30522, false, false, 2));   // its input gradient: dY's rows
  EXPECT_TRUE(gemm_is_unaligned(30522, 768, 2560, true, false, 2));    // its weight gradient: dY read transposed
  EXPECT_FALSE(gemm_is_unaligned(16000, 32768, 1024, false, true, 2)); // transformer_big's output projection
  EXPECT_FALSE(gemm_is_unaligned(7975, 4096, 1024, false, true, 2));   // unsupMT's FFN: 7,975 rows, aligned rows
  EXPECT_FALSE(gemm_is_unaligned(4096, 1024, 7975, true, false, 2));   // and its weight gradient
  EXPECT_TRUE(gemm_is_unaligned(7975, 64699, 1024, false, true, 2));   // unsupMT's vocabulary projection
  EXPECT_TRUE(gemm_is_unaligned(2560, 30522, 768, false, true, 4));    // fp32 rows of 30,522: 8-byte multiples
  EXPECT_FALSE(gemm_is_unaligned(8, 8, 8, false, false, 2));
}

TEST(PlanRoofline, AnUnalignedGemmRunsAtItsOwnEfficiencyWhereCalibrated) {
  const GpuSpec gpu = test_gpu();
  ComputeCalibration c{0.5, 0.5, 3, ""};
  NodeWork gemm{2e9, 1e6, 40, true};  // 2 GFLOP at 40 TFLOP/s
  EXPECT_NEAR(roofline_ms(gemm, gpu, c), 0.1 + 0.003, 1e-12) << "no unaligned figure: the aligned rate";
  c.unaligned_gemm_efficiency = 0.25;
  EXPECT_NEAR(roofline_ms(gemm, gpu, c), 0.2 + 0.003, 1e-12);
  gemm.unaligned = false;
  EXPECT_NEAR(roofline_ms(gemm, gpu, c), 0.1 + 0.003, 1e-12);
}

TEST(PlanRoofline, NodeWorkCountsProductsAndEveryTensorOnce) {
  Graph graph;
  auto tensor = [&](const char* name, std::vector<int64_t> shape, DType type) {
    TensorInfo info;
    info.name = name;
    info.shape = std::move(shape);
    info.dtype = type;
    return graph.add_tensor(info);
  };
  const TensorId a = tensor("a", {64, 32}, DType::kBFloat16);  // 4096 B
  const TensorId b = tensor("b", {32, 16}, DType::kBFloat16);  // 1024 B
  const TensorId c = tensor("c", {64, 16}, DType::kFloat32);   // 4096 B
  const TensorId d = tensor("d", {64, 16}, DType::kFloat32);
  graph.add_node({"gemm", {a, b}, {c}, {{"m", 64}, {"n", 16}, {"k", 32}, {"batch", 1}}, false});
  graph.add_node({"add", {c, c}, {d}, {}, false});
  const std::vector<NodeWork> works = node_work(graph, test_gpu(), Precision::kBf16);
  ASSERT_EQ(works.size(), 2u);
  EXPECT_EQ(works[0].flops, 2.0 * 64 * 16 * 32);
  EXPECT_EQ(works[0].bytes, 4096 + 1024 + 4096);
  EXPECT_EQ(works[0].peak_tflops, 40);
  EXPECT_EQ(works[1].flops, 0);
  EXPECT_EQ(works[1].bytes, 4096 + 4096);  // c read once although used twice
}

}  // namespace
}  // namespace sb
