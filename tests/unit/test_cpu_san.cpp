// sb::cpu SAN blocks one by one: the GRU cell (a hand-derived case, torch's chunked formula, finite
// differences of every input, weight and bias), the self-attentive summary, the bilinear attention, the merge
// features, the turn mask and the turn average. The unrolled head is in test_cpu_san_head.cpp.
// Run: unit_tests --gtest_filter='CpuSan*'.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "src/cpu/san.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/unit/cpu_loss_checks.h"

namespace sb {
namespace {

using test::expect_all_written;
using test::expect_close;
using test::expect_gradient;
using test::poisoned;

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

struct Gru {
  int64_t batch = 3, in = 4, hidden = 5;
  std::vector<float> x, h, w_ih, w_hh, b_ih, b_hh;
  explicit Gru(uint32_t seed)
      : x(test::random_normal(batch * in, seed)), h(test::random_normal(batch * hidden, seed + 1)),
        w_ih(test::random_normal(3 * hidden * in, seed + 2, 0.5f)),
        w_hh(test::random_normal(3 * hidden * hidden, seed + 3, 0.5f)),
        b_ih(test::random_normal(3 * hidden, seed + 4, 0.5f)), b_hh(test::random_normal(3 * hidden, seed + 5, 0.5f)) {}
  std::vector<float> forward(std::vector<float>* gates = nullptr) const {
    auto out = poisoned<float>(batch * hidden);
    auto saved = poisoned<float>(batch * 4 * hidden);
    cpu::gru_cell_forward(x.data(), h.data(), w_ih.data(), w_hh.data(), b_ih.data(), b_hh.data(), out.data(),
                          saved.data(), batch, in, hidden);
    if (gates) *gates = saved;
    return out;
  }
};

// I = H = 1 with x = 1, h = 0.5, W_ih = (0, 0, 1), W_hh = (0, 0, 2), b_ih = (ln 3, 0, 0), b_hh = (0, -ln 3, 0):
//   r = sigmoid(ln 3) = 3/4, z = sigmoid(-ln 3) = 1/4, W_hn h + b_hn = 1, n = tanh(1 + 3/4 * 1) = tanh(1.75)
//   = 0.94137553849728736, h' = (1 - 1/4) n + 1/4 * 0.5 = 0.83103165387296552.
// Reading the gates in the order (z, r, n) would give h' = 0.25 n' + 0.375 with n' = tanh(1.25), 0.59; a
// transposed layout cannot show at I = H = 1, which the random case below covers.
TEST(CpuSan, GruCellHandDerivedCase) {
  const std::vector<float> x = {1.0f}, h = {0.5f}, w_ih = {0, 0, 1}, w_hh = {0, 0, 2};
  const std::vector<float> b_ih = {static_cast<float>(std::log(3.0)), 0, 0};
  const std::vector<float> b_hh = {0, static_cast<float>(-std::log(3.0)), 0};
  auto out = poisoned<float>(1);
  auto gates = poisoned<float>(4);
  cpu::gru_cell_forward(x.data(), h.data(), w_ih.data(), w_hh.data(), b_ih.data(), b_hh.data(), out.data(),
                        gates.data(), 1, 1, 1);
  EXPECT_NEAR(out[0], 0.83103165387296552, 1e-6);
  expect_close(gates, {0.75, 0.25, 0.94137553849728736, 1.0}, "saved gates r, z, n, W_hn h + b_hn");
}

// torch's own formulation: gi = x W_ih^T + b_ih and gh = h W_hh^T + b_hh chunked into (r, z, n),
// h' = n + z (h - n).
TEST(CpuSan, GruCellForwardMatchesChunkedFormula) {
  const Gru g(101);
  std::vector<float> gates;
  const auto out = g.forward(&gates);
  expect_all_written(gates, "saved_gates");
  const int64_t H = g.hidden;
  std::vector<double> ref(g.batch * H);
  for (int64_t b = 0; b < g.batch; ++b) {
    std::vector<double> gi(3 * H), gh(3 * H);
    for (int64_t row = 0; row < 3 * H; ++row) {
      gi[row] = g.b_ih[row];
      gh[row] = g.b_hh[row];
      for (int64_t k = 0; k < g.in; ++k) gi[row] += static_cast<double>(g.w_ih[row * g.in + k]) * g.x[b * g.in + k];
      for (int64_t k = 0; k < H; ++k) gh[row] += static_cast<double>(g.w_hh[row * H + k]) * g.h[b * H + k];
    }
    for (int64_t j = 0; j < H; ++j) {
      const double r = sigmoid(gi[j] + gh[j]), z = sigmoid(gi[H + j] + gh[H + j]);
      const double n = std::tanh(gi[2 * H + j] + r * gh[2 * H + j]);
      ref[b * H + j] = n + z * (g.h[b * H + j] - n);
    }
  }
  expect_close(out, ref, "h_next");
  EXPECT_GT(test::l2_norm(out), 0.0);
}

TEST(CpuSan, GruCellBackwardMatchesFiniteDifferences) {
  Gru g(111);
  std::vector<float> gates;
  g.forward(&gates);
  const auto dh_next = test::random_normal(g.batch * g.hidden, 112);
  auto dx = poisoned<float>(g.x.size()), dh = poisoned<float>(g.h.size());
  auto dw_ih = poisoned<float>(g.w_ih.size()), dw_hh = poisoned<float>(g.w_hh.size());
  auto db_ih = poisoned<float>(g.b_ih.size()), db_hh = poisoned<float>(g.b_hh.size());
  cpu::gru_cell_backward(dh_next.data(), g.x.data(), g.h.data(), g.w_ih.data(), g.w_hh.data(), gates.data(),
                         dx.data(), dh.data(), dw_ih.data(), dw_hh.data(), db_ih.data(), db_hh.data(), g.batch,
                         g.in, g.hidden);
  const auto out = [&] { return g.forward(); };
  const std::vector<std::pair<std::vector<float>*, const std::vector<float>*>> pairs = {
      {&g.x, &dx}, {&g.h, &dh}, {&g.w_ih, &dw_ih}, {&g.w_hh, &dw_hh}, {&g.b_ih, &db_ih}, {&g.b_hh, &db_hh}};
  const char* names[] = {"dx", "dh", "dw_ih", "dw_hh", "db_ih", "db_hh"};
  for (size_t i = 0; i < pairs.size(); ++i) {
    expect_all_written(*pairs[i].second, names[i]);
    expect_gradient(*pairs[i].first, out, dh_next, *pairs[i].second, names[i]);
  }
}

// Masks as mt-dnn builds them: row 0 keeps everything, row 1 is right-padded, row 2 keeps a middle segment
// (the "premise" mask keeps segment B), row 3 keeps nothing.
std::vector<uint8_t> test_mask(int64_t length) {
  std::vector<uint8_t> mask(4 * length, 0);
  for (int64_t l = length - 2; l < length; ++l) mask[1 * length + l] = 1;
  for (int64_t l = 0; l < length; ++l) mask[2 * length + l] = l < 2 || l == length - 1;
  for (int64_t l = 0; l < length; ++l) mask[3 * length + l] = 1;
  return mask;
}

// Naive masked softmax + weighted sum in double; all-masked rows give zeros.
void naive_attention(const std::vector<double>& scores, const std::vector<uint8_t>& mask,
                     const std::vector<float>& values, int64_t batch, int64_t length, int64_t hidden,
                     std::vector<double>& alpha, std::vector<double>& summary) {
  alpha.assign(batch * length, 0.0);
  summary.assign(batch * hidden, 0.0);
  for (int64_t b = 0; b < batch; ++b) {
    double total = 0;
    for (int64_t l = 0; l < length; ++l) total += mask[b * length + l] ? 0 : std::exp(scores[b * length + l]);
    if (total == 0) continue;
    for (int64_t l = 0; l < length; ++l) {
      alpha[b * length + l] = mask[b * length + l] ? 0 : std::exp(scores[b * length + l]) / total;
      for (int64_t i = 0; i < hidden; ++i) {
        summary[b * hidden + i] += alpha[b * length + l] * values[(b * length + l) * hidden + i];
      }
    }
  }
}

TEST(CpuSan, SelfAttentionMatchesNaiveAndFiniteDifferences) {
  const int64_t batch = 4, length = 6, hidden = 5;
  auto memory = test::random_normal(batch * length * hidden, 121);
  auto weight = test::random_normal(hidden, 122);
  auto bias = test::random_normal(1, 123);
  const auto mask = test_mask(length);
  auto alpha = poisoned<float>(batch * length);
  const auto forward = [&] {
    auto summary = poisoned<float>(batch * hidden);
    cpu::san_self_attention_forward(memory.data(), mask.data(), weight.data(), bias.data(), summary.data(),
                                    alpha.data(), batch, length, hidden);
    return summary;
  };
  const auto summary = forward();
  expect_all_written(summary, "summary");
  expect_all_written(alpha, "saved_alpha");
  std::vector<double> scores(batch * length), ref_alpha, ref_summary;
  for (int64_t bl = 0; bl < batch * length; ++bl) {
    scores[bl] = bias[0];
    for (int64_t i = 0; i < hidden; ++i) scores[bl] += static_cast<double>(memory[bl * hidden + i]) * weight[i];
  }
  naive_attention(scores, mask, memory, batch, length, hidden, ref_alpha, ref_summary);
  expect_close(summary, ref_summary, "summary");
  expect_close(alpha, ref_alpha, "alpha");

  const auto dsummary = test::random_normal(batch * hidden, 124);
  auto dmemory = poisoned<float>(memory.size()), dweight = poisoned<float>(hidden), dbias = poisoned<float>(1);
  cpu::san_self_attention_backward(dsummary.data(), memory.data(), mask.data(), weight.data(), alpha.data(),
                                   dmemory.data(), dweight.data(), dbias.data(), batch, length, hidden);
  expect_all_written(dmemory, "dmemory");
  expect_all_written(dweight, "dweight");
  expect_gradient(memory, forward, dsummary, dmemory, "dmemory");
  expect_gradient(weight, forward, dsummary, dweight, "dweight");
  // Softmax is shift-invariant, so the bias gradient is 0 up to rounding, analytically and numerically.
  EXPECT_LE(std::fabs(dbias[0]), 1e-6);
  const auto cmp = test::compare_with_finite_differences(
      bias, [&] { return test::project(forward(), dsummary); }, dbias, test::kGradientEps);
  EXPECT_LE(cmp.numeric_norm, 1e-3);
}

TEST(CpuSan, BilinearAttentionMatchesNaiveAndFiniteDifferences) {
  const int64_t batch = 4, length = 7, hm = 5, hs = 3;  // Hm != Hs, so a transposed W cannot pass
  auto keys = test::random_normal(batch * length * hm, 131);
  auto values = test::random_normal(batch * length * hm, 132);
  auto state = test::random_normal(batch * hs, 133);
  auto weight = test::random_normal(hm * hs, 134, 0.7f);
  auto bias = test::random_normal(hm, 135, 0.5f);
  const auto mask = test_mask(length);
  auto projection = poisoned<float>(batch * hm);
  auto alpha = poisoned<float>(batch * length);
  const auto forward = [&] {
    auto summary = poisoned<float>(batch * hm);
    cpu::san_bilinear_attention_forward(keys.data(), values.data(), state.data(), mask.data(), weight.data(),
                                        bias.data(), summary.data(), projection.data(), alpha.data(), batch,
                                        length, hm, hs);
    return summary;
  };
  const auto summary = forward();
  expect_all_written(summary, "summary");
  expect_all_written(projection, "saved_projection");
  std::vector<double> scores(batch * length), ref_alpha, ref_summary;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> p(hm);
    for (int64_t i = 0; i < hm; ++i) {
      p[i] = bias[i];
      for (int64_t j = 0; j < hs; ++j) p[i] += static_cast<double>(weight[i * hs + j]) * state[b * hs + j];
    }
    for (int64_t l = 0; l < length; ++l) {
      scores[b * length + l] = 0;
      for (int64_t i = 0; i < hm; ++i) scores[b * length + l] += keys[(b * length + l) * hm + i] * p[i];
    }
  }
  naive_attention(scores, mask, values, batch, length, hm, ref_alpha, ref_summary);
  expect_close(summary, ref_summary, "summary");
  expect_close(alpha, ref_alpha, "alpha");

  const auto dsummary = test::random_normal(batch * hm, 136);
  auto dkeys = poisoned<float>(keys.size()), dvalues = poisoned<float>(values.size());
  auto dstate = poisoned<float>(state.size()), dweight = poisoned<float>(weight.size());
  auto dbias = poisoned<float>(bias.size());
  cpu::san_bilinear_attention_backward(dsummary.data(), keys.data(), values.data(), state.data(), mask.data(),
                                       weight.data(), projection.data(), alpha.data(), dkeys.data(),
                                       dvalues.data(), dstate.data(), dweight.data(), dbias.data(), batch, length,
                                       hm, hs);
  for (auto* g : {&dkeys, &dvalues, &dstate, &dweight, &dbias}) expect_all_written(*g, "bilinear gradient");
  expect_gradient(keys, forward, dsummary, dkeys, "dkeys");
  expect_gradient(values, forward, dsummary, dvalues, "dvalues");
  expect_gradient(state, forward, dsummary, dstate, "dstate");
  expect_gradient(weight, forward, dsummary, dweight, "dweight");
  expect_gradient(bias, forward, dsummary, dbias, "dbias");
}

TEST(CpuSan, MergeFeaturesForwardAndBackward) {
  const int64_t batch = 3, hidden = 4;
  auto x = test::random_normal(batch * hidden, 141);
  auto s = test::random_normal(batch * hidden, 142);
  const auto forward = [&] {
    auto features = poisoned<float>(batch * 4 * hidden);
    cpu::san_merge_forward(x.data(), s.data(), features.data(), batch, hidden);
    return features;
  };
  const auto features = forward();
  std::vector<double> ref(batch * 4 * hidden);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < hidden; ++i) {
      const double xi = x[b * hidden + i], si = s[b * hidden + i];
      const double row[4] = {xi, si, std::fabs(xi - si), xi * si};
      for (int k = 0; k < 4; ++k) ref[b * 4 * hidden + k * hidden + i] = row[k];
    }
  }
  expect_close(features, ref, "features");
  const auto dfeatures = test::random_normal(batch * 4 * hidden, 143);
  auto dx = poisoned<float>(x.size()), ds = poisoned<float>(s.size());
  cpu::san_merge_backward(dfeatures.data(), x.data(), s.data(), dx.data(), ds.data(), batch, hidden);
  expect_gradient(x, forward, dfeatures, dx, "dx");
  expect_gradient(s, forward, dfeatures, ds, "ds");
}

TEST(CpuSan, TurnMaskFollowsUniforms) {
  // Two rows, K = 5, drop_p = 0.1: keep when u < 0.9; the last column picks the always-kept turn.
  const std::vector<float> uniforms = {0.95f, 0.1f, 0.92f, 0.5f, 0.899f, 0.0f,    // forced turn 0 (kept anyway)
                                       0.99f, 0.99f, 0.99f, 0.99f, 0.99f, 0.7f};  // forced turn 3
  auto mask = poisoned<float>(10);
  cpu::san_turn_mask(uniforms.data(), mask.data(), 2, 5, 0.1f);
  const float k = 1.0f / 0.9f;
  const std::vector<double> expected = {k, k, 0, k, k, 0, 0, 0, k, 0};
  expect_close(mask, expected, "turn_mask", 0, 1e-7);
  cpu::san_turn_mask(uniforms.data(), mask.data(), 2, 5, 0.0f);  // evaluation: every turn, weight 1
  expect_close(mask, std::vector<double>(10, 1.0), "turn_mask at drop_p 0", 0, 0);
}

TEST(CpuSan, TurnAverageMatchesNaiveAndFiniteDifferences) {
  const int64_t turns = 5, batch = 3, classes = 4;
  auto logits = test::random_normal(turns * batch * classes, 151, 1.5f);
  const float k = 1.0f / 0.9f;
  const std::vector<float> mask = {k, 0, k, k, k, k, k, k, k, k, 0, 0, k, 0, 0};  // (B, K), row 2 keeps one turn
  auto probs = poisoned<float>(logits.size());
  const auto forward = [&] {
    auto scores = poisoned<float>(batch * classes);
    cpu::san_turn_average_forward(logits.data(), mask.data(), scores.data(), probs.data(), turns, batch, classes);
    return scores;
  };
  const auto scores = forward();
  expect_all_written(probs, "saved_probs");
  std::vector<double> ref(batch * classes, 0.0);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < turns; ++t) {
      const float* z = logits.data() + (t * batch + b) * classes;
      double total = 0;
      for (int64_t c = 0; c < classes; ++c) total += std::exp(static_cast<double>(z[c]));
      for (int64_t c = 0; c < classes; ++c) {
        ref[b * classes + c] += mask[b * turns + t] * std::exp(z[c]) / total / turns;
      }
    }
    for (int64_t c = 0; c < classes; ++c) ref[b * classes + c] = std::log(ref[b * classes + c]);
  }
  expect_close(scores, ref, "scores");

  const auto dscores = test::random_normal(batch * classes, 152);
  auto dlogits = poisoned<float>(logits.size());
  cpu::san_turn_average_backward(dscores.data(), mask.data(), probs.data(), dlogits.data(), turns, batch, classes);
  expect_all_written(dlogits, "dturn_logits");
  expect_gradient(logits, forward, dscores, dlogits, "dturn_logits");
  // Turn 1 is dropped in row 0: its logits get exactly zero gradient.
  for (int64_t c = 0; c < classes; ++c) EXPECT_EQ(dlogits[(1 * batch + 0) * classes + c], 0.0f);
}

}  // namespace
}  // namespace sb
