// CUDA SAN answer-module blocks (sb::cuda): the same names, arguments and formulas as src/cpu/san.h plus a
// stream; every pointer is a device pointer, masks included (uint8, nonzero = excluded). Element types:
// fp32 only, activations and parameters alike (no bf16 instantiation: the graph builder keeps the SAN head
// in fp32, include/scalebench/graph_builder.h; a bf16 encoder's output is cast before the head).
// The products (GRU gates, projections, attention scores and weighted sums, weight gradients) are
// sb::cuda::gemm calls (cuBLASLt, fp32 or TF32 as set for the thread); the rest are small kernels in fp32
// with fixed-order reductions, fp64 where the CPU sums a batch (bias gradients) and for the turn average,
// so results are reproducible run to run. Backward calls borrow a per-stream scratch buffer (B·4H floats
// at most), allocated on first use: the first call on a stream must come before any graph capture.
// Tests: gpu_tests --gtest_filter='CudaSan*'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

void gru_cell_forward(const float* x, const float* h, const float* w_ih, const float* w_hh, const float* b_ih,
                      const float* b_hh, float* h_next, float* saved_gates, int64_t batch, int64_t input_size,
                      int64_t hidden_size, cudaStream_t stream);

void gru_cell_backward(const float* dh_next, const float* x, const float* h, const float* w_ih,
                       const float* w_hh, const float* saved_gates, float* dx, float* dh, float* dw_ih,
                       float* dw_hh, float* db_ih, float* db_hh, int64_t batch, int64_t input_size,
                       int64_t hidden_size, cudaStream_t stream);

void san_self_attention_forward(const float* memory, const uint8_t* mask, const float* weight, const float* bias,
                                float* summary, float* saved_alpha, int64_t batch, int64_t length,
                                int64_t hidden, cudaStream_t stream);

void san_self_attention_backward(const float* dsummary, const float* memory, const uint8_t* mask,
                                 const float* weight, const float* saved_alpha, float* dmemory, float* dweight,
                                 float* dbias, int64_t batch, int64_t length, int64_t hidden, cudaStream_t stream);

void san_bilinear_attention_forward(const float* keys, const float* values, const float* state,
                                    const uint8_t* mask, const float* weight, const float* bias, float* summary,
                                    float* saved_projection, float* saved_alpha, int64_t batch, int64_t length,
                                    int64_t memory_hidden, int64_t state_hidden, cudaStream_t stream);

void san_bilinear_attention_backward(const float* dsummary, const float* keys, const float* values,
                                     const float* state, const uint8_t* mask, const float* weight,
                                     const float* saved_projection, const float* saved_alpha, float* dkeys,
                                     float* dvalues, float* dstate, float* dweight, float* dbias, int64_t batch,
                                     int64_t length, int64_t memory_hidden, int64_t state_hidden,
                                     cudaStream_t stream);

void san_merge_forward(const float* x, const float* s, float* features, int64_t batch, int64_t hidden,
                       cudaStream_t stream);

void san_merge_backward(const float* dfeatures, const float* x, const float* s, float* dx, float* ds,
                        int64_t batch, int64_t hidden, cudaStream_t stream);

// Bit for bit the CPU's mask: the thresholds 1 - drop_p and 1 / (1 - drop_p) are the same fp32 operations.
void san_turn_mask(const float* uniforms, float* turn_mask, int64_t batch, int64_t turns, float drop_p,
                   cudaStream_t stream);

void san_turn_average_forward(const float* turn_logits, const float* turn_mask, float* scores,
                              float* saved_probs, int64_t turns, int64_t batch, int64_t classes,
                              cudaStream_t stream);

void san_turn_average_backward(const float* dscores, const float* turn_mask, const float* saved_probs,
                               float* dturn_logits, int64_t turns, int64_t batch, int64_t classes,
                               cudaStream_t stream);

}  // namespace sb::cuda
