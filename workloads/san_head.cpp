// The SAN answer module unrolled over its turns (workloads/san_head.h). Per turn t, as SANClassifier.forward:
//   x_t      = softmax_l(drop(M)_l . (W drop(s_t) + b)) over the premise, summed over M   (attn + bmm)
//   logit_t  = proj(drop([x_t, s_t, |x_t - s_t|, x_t * s_t]))             (classifier, all turns at once)
//   s_t+1    = GRUCell(x_t, drop(s_t))                                                    (rnn)
// with s_0 the self-attentive summary of drop(hypothesis). mt-dnn computes s_K after the last turn although
// no score reads it; so does this graph (its forward FLOPs count, it gets no gradient).
#include "workloads/san_head.h"

#include <vector>

namespace sb::workloads {

SanHeadParameters san_head_parameters(GraphBuilder& b, const std::string& prefix, int64_t hidden, int64_t classes) {
  SanHeadParameters p;
  p.self_weight = b.parameter(prefix + ".query_wsum.linear.weight", {1, hidden});
  p.self_bias = b.parameter(prefix + ".query_wsum.linear.bias", {1});
  p.bilinear_weight = b.parameter(prefix + ".attn.linear.weight", {hidden, hidden});
  p.bilinear_bias = b.parameter(prefix + ".attn.linear.bias", {hidden});
  p.w_ih = b.parameter(prefix + ".rnn.weight_ih", {3 * hidden, hidden});
  p.w_hh = b.parameter(prefix + ".rnn.weight_hh", {3 * hidden, hidden});
  p.b_ih = b.parameter(prefix + ".rnn.bias_ih", {3 * hidden});
  p.b_hh = b.parameter(prefix + ".rnn.bias_hh", {3 * hidden});
  p.classifier_weight = b.parameter(prefix + ".classifier.proj.weight", {classes, 4 * hidden});
  p.classifier_bias = b.parameter(prefix + ".classifier.proj.bias", {classes});
  return p;
}

void declare_san_head_unused(GraphBuilder& b, const SanHeadParameters& p) {
  for (TensorId id : {p.self_weight, p.self_bias, p.bilinear_weight, p.bilinear_bias, p.w_ih, p.w_hh, p.b_ih,
                      p.b_hh, p.classifier_weight, p.classifier_bias}) {
    b.declare_unused_parameter(id);
  }
}

TensorId san_head_scores(GraphBuilder& b, const SanHeadParameters& p, const SanHeadInputs& in, double dropout,
                         double turn_dropout) {
  const int64_t batch = b.graph().tensor(in.memory).shape[0];
  TensorId state = b.san_self_attention(b.dropout(in.hypothesis, dropout), in.hypothesis_mask, p.self_weight,
                                        p.self_bias);  // (B, H)
  std::vector<TensorId> features;  // per turn (B, 4H)
  for (int64_t t = 0; t < kSanTurns; ++t) {
    const TensorId summary = b.san_bilinear_attention(b.dropout(in.memory, dropout), in.memory,
                                                      b.dropout(state, dropout), in.premise_mask, p.bilinear_weight,
                                                      p.bilinear_bias);  // (B, H)
    features.push_back(b.san_merge(summary, state));
    state = b.gru_cell(summary, b.dropout(state, dropout), p.w_ih, p.w_hh, p.b_ih, p.b_hh);
  }
  // The classifier of every turn in one product: (K, B, 4H) -> (K, B, classes). Its weight gradient then
  // comes from one GEMM (in fp32 under mixed precision) instead of a sum of K.
  const TensorId turn_logits = b.linear(b.dropout(b.stack(features), dropout), p.classifier_weight,
                                        p.classifier_bias);
  return b.san_turn_average(turn_logits, b.san_turn_mask(batch, kSanTurns, turn_dropout));
}

}  // namespace sb::workloads
