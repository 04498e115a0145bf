// SQuAD span loss, CPU reference: the extractive-QA loss of HF BertForQuestionAnswering (WORKLOADS.md §11),
// built on softmax_cross_entropy (cross_entropy.h). loss = (CE(start) + CE(end)) / 2, each CE a mean over the
// batch rows it counts. Tests: build/tests/unit_tests --gtest_filter='CpuSpanLoss*'.
#pragma once

#include <cstdint>

namespace sb::cpu {

// HF clamps both position vectors to [0, seq] and passes ignore_index = seq to CrossEntropyLoss: a label
// past the end of the (truncated) sequence is ignored, a negative one becomes position 0 ([CLS]). Each of
// the two means divides by its own count of kept rows; where a side keeps no row its mean is taken as 0
// (PyTorch would return NaN), so such a batch trains nothing instead of poisoning the step.
//   start_logits, end_logits  (batch, seq)
//   start_positions, end_positions  (batch)  any int32, clamped as above
//   row_losses       (2, batch)  start CE then end CE per row, 0 where ignored
//   saved_logsumexp  (2, batch)  for span_loss_backward
//   loss             (1)
void span_loss_forward(const float* start_logits, const float* end_logits, const int32_t* start_positions,
                       const int32_t* end_positions, float* row_losses, float* saved_logsumexp, float* loss,
                       int64_t batch, int64_t seq);

// Gradients of `loss` scaled by dloss (the upstream gradient, 1 for the final loss); overwrites
// dstart_logits and dend_logits (batch, seq). Positions are the same unclamped labels the forward saw.
void span_loss_backward(const float* start_logits, const float* end_logits, const int32_t* start_positions,
                        const int32_t* end_positions, const float* saved_logsumexp, float* dstart_logits,
                        float* dend_logits, int64_t batch, int64_t seq, float dloss);

}  // namespace sb::cpu
