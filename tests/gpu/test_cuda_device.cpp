// The CUDA device against the CPU reference: the verification kernels write exactly the pattern the CPU
// writes (bit for bit, every dtype), detect planted errors, and memory/stream/event/graph calls behave.
// Skips when no GPU is visible.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "scalebench/device.h"
#include "scalebench/error.h"
#include "src/cpu/element_access.h"

namespace sb {
namespace {

class CudaDeviceTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
    gpu_ = make_cuda_device(0);
    cpu_ = make_cpu_device();
  }
  std::unique_ptr<Device> gpu_, cpu_;
};

PatternSpec expected_all_reduce(int nranks) {
  PatternSpec spec;
  spec.role = PatternRole::kExpected;
  spec.op = CollectiveOp::kAllReduce;
  spec.nranks = nranks;
  spec.block = 0;
  spec.amplitude = 3;
  return spec;
}

TEST_P(CudaDeviceTest, PatternMatchesCpuBitForBitAndDetectsErrors) {
  const DType type = GetParam();
  const size_t count = 1000003;  // not a multiple of any block size
  const size_t bytes = count * dtype_size(type);
  PatternSpec spec = expected_all_reduce(4);
  spec.block = count;

  DeviceBuffer on_gpu(*gpu_, bytes);
  StreamHandle stream = gpu_->create_stream();
  gpu_->fill_pattern(on_gpu.data(), count, type, spec, stream);
  std::vector<unsigned char> from_gpu(bytes), from_cpu(bytes);
  gpu_->copy_to_host(from_gpu.data(), on_gpu.data(), bytes, stream);
  cpu_->fill_pattern(from_cpu.data(), count, type, spec, nullptr);
  EXPECT_EQ(0, std::memcmp(from_gpu.data(), from_cpu.data(), bytes)) << dtype_name(type);
  EXPECT_EQ(0u, gpu_->count_mismatches(on_gpu.data(), count, type, spec, stream));

  // Plant one poisoned (NaN / INT32_MIN) element and one out-of-range value.
  PatternSpec poison;
  poison.role = PatternRole::kPoison;
  gpu_->fill_pattern(static_cast<char*>(on_gpu.data()) + 17 * dtype_size(type), 1, type, poison, stream);
  const size_t size = dtype_size(type);
  std::vector<unsigned char> wrong(size);
  cpu::store_element(wrong.data(), 0, type, 99.0);  // outside the pattern's range of [-12, 12]
  gpu_->copy_from_host(static_cast<char*>(on_gpu.data()) + (count - 1) * size, wrong.data(), size, stream);
  EXPECT_EQ(2u, gpu_->count_mismatches(on_gpu.data(), count, type, spec, stream)) << dtype_name(type);
  gpu_->destroy_stream(stream);
}

// Every reduce op's data (prod: +-1/+-2; avg: sums that are multiples of the rank count): the kernels write the
// CPU's inputs and expected values bit for bit, and an exact expected buffer has no mismatch.
TEST_P(CudaDeviceTest, EveryReduceOpsPatternMatchesCpuBitForBit) {
  const DType type = GetParam();
  const size_t count = 100003;
  const size_t bytes = count * dtype_size(type);
  DeviceBuffer on_gpu(*gpu_, bytes);
  StreamHandle stream = gpu_->create_stream();
  std::vector<unsigned char> from_gpu(bytes), from_cpu(bytes);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kAvg}) {
    for (int nranks : {2, 3, 8}) {
      for (PatternRole role : {PatternRole::kInput, PatternRole::kExpected}) {
        PatternSpec spec = expected_all_reduce(nranks);
        spec.role = role;
        spec.reduce = op;
        spec.rank = nranks - 1;
        spec.block = count;
        gpu_->fill_pattern(on_gpu.data(), count, type, spec, stream);
        gpu_->copy_to_host(from_gpu.data(), on_gpu.data(), bytes, stream);
        cpu_->fill_pattern(from_cpu.data(), count, type, spec, nullptr);
        EXPECT_EQ(0, std::memcmp(from_gpu.data(), from_cpu.data(), bytes))
            << dtype_name(type) << " op " << static_cast<int>(op) << " " << nranks << " ranks role "
            << static_cast<int>(role);
        if (role == PatternRole::kExpected) {
          EXPECT_EQ(0u, gpu_->count_mismatches(on_gpu.data(), count, type, spec, stream)) << dtype_name(type);
        }
      }
    }
  }
  gpu_->destroy_stream(stream);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, CudaDeviceTest,
                         ::testing::Values(DType::kFloat32, DType::kBFloat16, DType::kFloat16,
                                           DType::kFloat64, DType::kInt32),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(CudaDevice, EventsMeasureDeviceTimeAndGraphsReplay) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto gpu = make_cuda_device(0);
  StreamHandle stream = gpu->create_stream();
  const size_t bytes = size_t{1} << 30;
  DeviceBuffer a(*gpu, bytes), b(*gpu, bytes);
  auto start = gpu->create_event();
  auto stop = gpu->create_event();
  start->record(stream);
  gpu->copy_on_device(b.data(), a.data(), bytes, stream);
  stop->record(stream);
  gpu->synchronize(stream);
  const double ms = stop->milliseconds_since(*start);
  EXPECT_GT(ms, 0.05);  // 2 GiB moved cannot take less than ~0.4 ms at 4.8 TB/s
  EXPECT_LT(ms, 100.0);

  gpu->begin_capture(stream);
  start->record_in_capture(stream);
  gpu->copy_on_device(b.data(), a.data(), bytes, stream);
  stop->record_in_capture(stream);
  auto graph = gpu->end_capture(stream);
  graph->launch(stream);
  gpu->synchronize(stream);
  EXPECT_GT(stop->milliseconds_since(*start), 0.05);
  gpu->destroy_stream(stream);
}

TEST(CudaDevice, OutOfMemoryIsARuntimeFailureNotACrash) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto gpu = make_cuda_device(0);
  EXPECT_THROW(gpu->allocate(gpu->description().total_memory * 2), RuntimeFailure);
  DeviceBuffer still_works(*gpu, 1 << 20);  // the failed allocation left no sticky error behind
  EXPECT_NE(nullptr, still_works.data());
}

}  // namespace
}  // namespace sb
