// A whole SAN answer head unrolled from the sb::cpu blocks exactly as san.h describes (K = 5 turns, shared
// weights, turn mask, log of the masked mean, cross-entropy), with dropout off; finite differences of the final
// loss check that the blocks compose, including the per-turn weight gradients the graph has to sum.
// Run: unit_tests --gtest_filter='CpuSan.Head*'.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "src/cpu/cross_entropy.h"
#include "src/cpu/san.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/unit/cpu_loss_checks.h"

namespace sb {
namespace {

using test::poisoned;

constexpr int64_t kTurns = 5;  // mt-dnn answer_num_turn

struct SanHead {
  int64_t batch = 2, length = 7, hyp_length = 3, hidden = 4, classes = 3;
  std::vector<float> memory;                         // (B, L, H) encoder output
  std::vector<uint8_t> hyp_mask, premise_mask;       // (B, Lh), (B, L); 1 = excluded
  std::vector<float> w_sa, b_sa, w_bil, b_bil;       // Linear(H->1); Linear(H->H)
  std::vector<float> w_ih, w_hh, b_ih, b_hh;         // GRUCell(H, H)
  std::vector<float> w_cls, b_cls;                   // Linear(4H->C)
  std::vector<float> turn_mask;                      // (B, K)
  std::vector<int32_t> targets;

  // Forward state kept for backward, one entry per turn.
  std::vector<float> hyp, alpha_sa;
  std::vector<std::vector<float>> states, summaries, projections, alphas, features, gates;
  std::vector<float> turn_logits, probs, scores, logsumexp;

  explicit SanHead(uint32_t seed)
      : memory(test::random_normal(batch * length * hidden, seed)),
        hyp_mask({0, 0, 0, 0, 0, 1}),
        premise_mask({1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1}),
        w_sa(test::random_normal(hidden, seed + 1)), b_sa(test::random_normal(1, seed + 2)),
        w_bil(test::random_normal(hidden * hidden, seed + 3, 0.6f)), b_bil(test::random_normal(hidden, seed + 4, 0.5f)),
        w_ih(test::random_normal(3 * hidden * hidden, seed + 5, 0.6f)),
        w_hh(test::random_normal(3 * hidden * hidden, seed + 6, 0.6f)),
        b_ih(test::random_normal(3 * hidden, seed + 7, 0.5f)), b_hh(test::random_normal(3 * hidden, seed + 8, 0.5f)),
        w_cls(test::random_normal(classes * 4 * hidden, seed + 9, 0.6f)),
        b_cls(test::random_normal(classes, seed + 10, 0.5f)),
        targets(test::random_ids(batch, seed + 11, 0, static_cast<int32_t>(classes - 1))) {
    const std::vector<float> uniforms = {0.3f, 0.95f, 0.2f, 0.6f, 0.1f, 0.5f,    // turn 1 dropped
                                         0.1f, 0.2f, 0.3f, 0.97f, 0.4f, 0.9f};   // turn 3 dropped
    turn_mask = poisoned<float>(batch * kTurns);
    cpu::san_turn_mask(uniforms.data(), turn_mask.data(), batch, kTurns, 0.1f);
  }

  double forward() {
    const int64_t B = batch, H = hidden;
    hyp.assign(B * hyp_length * H, 0.0f);  // M[:, :Lh], the slice mt-dnn takes as hyp_mem
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < hyp_length * H; ++i) hyp[b * hyp_length * H + i] = memory[b * length * H + i];
    }
    alpha_sa = poisoned<float>(B * hyp_length);
    states.assign(kTurns + 1, std::vector<float>(B * H));
    cpu::san_self_attention_forward(hyp.data(), hyp_mask.data(), w_sa.data(), b_sa.data(), states[0].data(),
                                    alpha_sa.data(), B, hyp_length, H);
    summaries.assign(kTurns, std::vector<float>(B * H));
    projections.assign(kTurns, std::vector<float>(B * H));
    alphas.assign(kTurns, std::vector<float>(B * length));
    features.assign(kTurns, std::vector<float>(B * 4 * H));
    gates.assign(kTurns, std::vector<float>(B * 4 * H));
    turn_logits.assign(kTurns * B * classes, 0.0f);
    for (int64_t t = 0; t < kTurns; ++t) {
      cpu::san_bilinear_attention_forward(memory.data(), memory.data(), states[t].data(), premise_mask.data(),
                                          w_bil.data(), b_bil.data(), summaries[t].data(), projections[t].data(),
                                          alphas[t].data(), B, length, H, H);
      cpu::san_merge_forward(summaries[t].data(), states[t].data(), features[t].data(), B, H);
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t c = 0; c < classes; ++c) {
          double sum = b_cls[c];
          for (int64_t i = 0; i < 4 * H; ++i) {
            sum += static_cast<double>(w_cls[c * 4 * H + i]) * features[t][b * 4 * H + i];
          }
          turn_logits[(t * B + b) * classes + c] = static_cast<float>(sum);
        }
      }
      cpu::gru_cell_forward(summaries[t].data(), states[t].data(), w_ih.data(), w_hh.data(), b_ih.data(),
                            b_hh.data(), states[t + 1].data(), gates[t].data(), B, H, H);
    }
    probs.assign(turn_logits.size(), 0.0f);
    scores.assign(B * classes, 0.0f);
    cpu::san_turn_average_forward(turn_logits.data(), turn_mask.data(), scores.data(), probs.data(), kTurns, B,
                                  classes);
    std::vector<float> losses(B);
    logsumexp.assign(B, 0.0f);
    float loss_sum = 0;
    int64_t counted = 0;
    cpu::softmax_cross_entropy_forward(scores.data(), targets.data(), losses.data(), logsumexp.data(), &loss_sum,
                                       &counted, B, classes, 0.0f, cpu::kNoIgnoreIndex);
    double mean = 0;
    for (float l : losses) mean += l;
    return mean / B;
  }

  struct Grads {
    std::vector<float> memory, w_sa, w_bil, b_bil, w_ih, w_hh, b_ih, b_hh, w_cls;
  };

  // Reverse of forward; every block overwrites its outputs, so per-turn gradients land in scratch buffers
  // and are summed here, as the graph will.
  Grads backward() {
    const int64_t B = batch, H = hidden;
    Grads g{std::vector<float>(memory.size()), {}, std::vector<float>(w_bil.size()), std::vector<float>(H),
            std::vector<float>(w_ih.size()), std::vector<float>(w_hh.size()), std::vector<float>(3 * H),
            std::vector<float>(3 * H), std::vector<float>(w_cls.size())};
    const auto add = [](std::vector<float>& into, const std::vector<float>& v) {
      for (size_t i = 0; i < v.size(); ++i) into[i] += v[i];
    };
    std::vector<float> dscores(B * classes), dturn_logits(turn_logits.size());
    cpu::softmax_cross_entropy_backward(scores.data(), targets.data(), logsumexp.data(), dscores.data(), B,
                                        classes, 0.0f, cpu::kNoIgnoreIndex, 1.0f / B);
    cpu::san_turn_average_backward(dscores.data(), turn_mask.data(), probs.data(), dturn_logits.data(), kTurns, B,
                                   classes);
    std::vector<float> dstate_next(B * H, 0.0f);  // s_K is unused, so its gradient is 0
    std::vector<float> dfeatures(B * 4 * H), dx(B * H), ds(B * H), dx_gru(B * H), ds_gru(B * H);
    std::vector<float> dw_ih(w_ih.size()), dw_hh(w_hh.size()), db_ih(3 * H), db_hh(3 * H);
    std::vector<float> dkeys(memory.size()), dvalues(memory.size()), dstate(B * H), dw_bil(w_bil.size()), db_bil(H);
    for (int64_t t = kTurns - 1; t >= 0; --t) {
      const float* dlogits = dturn_logits.data() + t * B * classes;
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t i = 0; i < 4 * H; ++i) {
          double sum = 0;
          for (int64_t c = 0; c < classes; ++c) {
            sum += static_cast<double>(dlogits[b * classes + c]) * w_cls[c * 4 * H + i];
            g.w_cls[c * 4 * H + i] += dlogits[b * classes + c] * features[t][b * 4 * H + i];
          }
          dfeatures[b * 4 * H + i] = static_cast<float>(sum);
        }
      }
      cpu::san_merge_backward(dfeatures.data(), summaries[t].data(), states[t].data(), dx.data(), ds.data(), B, H);
      cpu::gru_cell_backward(dstate_next.data(), summaries[t].data(), states[t].data(), w_ih.data(), w_hh.data(),
                             gates[t].data(), dx_gru.data(), ds_gru.data(), dw_ih.data(), dw_hh.data(),
                             db_ih.data(), db_hh.data(), B, H, H);
      add(dx, dx_gru);
      add(ds, ds_gru);
      add(g.w_ih, dw_ih);
      add(g.w_hh, dw_hh);
      add(g.b_ih, db_ih);
      add(g.b_hh, db_hh);
      cpu::san_bilinear_attention_backward(dx.data(), memory.data(), memory.data(), states[t].data(),
                                           premise_mask.data(), w_bil.data(), projections[t].data(),
                                           alphas[t].data(), dkeys.data(), dvalues.data(), dstate.data(),
                                           dw_bil.data(), db_bil.data(), B, length, H, H);
      add(g.memory, dkeys);
      add(g.memory, dvalues);
      add(ds, dstate);
      add(g.w_bil, dw_bil);
      add(g.b_bil, db_bil);
      dstate_next = ds;
    }
    std::vector<float> dhyp(hyp.size()), db_sa(1);
    g.w_sa.assign(H, 0.0f);
    cpu::san_self_attention_backward(dstate_next.data(), hyp.data(), hyp_mask.data(), w_sa.data(),
                                     alpha_sa.data(), dhyp.data(), g.w_sa.data(), db_sa.data(), B, hyp_length, H);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < hyp_length * H; ++i) g.memory[b * length * H + i] += dhyp[b * hyp_length * H + i];
    }
    return g;
  }
};

TEST(CpuSan, HeadUnrolledOverFiveTurnsMatchesFiniteDifferences) {
  SanHead head(201);
  // One turn dropped in each row, the rest weighted 1 / 0.9.
  EXPECT_EQ(head.turn_mask[1], 0.0f);
  EXPECT_EQ(head.turn_mask[kTurns + 3], 0.0f);
  const double loss = head.forward();
  EXPECT_GT(loss, 0.0);
  const SanHead::Grads g = head.backward();
  const auto f = [&head] { return head.forward(); };
  const std::vector<std::pair<std::vector<float>*, const std::vector<float>*>> checks = {
      {&head.memory, &g.memory}, {&head.w_sa, &g.w_sa}, {&head.w_bil, &g.w_bil}, {&head.b_bil, &g.b_bil},
      {&head.w_ih, &g.w_ih},     {&head.w_hh, &g.w_hh}, {&head.b_ih, &g.b_ih},   {&head.b_hh, &g.b_hh},
      {&head.w_cls, &g.w_cls}};
  const char* names[] = {"memory", "w_sa", "w_bil", "b_bil", "w_ih", "w_hh", "b_ih", "b_hh", "w_cls"};
  for (size_t i = 0; i < checks.size(); ++i) {
    const auto cmp = test::compare_with_finite_differences(*checks[i].first, f, *checks[i].second,
                                                           test::kGradientEps);
    EXPECT_LE(cmp.relative_error, test::kGradientRelativeError) << names[i] << ": " << cmp.describe();
    EXPECT_GT(cmp.analytic_norm, 0.0) << names[i];
  }
}

}  // namespace
}  // namespace sb
