// sb::cuda SAN blocks (src/cuda/san.h) and philox_uniform against the CPU reference (src/cpu/san.h) on fresh
// random inputs at MT-DNN-large's sizes (B 8, L 128, Lh 64, H 1024) and at odd sizes (scalar paths, Hm !=
// Hs, a fully masked row); outputs NaN-poisoned first, every element must be written. The odd sizes run
// first, so the full sizes also take the per-stream scratch's growth path. Skips without a GPU.
// Run: gpu_tests --gtest_filter='CudaSan*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "scalebench/device.h"
#include "src/cpu/random_uniform.h"
#include "src/cpu/san.h"
#include "src/cuda/gemm.h"
#include "src/cuda/random_uniform.h"
#include "src/cuda/san.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using test::CudaArray;
using test::TestStream;

// Tolerances, |got - ref| <= atol + rtol |ref| with atol = kScaleAtol * max |ref| of the tensor:
// the GPU sums products in fp32 (cuBLASLt, up to 3H = 3072 terms; warp and block reductions), the CPU in
// fp64 and rounds once. fp32 accumulation of K terms errs by ~sqrt(K) * 2^-24 of the terms' magnitude,
// ~3e-6 of the largest partial sums at K = 3072, and sigmoid/tanh/exp of an argument off by that stay
// within it; 2e-5 of the tensor's largest element is six times that and far below any wrong term (O(1)).
constexpr double kScaleAtol = 2e-5;
constexpr double kRtol = 1e-4;
// Elementwise ops (merge backward: one fused multiply-add may round once less than the CPU's two steps)
// and the fp64 turn average: a few ulps.
constexpr double kElementwiseRtol = 1e-6;

bool no_gpu() { return visible_cuda_device_count() == 0; }

// Every element written, not all zero, and within atol + rtol |ref|.
void expect_matches(const std::string& name, const std::vector<float>& got, const std::vector<float>& ref,
                    double scale_atol = kScaleAtol, double rtol = kRtol) {
  ASSERT_EQ(got.size(), ref.size()) << name;
  EXPECT_EQ(test::count_unwritten(got), 0u) << name;
  double largest = 0;
  for (float v : ref) largest = std::max(largest, static_cast<double>(std::fabs(v)));
  EXPECT_GT(largest, 0.0) << name << ": the reference is all zeros";
  const auto c = test::compare_close(got, test::to_double(ref), scale_atol * largest, rtol);
  EXPECT_TRUE(c.ok()) << name << ": " << c.description;
}

// An output buffer, NaN-poisoned (0xFF bytes) from the start.
template <typename T>
class PoisonedArray : public CudaArray<T> {
 public:
  explicit PoisonedArray(size_t n) : CudaArray<T>(n) { this->poison(); }
};

// mt-dnn's masks: row 0 keeps a prefix (the hypothesis' segment A), row 1 a middle segment (the premise's
// segment B), row 2 nothing (a fully masked row gives zeros on both devices), the rest random segments.
std::vector<uint8_t> segment_masks(int64_t batch, int64_t length, uint32_t seed) {
  std::vector<uint8_t> mask(static_cast<size_t>(batch * length), 1);
  const auto bounds = test::random_ids(static_cast<size_t>(2 * batch), seed, 0, static_cast<int32_t>(length - 1));
  for (int64_t b = 0; b < batch; ++b) {
    int64_t first = std::min<int64_t>(bounds[2 * b], bounds[2 * b + 1]);
    int64_t last = std::max<int64_t>(bounds[2 * b], bounds[2 * b + 1]);
    if (b == 0) first = 0;
    if (b == 1) {
      first = std::max<int64_t>(1, first);
      last = std::min(length - 2, std::max(first, last));
    }
    if (b == 2 && batch > 3) continue;
    for (int64_t l = first; l <= last; ++l) mask[b * length + l] = 0;
  }
  return mask;
}

TEST(CudaSan, PhiloxUniformAndTurnMaskAreTheCpus) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  const int64_t batch = 67, turns = 5, n = batch * (turns + 1);  // 402: a partial last Philox block
  TestStream stream;
  for (float p : {0.0f, 0.1f, 0.45f}) {
    std::vector<float> uniforms(n), mask(batch * turns);
    cpu::philox_uniform(uniforms.data(), n, 99, 1234);
    cpu::san_turn_mask(uniforms.data(), mask.data(), batch, turns, p);
    auto d_uniforms = PoisonedArray<float>(n);
    auto d_mask = PoisonedArray<float>(batch * turns);
    cuda::philox_uniform(d_uniforms.get(), n, 99, cuda::eager_value(1234), stream.get());
    cuda::san_turn_mask(d_uniforms.get(), d_mask.get(), batch, turns, p, stream.get());
    stream.sync();
    EXPECT_EQ(d_uniforms.download(), uniforms);
    EXPECT_EQ(d_mask.download(), mask) << "p " << p;
    if (p > 0.4f) EXPECT_NE(std::count(mask.begin(), mask.end(), 0.0f), 0);
  }
}

void check_gru(int64_t batch, int64_t in, int64_t hidden, uint32_t seed) {
  SCOPED_TRACE("gru B " + std::to_string(batch) + " I " + std::to_string(in) + " H " + std::to_string(hidden));
  const float w_scale = 1.0f / std::sqrt(static_cast<float>(in + hidden));  // pre-activations O(1)
  const auto x = test::random_normal(batch * in, seed), h = test::random_normal(batch * hidden, seed + 1);
  const auto w_ih = test::random_normal(3 * hidden * in, seed + 2, w_scale);
  const auto w_hh = test::random_normal(3 * hidden * hidden, seed + 3, w_scale);
  const auto b_ih = test::random_normal(3 * hidden, seed + 4, 0.5f);
  const auto b_hh = test::random_normal(3 * hidden, seed + 5, 0.5f);
  const auto dh_next = test::random_normal(batch * hidden, seed + 6);
  std::vector<float> h_next(batch * hidden), gates(batch * 4 * hidden), dx(batch * in), dh(batch * hidden);
  std::vector<float> dw_ih(w_ih.size()), dw_hh(w_hh.size()), db_ih(3 * hidden), db_hh(3 * hidden);
  cpu::gru_cell_forward(x.data(), h.data(), w_ih.data(), w_hh.data(), b_ih.data(), b_hh.data(), h_next.data(),
                        gates.data(), batch, in, hidden);
  cpu::gru_cell_backward(dh_next.data(), x.data(), h.data(), w_ih.data(), w_hh.data(), gates.data(), dx.data(),
                         dh.data(), dw_ih.data(), dw_hh.data(), db_ih.data(), db_hh.data(), batch, in, hidden);

  TestStream stream;
  CudaArray<float> d_x(x), d_h(h), d_w_ih(w_ih), d_w_hh(w_hh), d_b_ih(b_ih), d_b_hh(b_hh), d_dh_next(dh_next);
  auto d_h_next = PoisonedArray<float>(h_next.size()), d_gates = PoisonedArray<float>(gates.size());
  auto d_dx = PoisonedArray<float>(dx.size()), d_dh = PoisonedArray<float>(dh.size());
  auto d_dw_ih = PoisonedArray<float>(dw_ih.size()), d_dw_hh = PoisonedArray<float>(dw_hh.size());
  auto d_db_ih = PoisonedArray<float>(db_ih.size()), d_db_hh = PoisonedArray<float>(db_hh.size());
  cuda::gru_cell_forward(d_x.get(), d_h.get(), d_w_ih.get(), d_w_hh.get(), d_b_ih.get(), d_b_hh.get(),
                         d_h_next.get(), d_gates.get(), batch, in, hidden, stream.get());
  // Backward from the CPU's saved gates, so that it is checked on its own.
  CudaArray<float> d_cpu_gates(gates);
  cuda::gru_cell_backward(d_dh_next.get(), d_x.get(), d_h.get(), d_w_ih.get(), d_w_hh.get(), d_cpu_gates.get(),
                          d_dx.get(), d_dh.get(), d_dw_ih.get(), d_dw_hh.get(), d_db_ih.get(), d_db_hh.get(), batch,
                          in, hidden, stream.get());
  stream.sync();
  expect_matches("h_next", d_h_next.download(), h_next);
  expect_matches("saved_gates", d_gates.download(), gates);
  expect_matches("dx", d_dx.download(), dx);
  expect_matches("dh", d_dh.download(), dh);
  expect_matches("dw_ih", d_dw_ih.download(), dw_ih);
  expect_matches("dw_hh", d_dw_hh.download(), dw_hh);
  expect_matches("db_ih", d_db_ih.download(), db_ih);
  expect_matches("db_hh", d_db_hh.download(), db_hh);
}

TEST(CudaSan, GruCellMatchesTheCpu) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  cuda::set_gemm_math(cuda::GemmMath::kFp32);
  check_gru(3, 37, 53, 401);     // odd sizes, I != H
  check_gru(8, 1024, 1024, 411);  // MT-DNN-large
}

void check_self_attention(int64_t batch, int64_t length, int64_t hidden, uint32_t seed) {
  SCOPED_TRACE("self attention B " + std::to_string(batch) + " L " + std::to_string(length) + " H " +
               std::to_string(hidden));
  const auto memory = test::random_normal(batch * length * hidden, seed);
  const auto weight = test::random_normal(hidden, seed + 1, 1.0f / std::sqrt(static_cast<float>(hidden)));
  const auto bias = test::random_normal(1, seed + 2);
  const auto mask = segment_masks(batch, length, seed + 3);
  const auto dsummary = test::random_normal(batch * hidden, seed + 4);
  std::vector<float> summary(batch * hidden), alpha(batch * length), dmemory(memory.size()), dweight(hidden);
  float dbias = 0;
  cpu::san_self_attention_forward(memory.data(), mask.data(), weight.data(), bias.data(), summary.data(),
                                  alpha.data(), batch, length, hidden);
  cpu::san_self_attention_backward(dsummary.data(), memory.data(), mask.data(), weight.data(), alpha.data(),
                                   dmemory.data(), dweight.data(), &dbias, batch, length, hidden);

  TestStream stream;
  CudaArray<float> d_memory(memory), d_weight(weight), d_bias(bias), d_dsummary(dsummary), d_cpu_alpha(alpha);
  CudaArray<uint8_t> d_mask(mask);
  auto d_summary = PoisonedArray<float>(summary.size()), d_alpha = PoisonedArray<float>(alpha.size());
  auto d_dmemory = PoisonedArray<float>(dmemory.size()), d_dweight = PoisonedArray<float>(hidden);
  auto d_dbias = PoisonedArray<float>(1);
  cuda::san_self_attention_forward(d_memory.get(), d_mask.get(), d_weight.get(), d_bias.get(), d_summary.get(),
                                   d_alpha.get(), batch, length, hidden, stream.get());
  cuda::san_self_attention_backward(d_dsummary.get(), d_memory.get(), d_mask.get(), d_weight.get(),
                                    d_cpu_alpha.get(), d_dmemory.get(), d_dweight.get(), d_dbias.get(), batch,
                                    length, hidden, stream.get());
  stream.sync();
  expect_matches("summary", d_summary.download(), summary);
  expect_matches("alpha", d_alpha.download(), alpha);
  expect_matches("dmemory", d_dmemory.download(), dmemory);
  expect_matches("dweight", d_dweight.download(), dweight);
  // The bias gradient is 0 in exact arithmetic (softmax ignores a shared shift), so both devices give
  // rounding noise: bounded by the fp32 tolerance times the magnitude of the terms alpha_l * dalpha_l that
  // cancel in each row's sum of score gradients.
  double terms = 0;
  for (int64_t bl = 0; bl < batch * length; ++bl) {
    double dalpha = 0;
    for (int64_t i = 0; i < hidden; ++i) {
      dalpha += static_cast<double>(memory[bl * hidden + i]) * dsummary[(bl / length) * hidden + i];
    }
    terms += std::fabs(alpha[bl] * dalpha);
  }
  const float gpu_dbias = d_dbias.download()[0];
  EXPECT_TRUE(std::isfinite(gpu_dbias));
  EXPECT_LE(std::fabs(gpu_dbias - dbias), kScaleAtol * terms) << "terms " << terms;
}

TEST(CudaSan, SelfAttentionMatchesTheCpu) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  cuda::set_gemm_math(cuda::GemmMath::kFp32);
  check_self_attention(5, 13, 37, 501);
  check_self_attention(8, 64, 1024, 511);  // the hypothesis summary of MT-DNN-large
}

void check_bilinear(int64_t batch, int64_t length, int64_t hm, int64_t hs, uint32_t seed) {
  SCOPED_TRACE("bilinear B " + std::to_string(batch) + " L " + std::to_string(length) + " Hm " + std::to_string(hm) +
               " Hs " + std::to_string(hs));
  const auto keys = test::random_normal(batch * length * hm, seed);
  const auto values = test::random_normal(batch * length * hm, seed + 1);
  const auto state = test::random_normal(batch * hs, seed + 2);
  // Scores of O(1): p = W s + b has entries of 1 / sqrt(Hm), keys . p is O(1).
  const auto weight = test::random_normal(hm * hs, seed + 3, 1.0f / std::sqrt(static_cast<float>(hm * hs)));
  const auto bias = test::random_normal(hm, seed + 4, 1.0f / std::sqrt(static_cast<float>(hm)));
  const auto mask = segment_masks(batch, length, seed + 5);
  const auto dsummary = test::random_normal(batch * hm, seed + 6);
  std::vector<float> summary(batch * hm), projection(batch * hm), alpha(batch * length);
  std::vector<float> dkeys(keys.size()), dvalues(values.size()), dstate(state.size()), dweight(weight.size()),
      dbias(hm);
  cpu::san_bilinear_attention_forward(keys.data(), values.data(), state.data(), mask.data(), weight.data(),
                                      bias.data(), summary.data(), projection.data(), alpha.data(), batch, length,
                                      hm, hs);
  cpu::san_bilinear_attention_backward(dsummary.data(), keys.data(), values.data(), state.data(), mask.data(),
                                       weight.data(), projection.data(), alpha.data(), dkeys.data(), dvalues.data(),
                                       dstate.data(), dweight.data(), dbias.data(), batch, length, hm, hs);

  TestStream stream;
  CudaArray<float> d_keys(keys), d_values(values), d_state(state), d_weight(weight), d_bias(bias);
  CudaArray<float> d_dsummary(dsummary), d_cpu_projection(projection), d_cpu_alpha(alpha);
  CudaArray<uint8_t> d_mask(mask);
  auto d_summary = PoisonedArray<float>(summary.size()), d_projection = PoisonedArray<float>(projection.size());
  auto d_alpha = PoisonedArray<float>(alpha.size());
  auto d_dkeys = PoisonedArray<float>(dkeys.size()), d_dvalues = PoisonedArray<float>(dvalues.size());
  auto d_dstate = PoisonedArray<float>(dstate.size()), d_dweight = PoisonedArray<float>(dweight.size());
  auto d_dbias = PoisonedArray<float>(dbias.size());
  cuda::san_bilinear_attention_forward(d_keys.get(), d_values.get(), d_state.get(), d_mask.get(), d_weight.get(),
                                       d_bias.get(), d_summary.get(), d_projection.get(), d_alpha.get(), batch,
                                       length, hm, hs, stream.get());
  cuda::san_bilinear_attention_backward(d_dsummary.get(), d_keys.get(), d_values.get(), d_state.get(), d_mask.get(),
                                        d_weight.get(), d_cpu_projection.get(), d_cpu_alpha.get(), d_dkeys.get(),
                                        d_dvalues.get(), d_dstate.get(), d_dweight.get(), d_dbias.get(), batch,
                                        length, hm, hs, stream.get());
  stream.sync();
  expect_matches("summary", d_summary.download(), summary);
  expect_matches("projection", d_projection.download(), projection);
  expect_matches("alpha", d_alpha.download(), alpha);
  expect_matches("dkeys", d_dkeys.download(), dkeys);
  expect_matches("dvalues", d_dvalues.download(), dvalues);
  expect_matches("dstate", d_dstate.download(), dstate);
  expect_matches("dweight", d_dweight.download(), dweight);
  expect_matches("dbias", d_dbias.download(), dbias);
}

TEST(CudaSan, BilinearAttentionMatchesTheCpu) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  cuda::set_gemm_math(cuda::GemmMath::kFp32);
  check_bilinear(5, 19, 37, 23, 601);       // Hm != Hs: a transposed weight cannot pass
  check_bilinear(8, 128, 1024, 1024, 611);  // one turn of MT-DNN-large
}

TEST(CudaSan, MergeMatchesTheCpu) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  for (const int64_t hidden : {37, 1024}) {
    const int64_t batch = 8;
    auto x = test::random_normal(batch * hidden, 701), s = test::random_normal(batch * hidden, 702);
    s[3] = x[3];  // |x - s| at its kink: sign 0 on both devices
    const auto dfeatures = test::random_normal(batch * 4 * hidden, 703);
    std::vector<float> features(batch * 4 * hidden), dx(x.size()), ds(s.size());
    cpu::san_merge_forward(x.data(), s.data(), features.data(), batch, hidden);
    cpu::san_merge_backward(dfeatures.data(), x.data(), s.data(), dx.data(), ds.data(), batch, hidden);
    TestStream stream;
    CudaArray<float> d_x(x), d_s(s), d_dfeatures(dfeatures);
    auto d_features = PoisonedArray<float>(features.size());
    auto d_dx = PoisonedArray<float>(dx.size()), d_ds = PoisonedArray<float>(ds.size());
    cuda::san_merge_forward(d_x.get(), d_s.get(), d_features.get(), batch, hidden, stream.get());
    cuda::san_merge_backward(d_dfeatures.get(), d_x.get(), d_s.get(), d_dx.get(), d_ds.get(), batch, hidden,
                             stream.get());
    stream.sync();
    EXPECT_EQ(d_features.download(), features) << "copies, one subtraction and one product: exact";
    expect_matches("dx", d_dx.download(), dx, 1e-7, kElementwiseRtol);
    expect_matches("ds", d_ds.download(), ds, 1e-7, kElementwiseRtol);
  }
}

TEST(CudaSan, TurnAverageMatchesTheCpu) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  const int64_t turns = 5;
  for (const int64_t batch : {8, 300}) {  // one block; two blocks
    for (const int64_t classes : {1, 3}) {  // stsb's single output; mnli
      SCOPED_TRACE("B " + std::to_string(batch) + " C " + std::to_string(classes));
      const auto logits = test::random_normal(turns * batch * classes, 801, 2.0f);
      std::vector<float> uniforms(batch * (turns + 1)), mask(batch * turns);
      cpu::philox_uniform(uniforms.data(), static_cast<int64_t>(uniforms.size()), 5, 0);
      cpu::san_turn_mask(uniforms.data(), mask.data(), batch, turns, 0.3f);
      const auto dscores = test::random_normal(batch * classes, 802);
      std::vector<float> scores(batch * classes), probs(logits.size()), dlogits(logits.size());
      cpu::san_turn_average_forward(logits.data(), mask.data(), scores.data(), probs.data(), turns, batch, classes);
      cpu::san_turn_average_backward(dscores.data(), mask.data(), probs.data(), dlogits.data(), turns, batch,
                                     classes);
      TestStream stream;
      CudaArray<float> d_logits(logits), d_mask(mask), d_dscores(dscores), d_cpu_probs(probs);
      auto d_scores = PoisonedArray<float>(scores.size()), d_probs = PoisonedArray<float>(probs.size());
      auto d_dlogits = PoisonedArray<float>(dlogits.size());
      cuda::san_turn_average_forward(d_logits.get(), d_mask.get(), d_scores.get(), d_probs.get(), turns, batch,
                                     classes, stream.get());
      cuda::san_turn_average_backward(d_dscores.get(), d_mask.get(), d_cpu_probs.get(), d_dlogits.get(), turns,
                                      batch, classes, stream.get());
      stream.sync();
      expect_matches("probs", d_probs.download(), probs, 1e-7, kElementwiseRtol);
      if (classes > 1) {
        expect_matches("scores", d_scores.download(), scores, 1e-7, kElementwiseRtol);
        expect_matches("dturn_logits", d_dlogits.download(), dlogits, 1e-7, kElementwiseRtol);
      } else {  // one class: probabilities 1 and scores log(mean mask) on both; the gradients are 0 in exact
                // arithmetic, 0 on the CPU and fp32 cancellation noise on the GPU (1e-17 measured on H200)
        const auto got_scores = d_scores.download(), got_dlogits = d_dlogits.download();
        EXPECT_EQ(test::count_unwritten(got_scores), 0u);
        EXPECT_EQ(got_scores, scores);
        EXPECT_EQ(test::count_unwritten(got_dlogits), 0u);
        for (size_t i = 0; i < got_dlogits.size(); ++i) EXPECT_LE(std::fabs(got_dlogits[i]), 1e-12) << "element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace sb
