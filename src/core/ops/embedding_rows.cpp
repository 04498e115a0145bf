// The embedding-rows family (src/core/ops/embedding_rows.h): its attributes, its rows, and how a graph's
// exchanges are found.
#include "src/core/ops/embedding_rows.h"

#include <algorithm>
#include <map>

#include "scalebench/error.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"

namespace sb {

NodeAttributes encode(const EmbeddingRowsParams& params) {
  return {{"vocab", double(params.vocab)}, {"dim", double(params.dim)}, {"padding_idx", double(params.padding_idx)}};
}

EmbeddingRowsParams embedding_rows_params(const Node& node) {
  return {ops::size_attribute(node, "vocab"), ops::size_attribute(node, "dim"),
          ops::size_attribute(node, "padding_idx")};
}

std::vector<EmbeddingRowsExchange> find_embedding_rows_exchanges(const Graph& graph) {
  // Each node names its partner through the tensor it reads: scatter <- gather (packed) and compact (rows),
  // gather <- compact (rows), compact <- mark (flags).
  std::map<TensorId, int> writer;  // each tensor's last writer
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    for (TensorId out : graph.nodes()[n].outputs) writer[out] = static_cast<int>(n);
  }
  auto partner = [&](int node, size_t input, const char* op) {
    const Node& consumer = graph.nodes()[static_cast<size_t>(node)];
    const auto found = writer.find(consumer.inputs.at(input));
    if (found == writer.end() || graph.nodes()[static_cast<size_t>(found->second)].op != op) {
      throw UsageError(consumer.op + " (node " + std::to_string(node) + ") reads no " + op + " output");
    }
    return found->second;
  };
  std::vector<EmbeddingRowsExchange> exchanges;
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    const Node& node = graph.nodes()[n];
    if (node.op != "embedding_rows_scatter_add") continue;
    EmbeddingRowsExchange x;
    x.scatter_node = static_cast<int>(n);
    x.gather_node = partner(x.scatter_node, 1, "embedding_rows_gather");
    x.compact_node = partner(x.gather_node, 1, "embedding_rows_compact");
    x.mark_node = partner(x.compact_node, 0, "embedding_rows_mark");
    x.flags = graph.nodes()[static_cast<size_t>(x.mark_node)].outputs[0];
    x.packed = graph.nodes()[static_cast<size_t>(x.gather_node)].outputs[0];
    x.gradient = node.outputs[0];
    x.dense = node.inputs[0];
    const auto dense_writer = writer.find(x.dense);
    if (dense_writer == writer.end()) {
      throw UsageError("the dense part of '" + graph.tensor(x.gradient).name + "' is never written");
    }
    x.dense_writer = dense_writer->second;
    const EmbeddingRowsParams params = embedding_rows_params(node);
    x.vocab = params.vocab;
    x.dim = params.dim;
    for (TensorId ids : graph.nodes()[static_cast<size_t>(x.mark_node)].inputs) x.ids += graph.tensor(ids).elements();
    exchanges.push_back(x);
  }
  return exchanges;
}

std::vector<TiedTable> find_tied_tables(const Graph& graph) {
  std::map<TensorId, TiedTable> looked_up;
  for (const Node& node : graph.nodes()) {
    if (node.backward || node.op != "embedding") continue;
    const TensorInfo& table = graph.tensor(node.inputs.at(1));
    if (table.role != TensorRole::kParameter || table.dtype != DType::kFloat32) continue;
    TiedTable& tied = looked_up[node.inputs[1]];
    tied.table = node.inputs[1];
    tied.rows = table.shape.at(0);
    tied.ids += graph.tensor(node.inputs[0]).elements();
  }
  std::vector<TiedTable> tied;
  for (const auto& [table, lookups] : looked_up) {
    const bool read_otherwise = std::any_of(graph.nodes().begin(), graph.nodes().end(), [&](const Node& node) {
      return !node.backward && node.op != "embedding" &&
             std::find(node.inputs.begin(), node.inputs.end(), table) != node.inputs.end();
    });
    if (read_otherwise) tied.push_back(lookups);
  }
  return tied;
}

const OpDefs& embedding_rows_ops() {
  static const OpDefs ops = {
      {"embedding_rows_mark", "embedding_rows", OpGradient::kNotDifferentiable, nullptr},
      {"embedding_rows_compact", "embedding_rows", OpGradient::kNotDifferentiable, nullptr},
      {"embedding_rows_gather", "embedding_rows", OpGradient::kNotDifferentiable, nullptr},
      {"embedding_rows_scatter_add", "embedding_rows", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
