// Embedding CPU reference (embedding.h). The backward pass groups tokens by id so that a row hit many times
// (frequent words, the [CLS] and EOS ids, every position of a batch) is summed in fp64 and rounded once.
#include "src/cpu/embedding.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

void check_ids(const char* op, const int32_t* ids, int64_t tokens, int64_t vocab) {
  for (int64_t t = 0; t < tokens; ++t) {
    if (ids[t] < 0 || ids[t] >= vocab) {
      SB_FATAL(std::string(op) + ": id " + std::to_string(ids[t]) + " of token " + std::to_string(t) +
               " is out of range [0, " + std::to_string(vocab) + ")");
    }
  }
}

}  // namespace

void embedding_forward(const int32_t* ids, const float* table, float* out, int64_t tokens, int64_t dim,
                       int64_t vocab) {
  SB_CHECK(tokens >= 0 && dim > 0 && vocab > 0, "embedding_forward: tokens >= 0, dim > 0 and vocab > 0 required");
  check_ids("embedding_forward", ids, tokens, vocab);
  for (int64_t t = 0; t < tokens; ++t) {
    std::copy(table + ids[t] * dim, table + (ids[t] + 1) * dim, out + t * dim);
  }
}

void embedding_backward_accumulate(const int32_t* ids, const float* dout, float* dtable, int64_t tokens,
                                   int64_t dim, int64_t vocab, int64_t padding_idx) {
  SB_CHECK(tokens >= 0 && dim > 0 && vocab > 0,
           "embedding_backward_accumulate: tokens >= 0, dim > 0 and vocab > 0 required");
  SB_CHECK(padding_idx == kNoPaddingIdx || (padding_idx >= 0 && padding_idx < vocab),
           "embedding_backward_accumulate: padding_idx " + std::to_string(padding_idx) + " outside [0, " +
               std::to_string(vocab) + ") and not kNoPaddingIdx");
  check_ids("embedding_backward_accumulate", ids, tokens, vocab);

  std::vector<int64_t> order(static_cast<size_t>(tokens));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [ids](int64_t a, int64_t b) { return ids[a] < ids[b]; });

  std::vector<double> row_sum(static_cast<size_t>(dim));
  for (size_t begin = 0; begin < order.size();) {
    const int32_t id = ids[order[begin]];
    size_t end = begin;
    while (end < order.size() && ids[order[end]] == id) ++end;
    if (id != padding_idx) {
      float* row = dtable + id * dim;
      for (int64_t c = 0; c < dim; ++c) row_sum[c] = row[c];
      for (size_t i = begin; i < end; ++i) {
        const float* d = dout + order[i] * dim;
        for (int64_t c = 0; c < dim; ++c) row_sum[c] += d[c];
      }
      for (int64_t c = 0; c < dim; ++c) row[c] = static_cast<float>(row_sum[c]);
    }
    begin = end;
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_embedding_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"embedding",
       [](CpuExecutor& e, const Node& n) {
         cpu::embedding_forward(e.i32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "tokens"),
                                size_attr(n, "dim"), size_attr(n, "vocab"));
       }},
      {"embedding_backward",
       [](CpuExecutor& e, const Node& n) {
         const int64_t vocab = size_attr(n, "vocab"), dim = size_attr(n, "dim");
         std::memset(e.f32(n.outputs[0]), 0, sizeof(float) * vocab * dim);
         cpu::embedding_backward_accumulate(e.i32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                                            size_attr(n, "tokens"), dim, vocab, size_attr(n, "padding_idx"));
       }},
  });
}

}  // namespace sb::detail
