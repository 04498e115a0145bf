// The embedding-rows family: how a tied embedding table's gradient is split so that data parallelism can reduce
// its two halves apart (issue 26, docs/DESIGN.md "The tied embedding's tail"). The table's gradient is
//   grad = dense + late,
// where `dense` is what every other use contributes (the output projection's weight gradient: complete early in
// the backward pass) and `late` is what its lookups contribute (written by the very last backward nodes, and
// nonzero only in the rows the batch's ids touched). Autodiff (src/core/autodiff.cpp) writes `dense` straight into
// the gradient's bytes (a view of it) and adds `late` through four nodes:
//   embedding_rows_mark(ids...)          -> flags (vocab) int32: 1 where a lookup's id names the row (padding_idx
//                                           excepted: that row gets no gradient from a lookup), else 0
//   embedding_rows_compact(flags)        -> rows (vocab) int32: the rows whose flag is positive, ascending, then -1
//   embedding_rows_gather(late, rows)    -> packed (vocab, dim): packed[i] = late[rows[i]], zero where rows[i] < 0
//   embedding_rows_scatter_add(dense, packed, rows) -> grad: grad = dense; grad[rows[i]] += packed[i]
// On one rank this is exactly grad = dense + late (late is zero outside the marked rows, and x + 0 = x). Data
// parallelism (src/train/gradient_reducer.cpp) reduces `dense` as an ordinary bucket as soon as it is written,
// sums the ranks' flags between mark and compact (so every rank packs the same union of rows in the same order),
// and averages the first min(vocab, ranks x ids) packed rows between gather and scatter_add: the late half
// crosses the wire as the touched rows only.
#pragma once

#include <cstdint>
#include <vector>

#include "scalebench/graph.h"

namespace sb {

struct EmbeddingRowsParams {
  int64_t vocab = 0, dim = 0;
  int64_t padding_idx = -1;  // mark: the row a lookup never writes; negative: none
};
NodeAttributes encode(const EmbeddingRowsParams& params);
EmbeddingRowsParams embedding_rows_params(const Node& node);  // of any embedding_rows_* node

// One table's exchange, found in a graph by its four nodes (node indices; the tensors they link).
struct EmbeddingRowsExchange {
  int mark_node = -1, compact_node = -1, gather_node = -1, scatter_node = -1;
  int dense_writer = -1;  // the node that completes the dense part: its buckets are ready after it
  TensorId flags = kNoTensor, packed = kNoTensor, gradient = kNoTensor, dense = kNoTensor;
  int64_t vocab = 0, dim = 0;
  int64_t ids = 0;  // elements of every marked ids tensor: the most rows one rank can touch
};
// Every exchange among the graph's nodes, in the order of their scatter nodes. Throws UsageError when a node
// of the four has no partner (a graph pass that dropped one).
std::vector<EmbeddingRowsExchange> find_embedding_rows_exchanges(const Graph& graph);

// A tied table of a graph, split or not: a trained fp32 table (a parameter) read by forward embedding lookups and by
// some other forward node. Autodiff splits such a table's gradient where BackwardOptions::split_tied_table says so.
struct TiedTable {
  TensorId table = kNoTensor;
  int64_t rows = 0;
  int64_t ids = 0;  // elements of every lookup's ids tensor: the most rows one rank can touch
};
// Every tied table among the graph's forward nodes, in table order.
std::vector<TiedTable> find_tied_tables(const Graph& graph);

}  // namespace sb
