// The embedding-rows CPU reference (embedding_rows.h).
#include "src/cpu/embedding_rows.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {

void embedding_rows_mark(const int32_t* ids, int64_t tokens, int32_t* flags, int64_t vocab, int64_t padding_idx) {
  SB_CHECK(vocab > 0 && tokens >= 0, "embedding_rows_mark: vocab > 0 and tokens >= 0 required");
  for (int64_t t = 0; t < tokens; ++t) {
    const int32_t id = ids[t];
    if (id < 0 || id >= vocab) {
      SB_FATAL("embedding_rows_mark: id " + std::to_string(id) + " of token " + std::to_string(t) +
               " is out of range [0, " + std::to_string(vocab) + ")");
    }
    if (id != padding_idx) flags[id] = 1;
  }
}

int64_t embedding_rows_compact(const int32_t* flags, int32_t* rows, int64_t vocab) {
  SB_CHECK(vocab > 0, "embedding_rows_compact: vocab > 0 required");
  int64_t n = 0;
  for (int64_t v = 0; v < vocab; ++v) {
    if (flags[v] < 0) SB_FATAL("embedding_rows_compact: flag " + std::to_string(v) + " is negative");
    if (flags[v] > 0) rows[n++] = static_cast<int32_t>(v);
  }
  std::fill(rows + n, rows + vocab, -1);
  return n;
}

void embedding_rows_gather(const float* late, const int32_t* rows, float* packed, int64_t vocab, int64_t dim) {
  SB_CHECK(vocab > 0 && dim > 0, "embedding_rows_gather: vocab > 0 and dim > 0 required");
  for (int64_t i = 0; i < vocab; ++i) {
    float* out = packed + i * dim;
    if (rows[i] < 0) {
      std::fill(out, out + dim, 0.0f);
    } else {
      SB_CHECK(rows[i] < vocab, "embedding_rows_gather: row " + std::to_string(rows[i]) + " outside the table");
      std::copy(late + rows[i] * dim, late + (rows[i] + 1) * dim, out);
    }
  }
}

void embedding_rows_scatter_add(const float* dense, const float* packed, const int32_t* rows, float* grad,
                                int64_t vocab, int64_t dim) {
  SB_CHECK(vocab > 0 && dim > 0, "embedding_rows_scatter_add: vocab > 0 and dim > 0 required");
  if (dense != grad) std::memcpy(grad, dense, sizeof(float) * static_cast<size_t>(vocab * dim));
  for (int64_t i = 0; i < vocab && rows[i] >= 0; ++i) {
    SB_CHECK(rows[i] < vocab, "embedding_rows_scatter_add: row " + std::to_string(rows[i]) + " outside the table");
    float* row = grad + rows[i] * dim;
    const float* add = packed + i * dim;
    for (int64_t c = 0; c < dim; ++c) row[c] += add[c];
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h).
namespace sb::detail {

void bind_embedding_rows_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"embedding_rows_mark",
       [](CpuExecutor& e, const Node& n) {
         const int64_t vocab = size_attr(n, "vocab");
         std::fill(e.i32(n.outputs[0]), e.i32(n.outputs[0]) + vocab, 0);
         for (TensorId ids : n.inputs) {
           cpu::embedding_rows_mark(e.i32(ids), e.graph().tensor(ids).elements(), e.i32(n.outputs[0]), vocab,
                                    size_attr(n, "padding_idx"));
         }
       }},
      {"embedding_rows_compact",
       [](CpuExecutor& e, const Node& n) {
         cpu::embedding_rows_compact(e.i32(n.inputs[0]), e.i32(n.outputs[0]), size_attr(n, "vocab"));
       }},
      {"embedding_rows_gather",
       [](CpuExecutor& e, const Node& n) {
         cpu::embedding_rows_gather(e.f32(n.inputs[0]), e.i32(n.inputs[1]), e.f32(n.outputs[0]),
                                    size_attr(n, "vocab"), size_attr(n, "dim"));
       }},
      {"embedding_rows_scatter_add",
       [](CpuExecutor& e, const Node& n) {
         cpu::embedding_rows_scatter_add(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.i32(n.inputs[2]),
                                         e.f32(n.outputs[0]), size_attr(n, "vocab"), size_attr(n, "dim"));
       }},
  });
}

}  // namespace sb::detail
