// Incremental attention for decode loops (workloads/transformer_decode.h).
#include "workloads/transformer_decode.h"

#include <cmath>

namespace sb::workloads {
namespace {

TensorId projection(GraphBuilder& b, const std::string& name, TensorId x, int64_t in, int64_t out) {
  return b.linear(x, b.parameter(name + ".weight", {out, in}), b.parameter(name + ".bias", {out}));
}

// (B, 1, D) -> (B, heads, 1, dh): the same bytes, since the time dimension is 1.
TensorId one_step_heads(GraphBuilder& b, TensorId x, const TransformerDims& d) {
  return b.reshape(x, {d.batch, d.heads, 1, d.model / d.heads});
}

TensorId attend(GraphBuilder& b, const std::string& prefix, TensorId q, TensorId keys, TensorId values,
                TensorId key_lengths, const TransformerDims& d) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(d.model / d.heads));
  const TensorId probs = b.masked_softmax(b.matmul(one_step_heads(b, q, d), keys, false, true), scale, key_lengths);
  const TensorId context = b.reshape(b.matmul(probs, values, false, false), {d.batch, 1, d.model});
  return projection(b, prefix + ".out_proj", context, d.model, d.model);
}

}  // namespace

TensorId cached_self_attention(GraphBuilder& b, const std::string& prefix, TensorId x, TensorId cache_k,
                               TensorId cache_v, TensorId counter, TensorId key_count, const TransformerDims& d) {
  const TensorId q = projection(b, prefix + ".q_proj", x, d.model, d.model);
  b.write_at_counter(cache_k, projection(b, prefix + ".k_proj", x, d.model, d.model), counter, 0);
  b.write_at_counter(cache_v, projection(b, prefix + ".v_proj", x, d.model, d.model), counter, 0);
  return attend(b, prefix, q, cache_k, cache_v, key_count, d);
}

std::pair<TensorId, TensorId> cross_attention_memory(GraphBuilder& b, const std::string& prefix, TensorId memory,
                                                     const TransformerDims& d) {
  const int64_t time = b.graph().tensor(memory).shape[1];
  auto heads = [&](TensorId x) {  // (B, S, D) -> (B, heads, S, dh)
    return b.swap_middle(b.reshape(x, {d.batch, time, d.heads, d.model / d.heads}));
  };
  return {heads(projection(b, prefix + ".k_proj", memory, d.model, d.model)),
          heads(projection(b, prefix + ".v_proj", memory, d.model, d.model))};
}

TensorId cached_cross_attention(GraphBuilder& b, const std::string& prefix, TensorId x, TensorId keys,
                                TensorId values, TensorId memory_lengths, const TransformerDims& d) {
  return attend(b, prefix, projection(b, prefix + ".q_proj", x, d.model, d.model), keys, values, memory_lengths, d);
}

void cast_decoder_layer_weights(GraphBuilder& b, const std::string& self_prefix, const std::string& cross_prefix,
                                const std::string& ffn_prefix, const TransformerDims& d) {
  auto cast = [&](const std::string& name, int64_t in, int64_t out) {
    b.in_compute_dtype(b.parameter(name + ".weight", {out, in}));
    b.in_compute_dtype(b.parameter(name + ".bias", {out}));
  };
  for (const char* p : {".q_proj", ".k_proj", ".v_proj", ".out_proj"}) cast(self_prefix + p, d.model, d.model);
  for (const char* p : {".q_proj", ".out_proj"}) cast(cross_prefix + p, d.model, d.model);
  cast(ffn_prefix + ".fc1", d.model, d.ffn);
  cast(ffn_prefix + ".fc2", d.ffn, d.model);
}

}  // namespace sb::workloads
