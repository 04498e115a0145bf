// Fused softmax cross-entropy with label smoothing and an ignore index: the CPU reference (fp32 storage,
// fp64 log-sum-exp and reductions). Transformer Big's label-smoothed loss over V = 32,768 (WORKLOADS.md §7),
// BERT's MLM/NSP losses (§10), the SQuAD span loss (span_loss.h) and MT-DNN's task losses all run through it.
// Tests: build/tests/unit_tests --gtest_filter='CpuCrossEntropy*'.
#pragma once

#include <cstdint>
#include <limits>

namespace sb::cpu {

// Pass as ignore_index when no target value is to be ignored (no real target is this negative).
constexpr int32_t kNoIgnoreIndex = std::numeric_limits<int32_t>::min();

// Forward over `rows` independent rows of `classes` logits. Label smoothing is fairseq's current
// label_smoothed_nll_loss: the target keeps 1 - eps and every other class gets eps / (classes - 1)
// (formula and source in cross_entropy.cpp).
//   logits          (rows, classes)  any magnitude; log-sum-exp is taken in double after subtracting the max
//   targets         (rows)           in [0, classes), or ignore_index; anything else is fatal
//   losses          (rows)           per-row loss, 0 for ignored rows
//   saved_logsumexp (rows)           log sum_c exp(logit_c) of every row (ignored ones too), for backward
//   loss_sum        (1)              sum of `losses` (fairseq sums, then normalises the gradient)
//   counted_rows    (1)              rows whose target is not ignore_index
void softmax_cross_entropy_forward(const float* logits, const int32_t* targets, float* losses,
                                   float* saved_logsumexp, float* loss_sum, int64_t* counted_rows, int64_t rows,
                                   int64_t classes, float label_smoothing, int32_t ignore_index);

// dlogits = scale * (softmax(logits) - smoothed one-hot), 0 on ignored rows; overwrites dlogits
// (rows, classes). `scale` is the upstream gradient of loss_sum, e.g. 1 / counted_rows for a mean, or
// 1 / ntokens as fairseq normalises the summed loss.
void softmax_cross_entropy_backward(const float* logits, const int32_t* targets, const float* saved_logsumexp,
                                    float* dlogits, int64_t rows, int64_t classes, float label_smoothing,
                                    int32_t ignore_index, float scale);

}  // namespace sb::cpu
