// Multi-head attention, feed-forward and post-norm residual blocks (workloads/transformer_layers.h).
#include "workloads/transformer_layers.h"

#include <cmath>

namespace sb::workloads {
namespace {

TensorId projection(GraphBuilder& b, const std::string& name, TensorId x, int64_t in, int64_t out) {
  return b.linear(x, b.parameter(name + ".weight", {out, in}), b.parameter(name + ".bias", {out}));
}

// (B, T, D) -> (B, heads, T, D / heads)
TensorId split_heads(GraphBuilder& b, TensorId x, const TransformerDims& d, int64_t time) {
  return b.swap_middle(b.reshape(x, {d.batch, time, d.heads, d.model / d.heads}));
}

}  // namespace

TensorId multi_head_attention(GraphBuilder& b, const std::string& prefix, TensorId query, TensorId memory,
                              const TransformerDims& d, TensorId key_lengths, bool causal) {
  const int64_t tq = b.graph().tensor(query).shape[1];
  const int64_t tk = b.graph().tensor(memory).shape[1];
  const TensorId q = split_heads(b, projection(b, prefix + ".q_proj", query, d.model, d.model), d, tq);
  const TensorId k = split_heads(b, projection(b, prefix + ".k_proj", memory, d.model, d.model), d, tk);
  const TensorId v = split_heads(b, projection(b, prefix + ".v_proj", memory, d.model, d.model), d, tk);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d.model / d.heads));
  const TensorId probs =
      b.dropout(b.masked_softmax(b.matmul(q, k, false, true), scale, key_lengths, causal), d.attention_dropout);
  const TensorId context = b.reshape(b.swap_middle(b.matmul(probs, v, false, false)), {d.batch, tq, d.model});
  return projection(b, prefix + ".out_proj", context, d.model, d.model);
}

TensorId feed_forward(GraphBuilder& b, const std::string& prefix, TensorId x, const TransformerDims& d, bool gelu) {
  TensorId hidden = projection(b, prefix + ".fc1", x, d.model, d.ffn);
  hidden = gelu ? b.gelu(hidden) : b.relu(hidden);
  return projection(b, prefix + ".fc2", hidden, d.ffn, d.model);
}

TensorId add_and_norm(GraphBuilder& b, const std::string& prefix, TensorId x, TensorId sublayer,
                      const TransformerDims& d, double epsilon) {
  return b.layernorm(b.add(x, b.dropout(sublayer, d.dropout)), b.parameter(prefix + ".weight", {d.model}),
                     b.parameter(prefix + ".bias", {d.model}), epsilon);
}

}  // namespace sb::workloads
