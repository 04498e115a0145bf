// CPU reference of the SQuAD span loss (span_loss.h): clamp the labels as HF does, then two plain
// cross-entropies (no smoothing) with ignore_index = seq. Source: huggingface/transformers
// src/transformers/models/bert/modeling_bert.py, BertForQuestionAnswering.forward:
//   ignored_index = start_logits.size(1); positions.clamp(0, ignored_index);
//   CrossEntropyLoss(ignore_index=ignored_index); total_loss = (start_loss + end_loss) / 2
#include "src/cpu/span_loss.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"
#include "src/cpu/cross_entropy.h"

namespace sb::cpu {
namespace {

std::vector<int32_t> clamp_positions(const int32_t* positions, int64_t batch, int64_t seq) {
  std::vector<int32_t> clamped(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    clamped[b] = static_cast<int32_t>(std::clamp<int64_t>(positions[b], 0, seq));
  }
  return clamped;
}

int64_t kept_rows(const std::vector<int32_t>& clamped, int64_t seq) {
  return std::count_if(clamped.begin(), clamped.end(), [seq](int32_t p) { return p != seq; });
}

void check_sizes(const char* op, int64_t batch, int64_t seq) {
  SB_CHECK(batch >= 0, std::string(op) + ": batch must be >= 0");
  SB_CHECK(seq >= 1 && seq < INT32_MAX, std::string(op) + ": seq must be in [1, INT32_MAX)");
}

}  // namespace

void span_loss_forward(const float* start_logits, const float* end_logits, const int32_t* start_positions,
                       const int32_t* end_positions, float* row_losses, float* saved_logsumexp, float* loss,
                       int64_t batch, int64_t seq) {
  check_sizes("span_loss_forward", batch, seq);
  const int32_t ignore_index = static_cast<int32_t>(seq);
  const float* logits[2] = {start_logits, end_logits};
  const int32_t* positions[2] = {start_positions, end_positions};
  double total = 0.0;
  for (int side = 0; side < 2; ++side) {
    const std::vector<int32_t> targets = clamp_positions(positions[side], batch, seq);
    float side_sum = 0.0f;
    int64_t side_count = 0;
    softmax_cross_entropy_forward(logits[side], targets.data(), row_losses + side * batch,
                                  saved_logsumexp + side * batch, &side_sum, &side_count, batch, seq, 0.0f,
                                  ignore_index);
    if (side_count > 0) total += static_cast<double>(side_sum) / static_cast<double>(side_count);
  }
  *loss = static_cast<float>(total / 2.0);
}

void span_loss_backward(const float* start_logits, const float* end_logits, const int32_t* start_positions,
                        const int32_t* end_positions, const float* saved_logsumexp, float* dstart_logits,
                        float* dend_logits, int64_t batch, int64_t seq, float dloss) {
  check_sizes("span_loss_backward", batch, seq);
  const int32_t ignore_index = static_cast<int32_t>(seq);
  const float* logits[2] = {start_logits, end_logits};
  const int32_t* positions[2] = {start_positions, end_positions};
  float* dlogits[2] = {dstart_logits, dend_logits};
  for (int side = 0; side < 2; ++side) {
    const std::vector<int32_t> targets = clamp_positions(positions[side], batch, seq);
    const int64_t count = kept_rows(targets, seq);
    // d loss / d row_loss = dloss / 2 / count on every kept row; with none kept every row is ignored and the
    // scale is never used.
    const float scale = count > 0 ? static_cast<float>(static_cast<double>(dloss) / (2.0 * count)) : 0.0f;
    softmax_cross_entropy_backward(logits[side], targets.data(), saved_logsumexp + side * batch, dlogits[side],
                                   batch, seq, 0.0f, ignore_index, scale);
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_span_loss_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"span_loss",
       [](CpuExecutor& e, const Node& n) {
         cpu::span_loss_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.i32(n.inputs[2]), e.i32(n.inputs[3]),
                                e.f32(n.outputs[2]), e.f32(n.outputs[1]), e.f32(n.outputs[0]), size_attr(n, "batch"),
                                size_attr(n, "seq"));
       }},
      {"span_loss_backward",  // the loss starts the backward pass: dloss = 1 (times its weight in a sum)
       [](CpuExecutor& e, const Node& n) {
         cpu::span_loss_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.i32(n.inputs[2]), e.i32(n.inputs[3]),
                                 e.f32(n.inputs[4]), e.f32(n.outputs[0]), e.f32(n.outputs[1]), size_attr(n, "batch"),
                                 size_attr(n, "seq"), gradient_weight(n));
       }},
  });
}

}  // namespace sb::detail
