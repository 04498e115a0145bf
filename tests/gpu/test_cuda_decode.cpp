// The CUDA greedy-decoding ops (src/cuda/decode.h) against the CPU reference (src/cpu/decode.h): argmax over
// float, bf16 and fp16 rows (a vocabulary of 64,699 columns, planted ties and NaN, every output written), the
// counter-driven write into a cache and into int32 ids, the counter ops and end_sentences; then unsupmt's tiny
// back-translation sub-step on both executors: in fp32 the greedy words must be the CPU's, in bf16 every word
// the GPU generated must be the argmax of the GPU's own teacher-forced decoder up to bf16 rounding (within
// 5e-2 of the row's largest |logit| of the best word). Skips without a GPU.
// Run: gpu_tests --gtest_filter='CudaDecode*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/device.h"
#include "scalebench/executor.h"
#include "scalebench/planner.h"
#include "scalebench/workload.h"
#include "src/cpu/decode.h"
#include "src/cuda/decode.h"
#include "tests/support/bf16_data.h"
#include "tests/support/cuda_array.h"
#include "tests/support/fp16_data.h"
#include "tests/support/random_data.h"

namespace sb {
namespace {

using test::CudaArray;

// Rows of `cols` random values with planted cases: row 1 a tie of its two largest (first must win), row 2 a NaN.
std::vector<float> planted_rows(int64_t rows, int64_t cols) {
  std::vector<float> x = test::random_normal(static_cast<size_t>(rows * cols), 17, 3.0f);
  x[static_cast<size_t>(cols + 5)] = 100.0f;
  x[static_cast<size_t>(cols + cols - 3)] = 100.0f;
  x[static_cast<size_t>(2 * cols + 1234 % cols)] = std::numeric_limits<float>::quiet_NaN();
  return x;
}

TEST(CudaDecode, ArgmaxMatchesTheCpuForEveryType) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  test::TestStream stream;
  for (int64_t cols : {int64_t{1}, int64_t{7}, int64_t{513}, int64_t{64699}}) {
    const int64_t rows = cols < 3 ? 1 : 275;
    std::vector<float> x = cols < 3 ? std::vector<float>{0.5f} : planted_rows(rows, cols);
    CudaArray<int32_t> out(static_cast<size_t>(rows));
    std::vector<int32_t> want(static_cast<size_t>(rows));
    // float
    cpu::argmax_rows(x.data(), want.data(), rows, cols);
    CudaArray<float> xf(x);
    out.poison();
    cuda::argmax_rows(xf.get(), out.get(), rows, cols, stream.get());
    stream.sync();
    EXPECT_EQ(out.download(), want) << "float, " << cols << " columns";
    // bf16 and fp16: the CPU's argmax of the rounded values (ties created by rounding resolve to the first)
    for (int type = 0; type < 2; ++type) {
      const test::HalfTensor half = type == 0 ? test::round_to_bf16(x) : test::round_to_fp16(x);
      cpu::argmax_rows(half.values.data(), want.data(), rows, cols);
      CudaArray<uint16_t> xh(half.bits);
      out.poison();
      if (type == 0) {
        cuda::argmax_rows(test::as_bf16(xh.get()), out.get(), rows, cols, stream.get());
      } else {
        cuda::argmax_rows(test::as_fp16(xh.get()), out.get(), rows, cols, stream.get());
      }
      stream.sync();
      EXPECT_EQ(out.download(), want) << (type == 0 ? "bf16, " : "fp16, ") << cols << " columns";
    }
  }
}

TEST(CudaDecode, CounterOpsMatchTheCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  test::TestStream stream;
  const int64_t outer = 275 * 8, time = 29, inner = 128;
  CudaArray<int32_t> counter(std::vector<int32_t>{6});
  const int32_t host_counter = 6;
  // A bf16 cache (2-byte elements) and int32 ids (4-byte), written at counter + offset.
  const std::vector<uint16_t> cache = test::bf16_bits_of(test::random_normal(static_cast<size_t>(outer * time * inner), 3));
  const std::vector<uint16_t> src = test::bf16_bits_of(test::random_normal(static_cast<size_t>(outer * inner), 4));
  std::vector<uint16_t> want = cache;
  cpu::write_at_counter(src.data(), want.data(), &host_counter, outer, time, inner, 2, 1);
  CudaArray<uint16_t> d_cache(cache), d_src(src);
  cuda::write_at_counter(d_src.get(), d_cache.get(), counter.get(), outer, time, inner, 2, 1, stream.get());
  stream.sync();
  EXPECT_EQ(d_cache.download(), want);
  const std::vector<int32_t> ids = test::random_ids(275 * 29, 5, 14, 64698), tokens = test::random_ids(275, 6, 14, 64698);
  std::vector<int32_t> want_ids = ids;
  cpu::write_at_counter(tokens.data(), want_ids.data(), &host_counter, 275, 29, 1, 4, 1);
  CudaArray<int32_t> d_ids(ids), d_tokens(tokens);
  cuda::write_at_counter(d_tokens.get(), d_ids.get(), counter.get(), 275, 29, 1, 4, 1, stream.get());
  const std::vector<int32_t> lengths = test::random_ids(275, 7, -2, 40);  // clamped on both devices
  CudaArray<int32_t> d_lengths(lengths);
  cpu::end_sentences(want_ids.data(), lengths.data(), 275, 29, 1, 2);
  cuda::end_sentences(d_ids.get(), d_lengths.get(), 275, 29, 1, 2, stream.get());
  stream.sync();
  EXPECT_EQ(d_ids.download(), want_ids);
  CudaArray<int32_t> filled(1000);
  filled.poison();
  cuda::fill_from_counter(counter.get(), filled.get(), 1000, 1, stream.get());
  cuda::update_counter(counter.get(), 1, 1, stream.get());
  stream.sync();
  EXPECT_EQ(filled.download(), std::vector<int32_t>(1000, 7));
  EXPECT_EQ(counter.download(), std::vector<int32_t>{7});
  cuda::update_counter(counter.get(), 0, 0, stream.get());
  stream.sync();
  EXPECT_EQ(counter.download(), std::vector<int32_t>{0});
}

// unsupmt tiny on one executor, weights N(0, 0.3) (decisive logits) drawn alike for both devices.
struct TinyUnsupmt {
  Graph graph;
  BuiltWorkload built;
  MemoryPlan plan;
  std::unique_ptr<Executor> e;
  TinyUnsupmt(DType compute, bool cuda) {
    const Workload& workload = find_workload("unsupmt");
    GraphBuilder b(graph, compute);
    b.disable_dropout();
    built = workload.build(b, 5, WorkloadScale::kTiny);
    append_backward(graph, built.loss);
    plan = plan_memory(graph);
    e = cuda ? make_cuda_executor(graph, plan) : std::unique_ptr<Executor>(new CpuExecutor(graph, plan));
    workload.synthesize(graph, 9, [&](TensorId id, const void* data, size_t bytes) { e->write_tensor(id, data, bytes); });
    std::mt19937 random(3);
    std::normal_distribution<float> normal(0.0f, 0.3f);
    for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) {
      const TensorInfo& info = graph.tensor(p);
      const bool gain = info.name.find("norm") != std::string::npos && info.name.find("bias") == std::string::npos;
      std::vector<float> values(static_cast<size_t>(info.elements()));
      for (float& v : values) v = gain ? 1.0f : normal(random);
      e->write_tensor(p, values.data(), info.bytes());
    }
  }
  std::vector<int32_t> ints(const std::string& name) {
    const TensorId id = graph.find_tensor(name);
    std::vector<int32_t> v(static_cast<size_t>(graph.tensor(id).elements()));
    e->read_tensor(id, v.data(), v.size() * sizeof(int32_t));
    return v;
  }
  void generate() {  // bt_en_de_en's parts: generation, then the generated words selected as the source
    for (const StepPart& part : graph.sub_steps()[2].parts) {
      for (int64_t r = 0; r < part.repeat; ++r) e->run_nodes(part.begin, part.end);
    }
  }
};

TEST(CudaDecode, TinyUnsupmtGenerationFp32EqualsTheCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  TinyUnsupmt cpu(DType::kFloat32, false), gpu(DType::kFloat32, true);
  cpu.generate();
  gpu.generate();
  EXPECT_EQ(gpu.ints("generation.ids"), cpu.ints("generation.ids"));
  EXPECT_EQ(gpu.ints("source"), cpu.ints("source"));
  // Then the back-translation's training pass on what was generated: the same loss.
  for (TinyUnsupmt* t : {&cpu, &gpu}) t->e->run_nodes(t->graph.training_begin(), t->graph.nodes().size());
  float cpu_loss = 0, gpu_loss = 0;
  cpu.e->read_tensor(cpu.built.loss, &cpu_loss, 4);
  gpu.e->read_tensor(gpu.built.loss, &gpu_loss, 4);
  EXPECT_NEAR(gpu_loss, cpu_loss, 1e-4 * std::fabs(cpu_loss));
}

TEST(CudaDecode, TinyUnsupmtGenerationBf16IsTheGreedyArgmaxUpToRounding) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  TinyUnsupmt gpu(DType::kBFloat16, true);
  gpu.generate();
  const std::vector<int32_t> generated = gpu.ints("generation.ids"), lengths = gpu.ints("en.lengths");
  const int64_t batch = static_cast<int64_t>(lengths.size()), time = static_cast<int64_t>(generated.size()) / batch;
  // Teacher-forced: the training pass's decoder over the generated German, the English as encoder input.
  auto write = [&](const std::string& name, const std::vector<int32_t>& v) {
    gpu.e->write_tensor(gpu.graph.find_tensor(name), v.data(), v.size() * sizeof(int32_t));
  };
  write("source", gpu.ints("en.sentences"));
  write("source_lengths", lengths);
  write("source_language", std::vector<int32_t>(batch * time, 0));
  write("target_input", generated);
  write("target_language", std::vector<int32_t>(batch * time, 1));
  write("target_lengths", std::vector<int32_t>(batch, static_cast<int32_t>(time)));
  gpu.e->run_nodes(gpu.graph.training_begin(), gpu.e->forward_node_count());
  TensorId logits = kNoTensor;
  for (size_t n = gpu.graph.training_begin(); n < gpu.graph.nodes().size(); ++n) {
    if (gpu.graph.nodes()[n].op == "softmax_cross_entropy") logits = gpu.graph.nodes()[n].inputs[0];
  }
  ASSERT_NE(logits, kNoTensor);
  const TensorInfo& info = gpu.graph.tensor(logits);
  ASSERT_EQ(info.dtype, DType::kBFloat16);
  std::vector<uint16_t> bits(static_cast<size_t>(info.elements()));
  gpu.e->read_tensor(logits, bits.data(), info.bytes());
  const std::vector<float> values = test::widen(bits);
  const int64_t vocab = info.shape[1];
  int compared = 0;
  for (int64_t s = 0; s < batch; ++s) {
    for (int64_t c = 0; c + 2 < lengths[s]; ++c) {
      const float* row = values.data() + (s * time + c) * vocab;
      float best = row[0], largest = 0;
      for (int64_t v = 0; v < vocab; ++v) best = std::max(best, row[v]), largest = std::max(largest, std::fabs(row[v]));
      EXPECT_LE(best - row[generated[s * time + c + 1]], 5e-2f * largest) << "sentence " << s << " word " << c + 1;
      ++compared;
    }
  }
  EXPECT_GT(compared, 5);
}

}  // namespace
}  // namespace sb
