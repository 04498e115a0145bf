// One column of a (rows, cols) tensor as a (rows) tensor, and its gradient: how the SQuAD head's
// Linear(768 -> 2) logits (batch, seq, 2) become the start and end logits (batch, seq) of the span loss
// (WORKLOADS.md §11; HF splits them the same way, logits.split(1, dim=-1)). CPU reference; the CUDA kernels
// (src/cuda/select_column.h) take the same arguments plus a stream. Tests: unit_tests
// --gtest_filter='CpuSelectColumn*'.
#pragma once

#include <cstdint>

namespace sb::cpu {

// y[r] = x[r * cols + column] for r < rows.   x (rows, cols), y (rows), 0 <= column < cols.
void select_column_forward(const float* x, float* y, int64_t rows, int64_t cols, int64_t column);

// dx (rows, cols) = dy in `column`, 0 in every other column (overwrites dx). The other columns' gradients come
// from their own select_column nodes and are summed by autodiff.
void select_column_backward(const float* dy, float* dx, int64_t rows, int64_t cols, int64_t column);

}  // namespace sb::cpu
