// The per-step kernel arguments resolved on the device (src/cuda/step_value.h, issue 25): a kernel launched with
// a StepValue whose `replays` is a device counter holding r gives, bit for bit, what the eager launch with the
// host's value at_capture + per_step * r gives, for r = 0, 1, 5 (dropout, drop_path, the SAN's uniforms, the
// StyleGAN noise and EMA, every optimizer with and without loss scaling). Each case also checks that r changes
// the output, so a kernel that ignored the counter fails. Skips when no GPU is visible.
// Run: gpu_tests --gtest_filter='CudaStepValue*'.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "scalebench/device.h"
#include "scalebench/loss_scale.h"
#include "src/cpu/noise_injection.h"
#include "src/cpu/optimizer.h"
#include "src/cuda/drop_path.h"
#include "src/cuda/dropout.h"
#include "src/cuda/optimizer.h"
#include "src/cuda/random_uniform.h"
#include "src/cuda/step_value.h"
#include "src/cuda/stylegan_g_ops.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"

namespace sb {
namespace {

using test::CudaArray;
using test::TestStream;

constexpr int64_t kReplays[] = {0, 1, 5};

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// The replay counter a captured graph advances: one int64 in device memory, holding r.
class ReplayCounter {
 public:
  explicit ReplayCounter(int64_t replays) : counter_(std::vector<int64_t>{replays}) {}
  // The value a kernel captured with `host_value` (growing by `per_step`) resolves to after r replays.
  cuda::StepValue replayed(int64_t host_value, int64_t per_step) const {
    return cuda::StepValue{host_value, per_step, counter_.get()};
  }

 private:
  CudaArray<int64_t> counter_;
};

// Runs `launch(value)` for the replayed and the eager value of each r and compares the outputs `read()`
// returns; the outputs for r = 0 and r = 1 must differ.
template <typename Launch, typename Read>
void expect_replays_match_eager(int64_t at_capture, int64_t per_step, const TestStream& stream, Launch launch,
                                Read read) {
  decltype(read()) first_output;
  for (int64_t r : kReplays) {
    SCOPED_TRACE("replays " + std::to_string(r));
    const ReplayCounter counter(r);
    launch(counter.replayed(at_capture, per_step));
    stream.sync();
    const auto replayed = read();
    launch(cuda::eager_value(at_capture + per_step * r));
    stream.sync();
    const auto eager = read();
    EXPECT_TRUE(same_bits(replayed, eager)) << "the replayed value's output differs from the eager value's";
    if (r == 0) first_output = eager;
    if (r == 1) EXPECT_FALSE(same_bits(eager, first_output)) << "the step value changes nothing: a vacuous check";
  }
}

TEST(CudaStepValue, DropoutDrawsTheReplayedOffset) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const int64_t n = 100003;  // a partial last Philox group
  const float p = 0.3f;
  TestStream stream;
  CudaArray<float> x(test::random_normal(static_cast<size_t>(n), 2500)), y(static_cast<size_t>(n));
  CudaArray<uint8_t> mask(static_cast<size_t>(n));
  // Offsets as the executor's: a node's first block plus (sub-steps x blocks per step) per training step.
  expect_replays_match_eager(
      3 * 25001 + 17, 2 * 25001, stream,
      [&](cuda::StepValue offset) {
        y.poison();
        mask.poison();
        cuda::dropout_forward(x.get(), y.get(), mask.get(), n, p, 99, offset, stream.get());
      },
      [&] {
        std::vector<uint8_t> bytes = mask.download();
        const std::vector<float> values = y.download();
        const auto* raw = reinterpret_cast<const uint8_t*>(values.data());
        bytes.insert(bytes.end(), raw, raw + values.size() * sizeof(float));
        return bytes;
      });
}

TEST(CudaStepValue, DropPathAndUniformsDrawTheReplayedOffset) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const int64_t batch = 64, per_sample = 100;
  TestStream stream;
  CudaArray<float> x(test::random_normal(static_cast<size_t>(batch * per_sample), 2501));
  CudaArray<float> y(static_cast<size_t>(batch * per_sample));
  expect_replays_match_eager(
      40, 16, stream,
      [&](cuda::StepValue offset) {
        y.poison();
        cuda::drop_path_forward(x.get(), y.get(), batch, per_sample, 0.5f, 7, offset, stream.get());
      },
      [&] { return y.download(); });
  CudaArray<float> uniforms(1001);
  expect_replays_match_eager(
      1234, 251, stream,
      [&](cuda::StepValue offset) {
        uniforms.poison();
        cuda::philox_uniform(uniforms.get(), 1001, 99, offset, stream.get());
      },
      [&] { return uniforms.download(); });
}

TEST(CudaStepValue, NoiseInjectionDrawsTheReplayedOffset) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const int64_t batch = 2, pixels = 70;
  for (int64_t channels : {int64_t{40}, int64_t{130}}) {  // 10 float4 packs a row: the packed kernels; 130: not
    SCOPED_TRACE("channels " + std::to_string(channels));
    const auto elements = static_cast<size_t>(batch * pixels * channels);
    TestStream stream;
    CudaArray<float> x(test::random_normal(elements, 2502));
    CudaArray<float> weight(test::random_normal(static_cast<size_t>(channels), 2503));
    CudaArray<int32_t> ids(std::vector<int32_t>{3, 8});
    CudaArray<float> y(elements), dweight(static_cast<size_t>(channels));
    CudaArray<double> workspace(static_cast<size_t>(cpu::noise_injection_workspace_bytes(batch, pixels, channels)) / 8);
    expect_replays_match_eager(
        12, 36, stream,
        [&](cuda::StepValue offset) {
          y.poison();
          dweight.poison();
          cuda::noise_injection_forward(x.get(), weight.get(), ids.get(), y.get(), batch, pixels, channels, 77, offset,
                                        stream.get());
          cuda::noise_injection_backward(x.get(), ids.get(), dweight.get(), workspace.get(), batch, pixels, channels,
                                         77, offset, stream.get());  // x as dy
        },
        [&] {
          std::vector<float> values = y.download();
          const std::vector<float> dw = dweight.download();
          values.insert(values.end(), dw.begin(), dw.end());
          return values;
        });
  }
}

// The EMA's first step (step 0 copies) is read from the resolved step: captured at step 0, replay 0 copies and
// the later replays blend.
TEST(CudaStepValue, EmaFirstStepIsTheReplayedStep) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const std::vector<float> param = test::random_normal(1000, 2504), start = test::random_normal(1000, 2505);
  TestStream stream;
  CudaArray<float> p(param), average(start.size());
  expect_replays_match_eager(
      0, 2, stream,
      [&](cuda::StepValue step) {
        average.upload(start);
        cuda::ema_update(p.get(), average.get(), int64_t(param.size()), 0.9f, step, stream.get());
      },
      [&] { return average.download(); });
}

// One optimizer step on fixed parameters, gradients and state from the replayed and the eager step count.
void check_optimizer(const OptimizerSettings& s, bool loss_scaled) {
  SCOPED_TRACE(describe_optimizer(s) + (loss_scaled ? ", loss-scaled" : ""));
  const int64_t n = 4099;  // float4 body and a scalar tail
  const int64_t state_n = optimizer_state_buffers(s.kind) * cpu::optimizer_state_stride(n);
  const std::vector<float> params = test::random_normal(static_cast<size_t>(n), 2510);
  std::vector<float> grads = test::random_normal(static_cast<size_t>(n), 2511, 0.5f);
  std::vector<float> state = test::random_uniform(static_cast<size_t>(state_n), 2512, 0.0f, 0.1f);
  LossScaleState scaling;
  scaling.scale = 1024.0f;
  scaling.skipped_steps = 2;  // the bias correction's count is step - 2
  if (loss_scaled) {
    for (float& g : grads) g *= scaling.scale;  // exact: a power of two
  }
  TestStream stream;
  CudaArray<float> p_d(params.size()), g_d(grads), state_d(state.size());
  CudaArray<double> scratch(static_cast<size_t>(cpu::kGradNormScratchDoubles));
  CudaArray<LossScaleState> scale_d(1);
  cuda::grad_norm_squared(g_d.get(), n, scratch.get(), stream.get());
  expect_replays_match_eager(
      3, 2, stream,  // optimizer steps 3, 5, 13: two sub-steps per training step
      [&](cuda::StepValue step) {
        p_d.upload(params);
        state_d.upload(state);
        scale_d.upload({scaling});
        cuda::optimizer_step(p_d.get(), g_d.get(), state_d.get(), n, s, step, scratch.get(), stream.get(),
                             loss_scaled ? scale_d.get() : nullptr, LossScaleConfig{});
      },
      [&] {
        std::vector<float> values = p_d.download();
        const std::vector<float> st = state_d.download();
        values.insert(values.end(), st.begin(), st.end());
        return values;
      });
}

// The Adam family's bias correction is computed on the device from the resolved step (SGD and NAG have none:
// their step does not depend on the count, so only the Adam family is checked).
TEST(CudaStepValue, OptimizerBiasCorrectionUsesTheReplayedStep) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  for (OptimizerKind kind : {OptimizerKind::kAdamW, OptimizerKind::kAdam, OptimizerKind::kAdamax}) {
    for (bool loss_scaled : {false, true}) {
      OptimizerSettings s = default_optimizer(kind);
      s.learning_rate = 1e-2f;
      s.weight_decay = 0.01f;
      check_optimizer(s, loss_scaled);
    }
  }
}

}  // namespace
}  // namespace sb
