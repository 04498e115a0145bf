// The embedding family (src/core/ops/embedding.h): GraphBuilder::embedding, its rule and rows.
#include "src/core/ops/embedding.h"

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"

namespace sb {

NodeAttributes encode(const EmbeddingParams& params) {
  return {{"tokens", double(params.tokens)}, {"dim", double(params.dim)}, {"vocab", double(params.vocab)},
          {"padding_idx", double(params.padding_idx)}};
}

EmbeddingParams embedding_params(const Node& node) {
  return {ops::size_attribute(node, "tokens"), ops::size_attribute(node, "dim"), ops::size_attribute(node, "vocab"),
          ops::size_attribute(node, "padding_idx")};
}

TensorId GraphBuilder::embedding(TensorId ids, TensorId table, int64_t padding_idx) {
  if (graph_.tensor(ids).dtype != DType::kInt32) throw UsageError("embedding: ids must be int32");
  // The kernel reads an fp32 table (a parameter); a bf16 activation gathered by rows (BERT's masked
  // positions) is cast first.
  table = converted(table, DType::kFloat32);
  const std::vector<int64_t> ts = shape(table);
  if (ts.size() != 2) throw UsageError("embedding: table must be (vocab, dim)");
  std::vector<int64_t> out_shape = shape(ids);
  out_shape.push_back(ts[1]);
  TensorId out = activation(next_name("embedding"), out_shape);
  graph_.add_node(Node{"embedding", {ids, table}, {out},
                       encode(EmbeddingParams{graph_.tensor(ids).elements(), ts[1], ts[0], padding_idx}), false});
  return out;
}

namespace {

std::vector<detail::Contribution> embedding_backward(detail::BackwardContext& ctx, const Node& node,
                                                     const std::vector<TensorId>& dout) {
  if (!ctx.needs_gradient(node.inputs[1])) return {{kNoTensor, false}, {kNoTensor, false}};  // constant table
  const TensorId dtable = ctx.gradient_like(node.inputs[1]);
  ctx.emit(Node{"embedding_backward", {node.inputs[0], dout[0]}, {dtable}, node.attributes, true});
  return {{kNoTensor, false}, {dtable, true}};
}

}  // namespace

const OpDefs& embedding_ops() {
  static const OpDefs ops = {
      {"embedding", "embedding", OpGradient::kDifferentiable, embedding_backward},
      {"embedding_backward", "embedding", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
