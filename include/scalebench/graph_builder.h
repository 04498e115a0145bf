// The API workloads build their forward graph with (ARCHITECTURE.md step 3). Each call appends one node
// with static shapes and returns the output tensor; the backward graph is appended later by autodiff
// (autodiff.h). Workloads never see a device, a kernel or a library: only these calls.
#pragma once

#include <map>
#include <utility>
#include <string>
#include <vector>

#include "scalebench/graph.h"

namespace sb {

class GraphBuilder {
 public:
  // `compute` is the dtype of activations and their gradients: fp32, or bf16 for mixed precision, where
  // parameters stay fp32 (the optimizer's master weights) and the builder inserts one `cast` node per
  // parameter that a matrix product reads (PyTorch autocast's cast-once-per-forward); LayerNorm, bias,
  // embedding and position tables are read as fp32 by their kernels directly. Losses and softmax/LayerNorm
  // statistics are fp32 at any precision.
  explicit GraphBuilder(Graph& graph, DType compute = DType::kFloat32);
  Graph& graph() { return graph_; }
  DType compute_dtype() const { return compute_; }

  // Leaves of the graph.
  TensorId parameter(const std::string& name, std::vector<int64_t> shape);
  TensorId input(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::kFloat32);

  // y (rows, out) = x (rows, in) · wᵀ (+ bias), w shaped (out, in) as PyTorch's nn.Linear. x may have
  // leading dimensions; they are flattened into rows and restored in y.
  TensorId linear(TensorId x, TensorId weight, TensorId bias = kNoTensor);
  // C = alpha · op(A) · op(B) on the last two dimensions, batched over the leading ones (same count on both).
  TensorId matmul(TensorId a, TensorId b, bool transpose_a, bool transpose_b, double alpha = 1.0);
  TensorId add(TensorId a, TensorId b);  // same shapes (residual connections)
  TensorId gelu(TensorId x);             // exact erf form (BERT)
  TensorId relu(TensorId x);
  TensorId tanh(TensorId x);
  TensorId layernorm(TensorId x, TensorId gamma, TensorId beta, double epsilon);
  // Rows of `table` (vocab, dim) gathered by int32 `ids`; output shape = ids' shape + (dim).
  TensorId embedding(TensorId ids, TensorId table, int64_t padding_idx = -1);
  // Attention probabilities from scores (batch, heads, q, k): softmax(scale · scores) with keys at or past
  // key_lengths[b] (int32 input, optional) and, when causal, keys after the query masked to 0.
  TensorId masked_softmax(TensorId scores, double scale, TensorId key_lengths = kNoTensor, bool causal = false);
  // Mean over non-ignored rows of the label-smoothed cross-entropy of logits (rows, classes) against int32
  // targets (rows). Returns a one-element loss tensor; the graph's backward starts there.
  TensorId softmax_cross_entropy(TensorId logits, TensorId targets, double label_smoothing, int64_t ignore_index);
  // SQuAD's span loss (HF BertForQuestionAnswering): (mean CE(start) + mean CE(end)) / 2 over logits
  // (batch, seq) each, int32 positions (batch) clamped to [0, seq] with seq ignored (src/cpu/span_loss.h).
  // Returns a one-element loss tensor; the graph's backward starts there.
  TensorId span_loss(TensorId start_logits, TensorId end_logits, TensorId start_positions, TensorId end_positions);
  TensorId scale(TensorId x, double factor);  // y = factor · x (fairseq's embedding scale √d)
  // y (lead..., rows, cols) = x + table (rows, cols) repeated over the leading dimensions (positions added to
  // every sequence of a batch).
  TensorId add_broadcast(TensorId x, TensorId table);
  // (a, b, c, d) -> (a, c, b, d): splitting heads, (batch, time, heads, dh) -> (batch, heads, time, dh), and back.
  TensorId swap_middle(TensorId x);
  // y (lead...) = x (lead..., cols)[..., column]: one column with the last dimension dropped (the start and
  // end logits of SQuAD's 2-way head).
  TensorId select_column(TensorId x, int64_t column);
  // Inverted dropout with probability p (identity at p = 0: no node). Masks come from the counter-based
  // Philox stream of include/scalebench/philox.h, so the CPU and CUDA devices draw the same masks; each
  // dropout node owns a fixed range of the stream, and the executor moves to a fresh range every step.
  TensorId dropout(TensorId x, double probability);
  // The sum of two losses (BERT's MLM + NSP): the backward pass gives each the unit gradient.
  TensorId add_losses(TensorId a, TensorId b);
  // A view with another shape over the same elements: a `view` node that runs nothing; the planner gives the
  // view the storage of x (and keeps x alive as long as the view is).
  TensorId reshape(TensorId x, std::vector<int64_t> shape);
  // x in the compute dtype: x itself, or (once per tensor, cached) a `cast` node's output.
  TensorId in_compute_dtype(TensorId x);
  TensorId converted(TensorId x, DType dtype);  // the same for any floating dtype

 private:
  TensorId activation(const std::string& name, std::vector<int64_t> shape);  // in the compute dtype
  TensorId activation(const std::string& name, std::vector<int64_t> shape, DType dtype);
  const std::vector<int64_t>& shape(TensorId id) const { return graph_.tensor(id).shape; }
  std::string next_name(const std::string& op);

  Graph& graph_;
  DType compute_;
  std::map<std::pair<TensorId, DType>, TensorId> copies_;  // (tensor, dtype) -> its cast into that dtype
  int counter_ = 0;
  int64_t dropout_blocks_ = 0;  // Philox blocks used by this graph's dropout nodes so far
};

}  // namespace sb
