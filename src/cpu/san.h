// Building blocks of MT-DNN's SAN answer module (namisan/mt-dnn module/san.py SANClassifier, WORKLOADS.md §12),
// CPU reference with fp64 accumulation. Each block is one function pair with its saved tensors explicit; the
// graph unrolls the K = 5 turns from them. Tests: build/tests/unit_tests --gtest_filter='CpuSan*'.
#pragma once

#include <cstdint>

// One SAN head over the encoder output M (B, L, H), as SANClassifier.forward with mt-dnn's train.py defaults
// (answer_att_type bilinear, rnn gru, merge_opt 1, mem_type 1, num_turn 5, mem_drop_p 0.1):
//   s_0       = san_self_attention(drop(M[:, :Lh]), hypothesis mask, w, b)     LinearSelfAttn, Linear(H->1)
//   turn t = 0..K-1:
//     x_t     = san_bilinear_attention(keys drop(M), values M, state drop(s_t), premise mask, W, b)
//     logit_t = Linear(4H->C)(drop(san_merge(x_t, s_t)))                        Classifier, a plain GEMM
//     s_t+1   = gru_cell(x_t, drop(s_t))                                        nn.GRUCell(H, H)
//   scores    = san_turn_average(logit_0..K-1, san_turn_mask(...))  = log(mean_t mask_t softmax(logit_t))
// and the task loss is softmax_cross_entropy over `scores` (mt-dnn's F.cross_entropy renormalises the log of
// the masked mean). The last s_K is computed by mt-dnn but unused, so its GRU step needs no backward.
// Masks are PyTorch's masked_fill masks: (B, L) bytes, nonzero = excluded. mt-dnn's "hypothesis" mask keeps
// segment A ([CLS] A [SEP]) and its "premise" mask keeps segment B, so neither is a plain length.
// Gradient outputs are overwritten; a weight used on several turns gets one gradient buffer per turn, summed
// by the graph.

namespace sb::cpu {

// torch.nn.GRUCell, PyTorch's parameter layout and gate order (r, z, n):
//   r = sigmoid(W_ir x + b_ir + W_hr h + b_hr),  z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
//   n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),  h' = (1 - z) * n + z * h
//   x (B, I), h (B, H), w_ih (3H, I), w_hh (3H, H), b_ih (3H), b_hh (3H), h_next (B, H)
//   saved_gates (B, 4H): per row [r | z | n | W_hn h + b_hn], everything backward needs besides x and h.
void gru_cell_forward(const float* x, const float* h, const float* w_ih, const float* w_hh, const float* b_ih,
                      const float* b_hh, float* h_next, float* saved_gates, int64_t batch, int64_t input_size,
                      int64_t hidden_size);

// dh_next (B, H) -> dx (B, I), dh (B, H), dw_ih (3H, I), dw_hh (3H, H), db_ih (3H), db_hh (3H).
void gru_cell_backward(const float* dh_next, const float* x, const float* h, const float* w_ih,
                       const float* w_hh, const float* saved_gates, float* dx, float* dh, float* dw_ih,
                       float* dw_hh, float* db_ih, float* db_hh, int64_t batch, int64_t input_size,
                       int64_t hidden_size);

// LinearSelfAttn: alpha = softmax_l(memory_l . weight + bias) over unmasked l, summary = sum_l alpha_l memory_l.
//   memory (B, L, H), mask (B, L), weight (H), bias (1), summary (B, H), saved_alpha (B, L).
// A row with every position masked gets alpha = 0 and summary = 0 (PyTorch: NaN), like masked_softmax.
void san_self_attention_forward(const float* memory, const uint8_t* mask, const float* weight, const float* bias,
                                float* summary, float* saved_alpha, int64_t batch, int64_t length,
                                int64_t hidden);

// dsummary (B, H) -> dmemory (B, L, H), dweight (H), dbias (1). dbias is 0 up to rounding: softmax ignores a
// shift shared by every position, so the bias never changes the output (mt-dnn trains it all the same).
void san_self_attention_backward(const float* dsummary, const float* memory, const uint8_t* mask,
                                 const float* weight, const float* saved_alpha, float* dmemory, float* dweight,
                                 float* dbias, int64_t batch, int64_t length, int64_t hidden);

// BilinearFlatSim + softmax + weighted sum: p = W state + b, alpha = softmax_l(keys_l . p) over unmasked l,
// summary = sum_l alpha_l values_l. mt-dnn scores with dropout(M) but sums the undropped M, hence keys and
// values are separate inputs (pass the same tensor twice when dropout is off).
//   keys, values (B, L, Hm), state (B, Hs), mask (B, L), weight (Hm, Hs) as nn.Linear(Hs, Hm), bias (Hm),
//   summary (B, Hm), saved_projection (B, Hm) = W state + b, saved_alpha (B, L).
void san_bilinear_attention_forward(const float* keys, const float* values, const float* state,
                                    const uint8_t* mask, const float* weight, const float* bias, float* summary,
                                    float* saved_projection, float* saved_alpha, int64_t batch, int64_t length,
                                    int64_t memory_hidden, int64_t state_hidden);

// dsummary (B, Hm) -> dkeys, dvalues (B, L, Hm), dstate (B, Hs), dweight (Hm, Hs), dbias (Hm). dkeys and
// dvalues are separate buffers; when keys and values are one tensor the graph adds them.
void san_bilinear_attention_backward(const float* dsummary, const float* keys, const float* values,
                                     const float* state, const uint8_t* mask, const float* weight,
                                     const float* saved_projection, const float* saved_alpha, float* dkeys,
                                     float* dvalues, float* dstate, float* dweight, float* dbias, int64_t batch,
                                     int64_t length, int64_t memory_hidden, int64_t state_hidden);

// Classifier merge_opt 1: features = [x, s, |x - s|, x * s], x and s (B, H), features (B, 4H).
void san_merge_forward(const float* x, const float* s, float* features, int64_t batch, int64_t hidden);

// dfeatures (B, 4H) -> dx, ds (B, H); d|u|/du = sign(u) with sign(0) = 0, as torch.abs.
void san_merge_backward(const float* dfeatures, const float* x, const float* s, float* dx, float* ds,
                        int64_t batch, int64_t hidden);

// Stochastic turn dropout (mt-dnn generate_mask), from uniforms in [0, 1) so every device draws the same mask:
// uniforms (B, K + 1): column t < K keeps turn t when u < 1 - drop_p; column K picks one turn,
// floor(u * K), that is always kept. Kept turns get 1 / (1 - drop_p), dropped ones 0. turn_mask (B, K).
// Evaluation is drop_p = 0 (all ones).
void san_turn_mask(const float* uniforms, float* turn_mask, int64_t batch, int64_t turns, float drop_p);

// scores = log(mean_t turn_mask[b, t] * softmax(turn_logits[t, b])):
//   turn_logits (K, B, C), turn_mask (B, K), scores (B, C), saved_probs (K, B, C) = the per-turn softmax.
void san_turn_average_forward(const float* turn_logits, const float* turn_mask, float* scores,
                              float* saved_probs, int64_t turns, int64_t batch, int64_t classes);

// dscores (B, C) -> dturn_logits (K, B, C); 0 on dropped turns.
void san_turn_average_backward(const float* dscores, const float* turn_mask, const float* saved_probs,
                               float* dturn_logits, int64_t turns, int64_t batch, int64_t classes);

}  // namespace sb::cpu
