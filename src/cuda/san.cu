// CUDA SAN answer-module blocks (src/cuda/san.h). Products are sb::cuda::gemm calls on views of the
// row-major buffers; what is left is elementwise or a reduction over one batch row's positions:
//   gru_cell            4 GEMMs write W_hh h and W_ih x straight into saved_gates (B, 4H) (r and z summed
//                       there with beta = 1, the n parts apart), then one kernel applies biases and gates
//                       in place. Backward: one kernel forms the pre-activation gradients G (B, 4H) =
//                       [dr | dz | dn | dn * r] in scratch; dx, dh, dW are GEMMs with G, the bias
//                       gradients fp64 column sums of G.
//   attentions          scores and weighted sums are (batched) GEMMs with N or M = 1; the masked softmax
//                       and its backward are one block per batch row; the rank-one gradients (dvalues,
//                       dkeys, dmemory) one elementwise kernel.
//   merge, turn mask    elementwise; the turn mask bit for bit the CPU's.
//   turn average        one thread per batch row (K and C are a handful) in fp64, as the CPU.
#include <cuda_runtime.h>

#include <cmath>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "scalebench/error.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/gemm.h"
#include "src/cuda/grid.h"
#include "src/cuda/random_uniform.h"
#include "src/cuda/san.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;     // elementwise kernels, grid-stride
constexpr int kRowThreads = 256;  // one block per batch row: softmax over the positions, full sums

// ---------------------------------------------------------------- scratch

// One buffer per (device, stream), grown on demand and kept for the process (freed by the driver at exit,
// as gemm.cu's workspaces). Calls on one stream run in order, so they can share it; growing waits for the
// stream first, since work enqueued earlier may still read the old buffer.
float* stream_scratch(size_t floats, cudaStream_t stream) {
  struct Buffer {
    void* data = nullptr;
    size_t bytes = 0;
  };
  static std::mutex mutex;
  static auto* buffers = new std::map<std::pair<int, cudaStream_t>, Buffer>();  // intentionally leaked
  int device = 0;
  SB_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  Buffer& buffer = (*buffers)[{device, stream}];
  const size_t bytes = floats * sizeof(float);
  if (buffer.bytes < bytes) {
    if (buffer.data != nullptr) {
      SB_CUDA_CHECK(cudaStreamSynchronize(stream));
      SB_CUDA_CHECK(cudaFree(buffer.data));
    }
    SB_CUDA_CHECK(cudaMalloc(&buffer.data, bytes));
    buffer.bytes = bytes;
  }
  return static_cast<float*>(buffer.data);
}

// ---------------------------------------------------------------- reductions

struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Sum {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};

// The block's reduction, returned to every thread: warp butterflies, then the warps' partials combined in
// warp order (fixed, so reproducible). `shared` holds 32 values; the leading barrier lets a block call it
// again right after reading the previous result.
template <typename T, typename Op>
__device__ T block_reduce(T value, Op op, T* shared) {
  for (int offset = 16; offset > 0; offset >>= 1) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = value;
  __syncthreads();
  T result = shared[0];
  for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w) result = op(result, shared[w]);
  return result;
}

// ---------------------------------------------------------------- kernels

// In place over one row (block b): scores (+ *shift) -> softmax over unmasked positions, 0 elsewhere; a row
// with nothing unmasked is all 0 (the CPU's convention).
__global__ void masked_softmax_rows_kernel(float* scores, const uint8_t* mask, const float* shift,
                                           int64_t length) {
  __shared__ float partial[32];
  float* row = scores + blockIdx.x * length;
  const uint8_t* m = mask + blockIdx.x * length;
  const float add = shift != nullptr ? shift[0] : 0.0f;
  float local_max = -INFINITY;
  for (int64_t l = threadIdx.x; l < length; l += blockDim.x) {
    if (!m[l]) local_max = fmaxf(local_max, row[l] + add);
  }
  const float max_score = block_reduce(local_max, Max{}, partial);
  if (max_score == -INFINITY) {  // the same branch for the whole block
    for (int64_t l = threadIdx.x; l < length; l += blockDim.x) row[l] = 0.0f;
    return;
  }
  float local_sum = 0.0f;
  for (int64_t l = threadIdx.x; l < length; l += blockDim.x) {
    if (!m[l]) local_sum += expf(row[l] + add - max_score);
  }
  const float sum = block_reduce(local_sum, Sum{}, partial);
  for (int64_t l = threadIdx.x; l < length; l += blockDim.x) {
    row[l] = m[l] ? 0.0f : expf(row[l] + add - max_score) / sum;
  }
}

// In place over one row: dalpha -> dscore_l = alpha_l (dalpha_l - sum_k alpha_k dalpha_k). Masked positions
// have alpha 0 and get 0.
__global__ void softmax_rows_backward_kernel(const float* alpha, float* grad, int64_t length) {
  __shared__ float partial[32];
  const float* a = alpha + blockIdx.x * length;
  float* g = grad + blockIdx.x * length;
  float local = 0.0f;
  for (int64_t l = threadIdx.x; l < length; l += blockDim.x) local += a[l] * g[l];
  const float weighted = block_reduce(local, Sum{}, partial);
  for (int64_t l = threadIdx.x; l < length; l += blockDim.x) g[l] = a[l] * (g[l] - weighted);
}

// out[0] = sum of x (n), fp64, one block.
__global__ void sum_kernel(const float* x, int64_t n, float* out) {
  __shared__ double partial[32];
  double local = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) local += x[i];
  const double total = block_reduce(local, Sum{}, partial);
  if (threadIdx.x == 0) out[0] = static_cast<float>(total);
}

// out[c] = sum over rows r of x[r * ld + column(c)] in fp64, row order; column(c) = c + (c >= split ? skip
// : 0), so one launch can read a column block past a gap (the GRU's hidden bias gradient skips G's dn).
__global__ void column_sums_kernel(const float* x, int64_t rows, int64_t cols, int64_t ld, int64_t split,
                                   int64_t skip, float* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols; c += stride) {
    const int64_t column = c + (c >= split ? skip : 0);
    double sum = 0.0;
    for (int64_t r = 0; r < rows; ++r) sum += x[r * ld + column];
    out[c] = static_cast<float>(sum);
  }
}

// y (rows, cols) += bias (cols).
__global__ void add_bias_kernel(float* y, const float* bias, int64_t rows, int64_t cols) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * cols; i += stride) {
    y[i] += bias[i % cols];
  }
}

__device__ float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

// gates (B, 4H) holds [W_ir x + W_hr h | W_iz x + W_hz h | W_in x | W_hn h] on entry, [r | z | n | W_hn h +
// b_hn] on exit (the CPU's saved layout).
__global__ void gru_gates_kernel(float* gates, const float* h, const float* b_ih, const float* b_hh, float* h_next,
                                 int64_t batch, int64_t hidden) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < batch * hidden; i += stride) {
    const int64_t b = i / hidden, j = i % hidden;
    float* g = gates + b * 4 * hidden;
    const float r = sigmoid(g[j] + b_ih[j] + b_hh[j]);
    const float z = sigmoid(g[hidden + j] + b_ih[hidden + j] + b_hh[hidden + j]);
    const float hn = g[3 * hidden + j] + b_hh[2 * hidden + j];
    const float n = tanhf(g[2 * hidden + j] + b_ih[2 * hidden + j] + r * hn);
    h_next[i] = (1.0f - z) * n + z * h[i];
    g[j] = r;
    g[hidden + j] = z;
    g[2 * hidden + j] = n;
    g[3 * hidden + j] = hn;
  }
}

// G (B, 4H) = [da_r | da_z | da_n | da_n * r], the gradients of W_i* x + b_i* (first three blocks) and of
// W_h* h + b_h* (blocks 0, 1, 3); dh starts as z * dh_next, the direct path, and the GEMMs add the rest.
__global__ void gru_pre_activation_kernel(const float* dh_next, const float* h, const float* saved_gates, float* g,
                                          float* dh, int64_t batch, int64_t hidden) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < batch * hidden; i += stride) {
    const int64_t b = i / hidden, j = i % hidden;
    const float* s = saved_gates + b * 4 * hidden;
    const float r = s[j], z = s[hidden + j], n = s[2 * hidden + j], hn = s[3 * hidden + j];
    const float dout = dh_next[i];
    const float da_n = dout * (1.0f - z) * (1.0f - n * n);
    const float da_z = dout * (h[i] - n) * z * (1.0f - z);
    float* row = g + b * 4 * hidden;
    row[j] = da_n * hn * r * (1.0f - r);
    row[hidden + j] = da_z;
    row[2 * hidden + j] = da_n;
    row[3 * hidden + j] = da_n * r;
    dh[i] = z * dout;
  }
}

// dmemory[b, l, i] = alpha[b, l] * dsummary[b, i] + dscores[b, l] * weight[i]: the weighted sum's and the
// score's paths (LinearSelfAttn).
__global__ void self_attention_dmemory_kernel(const float* alpha, const float* dsummary, const float* dscores,
                                              const float* weight, float* dmemory, int64_t batch, int64_t length,
                                              int64_t hidden) {
  const int64_t total = batch * length * hidden;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t bl = e / hidden, i = e % hidden, b = bl / length;
    dmemory[e] = alpha[bl] * dsummary[b * hidden + i] + dscores[bl] * weight[i];
  }
}

// dvalues[b, l, i] = alpha[b, l] * dsummary[b, i], dkeys[b, l, i] = dscores[b, l] * projection[b, i].
__global__ void bilinear_dkeys_dvalues_kernel(const float* alpha, const float* dsummary, const float* dscores,
                                              const float* projection, float* dkeys, float* dvalues,
                                              int64_t batch, int64_t length, int64_t hidden) {
  const int64_t total = batch * length * hidden;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t bl = e / hidden, i = e % hidden, b = bl / length;
    dvalues[e] = alpha[bl] * dsummary[b * hidden + i];
    dkeys[e] = dscores[bl] * projection[b * hidden + i];
  }
}

__global__ void merge_forward_kernel(const float* x, const float* s, float* features, int64_t batch, int64_t hidden) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < batch * hidden; e += stride) {
    const int64_t b = e / hidden, i = e % hidden;
    float* f = features + b * 4 * hidden;
    const float xi = x[e], si = s[e];
    f[i] = xi;
    f[hidden + i] = si;
    f[2 * hidden + i] = fabsf(xi - si);
    f[3 * hidden + i] = xi * si;
  }
}

__global__ void merge_backward_kernel(const float* dfeatures, const float* x, const float* s, float* dx, float* ds,
                                      int64_t batch, int64_t hidden) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < batch * hidden; e += stride) {
    const int64_t b = e / hidden, i = e % hidden;
    const float* f = dfeatures + b * 4 * hidden;
    const float xi = x[e], si = s[e], diff = xi - si;
    const float sign = diff > 0.0f ? 1.0f : (diff < 0.0f ? -1.0f : 0.0f);  // torch.abs: sign(0) = 0
    dx[e] = f[i] + sign * f[2 * hidden + i] + si * f[3 * hidden + i];
    ds[e] = f[hidden + i] - sign * f[2 * hidden + i] + xi * f[3 * hidden + i];
  }
}

// One thread per batch row; keep_below = 1 - drop_p and keep_value = 1 / (1 - drop_p) come from the host.
__global__ void turn_mask_kernel(const float* uniforms, float* turn_mask, int64_t batch, int64_t turns,
                                 float keep_below, float keep_value) {
  const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  const float* u = uniforms + b * (turns + 1);
  int64_t forced = static_cast<int64_t>(u[turns] * static_cast<float>(turns));
  if (forced > turns - 1) forced = turns - 1;
  for (int64_t t = 0; t < turns; ++t) {
    turn_mask[b * turns + t] = t == forced || u[t] < keep_below ? keep_value : 0.0f;
  }
}

// softmax(z)[c] of one turn's logits z (classes) in fp64, as the CPU computes it.
__device__ double turn_probability(const float* z, int64_t classes, int64_t c) {
  double max_z = z[0];
  for (int64_t k = 1; k < classes; ++k) max_z = fmax(max_z, static_cast<double>(z[k]));
  double sum = 0.0;
  for (int64_t k = 0; k < classes; ++k) sum += exp(z[k] - max_z);
  return exp(z[c] - max_z) / sum;
}

// One thread per batch row (K and C are a handful; the softmax is recomputed rather than held in a
// per-thread array of unknown size). The mean sums the unrounded fp64 probabilities, as the CPU does.
__global__ void turn_average_forward_kernel(const float* turn_logits, const float* turn_mask, float* scores,
                                            float* saved_probs, int64_t turns, int64_t batch, int64_t classes) {
  const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  for (int64_t c = 0; c < classes; ++c) {
    double mean = 0.0;
    for (int64_t t = 0; t < turns; ++t) {
      const int64_t row = (t * batch + b) * classes;
      const double probability = turn_probability(turn_logits + row, classes, c);
      saved_probs[row + c] = static_cast<float>(probability);
      mean += static_cast<double>(turn_mask[b * turns + t]) / static_cast<double>(turns) * probability;
    }
    scores[b * classes + c] = static_cast<float>(log(mean));
  }
}

// mean_c of batch row b rebuilt from the saved fp32 probabilities in fp64 (the CPU's backward does the same).
__device__ double turn_mean(const float* turn_mask, const float* saved_probs, int64_t turns, int64_t batch,
                            int64_t classes, int64_t b, int64_t c) {
  double mean = 0.0;
  for (int64_t t = 0; t < turns; ++t) {
    mean += static_cast<double>(turn_mask[b * turns + t]) * saved_probs[(t * batch + b) * classes + c];
  }
  return mean / static_cast<double>(turns);
}

// dz_c = p_c (dprob_c - sum_k p_k dprob_k) with dprob_c = weight_t * dscore_c / mean_c, per turn.
__global__ void turn_average_backward_kernel(const float* dscores, const float* turn_mask, const float* saved_probs,
                                             float* dturn_logits, int64_t turns, int64_t batch, int64_t classes) {
  const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  for (int64_t t = 0; t < turns; ++t) {
    const float* p = saved_probs + (t * batch + b) * classes;
    float* dz = dturn_logits + (t * batch + b) * classes;
    const double weight = static_cast<double>(turn_mask[b * turns + t]) / static_cast<double>(turns);
    double weighted = 0.0;
    for (int64_t c = 0; c < classes; ++c) {
      weighted += p[c] * (weight * (dscores[b * classes + c] /
                                    turn_mean(turn_mask, saved_probs, turns, batch, classes, b, c)));
    }
    for (int64_t c = 0; c < classes; ++c) {
      const double dprob = weight * (dscores[b * classes + c] /
                                     turn_mean(turn_mask, saved_probs, turns, batch, classes, b, c));
      dz[c] = static_cast<float>(p[c] * (dprob - weighted));
    }
  }
}

// ---------------------------------------------------------------- launch helpers

void check_sizes(const char* op, std::initializer_list<int64_t> sizes) {
  for (int64_t size : sizes) {
    if (size < 1) throw UsageError(std::string("cuda::") + op + ": every size must be >= 1");
  }
}

unsigned blocks_for(int64_t items) { return static_cast<unsigned>(detail::grid_stride_blocks(items, kThreads)); }

unsigned rows_grid(const char* op, int64_t rows) {
  if (rows > INT32_MAX) throw UsageError(std::string("cuda::") + op + ": too many batch rows");
  return static_cast<unsigned>(rows);
}

}  // namespace

void gru_cell_forward(const float* x, const float* h, const float* w_ih, const float* w_hh, const float* b_ih,
                      const float* b_hh, float* h_next, float* saved_gates, int64_t batch, int64_t input_size,
                      int64_t hidden_size, cudaStream_t stream) {
  check_sizes("gru_cell_forward", {batch, input_size, hidden_size});
  const int64_t H = hidden_size, I = input_size, ld = 4 * H;
  gemm(false, true, batch, 2 * H, H, 1.0f, h, H, w_hh, H, 0.0f, saved_gates, ld, stream);                  // r, z
  gemm(false, true, batch, H, H, 1.0f, h, H, w_hh + 2 * H * H, H, 0.0f, saved_gates + 3 * H, ld, stream);  // W_hn h
  gemm(false, true, batch, 2 * H, I, 1.0f, x, I, w_ih, I, 1.0f, saved_gates, ld, stream);                  // r, z
  gemm(false, true, batch, H, I, 1.0f, x, I, w_ih + 2 * H * I, I, 0.0f, saved_gates + 2 * H, ld, stream);  // W_in x
  gru_gates_kernel<<<blocks_for(batch * H), kThreads, 0, stream>>>(saved_gates, h, b_ih, b_hh, h_next, batch, H);
  SB_CUDA_CHECK_LAUNCH();
}

void gru_cell_backward(const float* dh_next, const float* x, const float* h, const float* w_ih,
                       const float* w_hh, const float* saved_gates, float* dx, float* dh, float* dw_ih,
                       float* dw_hh, float* db_ih, float* db_hh, int64_t batch, int64_t input_size,
                       int64_t hidden_size, cudaStream_t stream) {
  check_sizes("gru_cell_backward", {batch, input_size, hidden_size});
  const int64_t H = hidden_size, I = input_size, ld = 4 * H;
  float* g = stream_scratch(static_cast<size_t>(batch * ld), stream);  // (B, 4H)
  gru_pre_activation_kernel<<<blocks_for(batch * H), kThreads, 0, stream>>>(dh_next, h, saved_gates, g, dh, batch, H);
  SB_CUDA_CHECK_LAUNCH();
  gemm(false, false, batch, I, 3 * H, 1.0f, g, ld, w_ih, I, 0.0f, dx, I, stream);
  gemm(false, false, batch, H, 2 * H, 1.0f, g, ld, w_hh, H, 1.0f, dh, H, stream);
  gemm(false, false, batch, H, H, 1.0f, g + 3 * H, ld, w_hh + 2 * H * H, H, 1.0f, dh, H, stream);
  gemm(true, false, 3 * H, I, batch, 1.0f, g, ld, x, I, 0.0f, dw_ih, I, stream);
  gemm(true, false, 2 * H, H, batch, 1.0f, g, ld, h, H, 0.0f, dw_hh, H, stream);
  gemm(true, false, H, H, batch, 1.0f, g + 3 * H, ld, h, H, 0.0f, dw_hh + 2 * H * H, H, stream);
  column_sums_kernel<<<blocks_for(3 * H), kThreads, 0, stream>>>(g, batch, 3 * H, ld, 3 * H, 0, db_ih);
  SB_CUDA_CHECK_LAUNCH();
  column_sums_kernel<<<blocks_for(3 * H), kThreads, 0, stream>>>(g, batch, 3 * H, ld, 2 * H, H, db_hh);
  SB_CUDA_CHECK_LAUNCH();
}

void san_self_attention_forward(const float* memory, const uint8_t* mask, const float* weight, const float* bias,
                                float* summary, float* saved_alpha, int64_t batch, int64_t length,
                                int64_t hidden, cudaStream_t stream) {
  check_sizes("san_self_attention_forward", {batch, length, hidden});
  gemm(false, false, batch * length, 1, hidden, 1.0f, memory, hidden, weight, 1, 0.0f, saved_alpha, 1, stream);
  masked_softmax_rows_kernel<<<rows_grid("san_self_attention_forward", batch), kRowThreads, 0, stream>>>(
      saved_alpha, mask, bias, length);
  SB_CUDA_CHECK_LAUNCH();
  gemm_strided_batched(false, false, 1, hidden, length, 1.0f, saved_alpha, length, memory, hidden, 0.0f, summary,
                       hidden, batch, length, length * hidden, hidden, stream);
}

void san_self_attention_backward(const float* dsummary, const float* memory, const uint8_t* mask,
                                 const float* weight, const float* saved_alpha, float* dmemory, float* dweight,
                                 float* dbias, int64_t batch, int64_t length, int64_t hidden, cudaStream_t stream) {
  check_sizes("san_self_attention_backward", {batch, length, hidden});
  (void)mask;  // saved_alpha is 0 on masked positions, which is all backward needs
  float* dscores = stream_scratch(static_cast<size_t>(batch * length), stream);  // (B, L)
  gemm_strided_batched(false, false, length, 1, hidden, 1.0f, memory, hidden, dsummary, 1, 0.0f, dscores, 1, batch,
                       length * hidden, hidden, length, stream);  // dalpha
  softmax_rows_backward_kernel<<<rows_grid("san_self_attention_backward", batch), kRowThreads, 0, stream>>>(
      saved_alpha, dscores, length);
  SB_CUDA_CHECK_LAUNCH();
  self_attention_dmemory_kernel<<<blocks_for(batch * length * hidden), kThreads, 0, stream>>>(
      saved_alpha, dsummary, dscores, weight, dmemory, batch, length, hidden);
  SB_CUDA_CHECK_LAUNCH();
  gemm(false, false, 1, hidden, batch * length, 1.0f, dscores, batch * length, memory, hidden, 0.0f, dweight, hidden,
       stream);
  sum_kernel<<<1, kRowThreads, 0, stream>>>(dscores, batch * length, dbias);
  SB_CUDA_CHECK_LAUNCH();
}

void san_bilinear_attention_forward(const float* keys, const float* values, const float* state,
                                    const uint8_t* mask, const float* weight, const float* bias, float* summary,
                                    float* saved_projection, float* saved_alpha, int64_t batch, int64_t length,
                                    int64_t memory_hidden, int64_t state_hidden, cudaStream_t stream) {
  check_sizes("san_bilinear_attention_forward", {batch, length, memory_hidden, state_hidden});
  const int64_t Hm = memory_hidden, Hs = state_hidden;
  gemm(false, true, batch, Hm, Hs, 1.0f, state, Hs, weight, Hs, 0.0f, saved_projection, Hm, stream);
  add_bias_kernel<<<blocks_for(batch * Hm), kThreads, 0, stream>>>(saved_projection, bias, batch, Hm);
  SB_CUDA_CHECK_LAUNCH();
  gemm_strided_batched(false, false, length, 1, Hm, 1.0f, keys, Hm, saved_projection, 1, 0.0f, saved_alpha, 1, batch,
                       length * Hm, Hm, length, stream);  // scores
  masked_softmax_rows_kernel<<<rows_grid("san_bilinear_attention_forward", batch), kRowThreads, 0, stream>>>(
      saved_alpha, mask, nullptr, length);
  SB_CUDA_CHECK_LAUNCH();
  gemm_strided_batched(false, false, 1, Hm, length, 1.0f, saved_alpha, length, values, Hm, 0.0f, summary, Hm, batch,
                       length, length * Hm, Hm, stream);
}

void san_bilinear_attention_backward(const float* dsummary, const float* keys, const float* values,
                                     const float* state, const uint8_t* mask, const float* weight,
                                     const float* saved_projection, const float* saved_alpha, float* dkeys,
                                     float* dvalues, float* dstate, float* dweight, float* dbias, int64_t batch,
                                     int64_t length, int64_t memory_hidden, int64_t state_hidden,
                                     cudaStream_t stream) {
  check_sizes("san_bilinear_attention_backward", {batch, length, memory_hidden, state_hidden});
  (void)mask;  // saved_alpha is 0 on masked positions
  const int64_t Hm = memory_hidden, Hs = state_hidden;
  float* dscores = stream_scratch(static_cast<size_t>(batch * (length + Hm)), stream);  // (B, L) then (B, Hm)
  float* dprojection = dscores + batch * length;
  gemm_strided_batched(false, false, length, 1, Hm, 1.0f, values, Hm, dsummary, 1, 0.0f, dscores, 1, batch,
                       length * Hm, Hm, length, stream);  // dalpha
  softmax_rows_backward_kernel<<<rows_grid("san_bilinear_attention_backward", batch), kRowThreads, 0, stream>>>(
      saved_alpha, dscores, length);
  SB_CUDA_CHECK_LAUNCH();
  bilinear_dkeys_dvalues_kernel<<<blocks_for(batch * length * Hm), kThreads, 0, stream>>>(
      saved_alpha, dsummary, dscores, saved_projection, dkeys, dvalues, batch, length, Hm);
  SB_CUDA_CHECK_LAUNCH();
  gemm_strided_batched(false, false, 1, Hm, length, 1.0f, dscores, length, keys, Hm, 0.0f, dprojection, Hm, batch,
                       length, length * Hm, Hm, stream);
  gemm(false, false, batch, Hs, Hm, 1.0f, dprojection, Hm, weight, Hs, 0.0f, dstate, Hs, stream);
  gemm(true, false, Hm, Hs, batch, 1.0f, dprojection, Hm, state, Hs, 0.0f, dweight, Hs, stream);
  column_sums_kernel<<<blocks_for(Hm), kThreads, 0, stream>>>(dprojection, batch, Hm, Hm, Hm, 0, dbias);
  SB_CUDA_CHECK_LAUNCH();
}

void san_merge_forward(const float* x, const float* s, float* features, int64_t batch, int64_t hidden,
                       cudaStream_t stream) {
  check_sizes("san_merge_forward", {batch, hidden});
  merge_forward_kernel<<<blocks_for(batch * hidden), kThreads, 0, stream>>>(x, s, features, batch, hidden);
  SB_CUDA_CHECK_LAUNCH();
}

void san_merge_backward(const float* dfeatures, const float* x, const float* s, float* dx, float* ds,
                        int64_t batch, int64_t hidden, cudaStream_t stream) {
  check_sizes("san_merge_backward", {batch, hidden});
  merge_backward_kernel<<<blocks_for(batch * hidden), kThreads, 0, stream>>>(dfeatures, x, s, dx, ds, batch, hidden);
  SB_CUDA_CHECK_LAUNCH();
}

void san_turn_mask(const float* uniforms, float* turn_mask, int64_t batch, int64_t turns, float drop_p,
                   cudaStream_t stream) {
  check_sizes("san_turn_mask", {batch, turns});
  if (!(drop_p >= 0.0f && drop_p < 1.0f)) throw UsageError("cuda::san_turn_mask: drop_p must be in [0, 1)");
  turn_mask_kernel<<<static_cast<unsigned>((batch + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      uniforms, turn_mask, batch, turns, 1.0f - drop_p, 1.0f / (1.0f - drop_p));
  SB_CUDA_CHECK_LAUNCH();
}

void san_turn_average_forward(const float* turn_logits, const float* turn_mask, float* scores,
                              float* saved_probs, int64_t turns, int64_t batch, int64_t classes,
                              cudaStream_t stream) {
  check_sizes("san_turn_average_forward", {turns, batch, classes});
  turn_average_forward_kernel<<<static_cast<unsigned>((batch + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      turn_logits, turn_mask, scores, saved_probs, turns, batch, classes);
  SB_CUDA_CHECK_LAUNCH();
}

void san_turn_average_backward(const float* dscores, const float* turn_mask, const float* saved_probs,
                               float* dturn_logits, int64_t turns, int64_t batch, int64_t classes,
                               cudaStream_t stream) {
  check_sizes("san_turn_average_backward", {turns, batch, classes});
  turn_average_backward_kernel<<<static_cast<unsigned>((batch + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      dscores, turn_mask, saved_probs, dturn_logits, turns, batch, classes);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda

// The san family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_san_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      // MT-DNN's SAN answer module (src/cuda/san.h): fp32 kernels only; the graph builder converts the floating
      // inputs of these ops to fp32 in a bf16 graph, so at<float> holds at any precision. Masks are uint8.
      {"gru_cell",
       [](CudaExecutor& e, const Node& n) {
         const auto& in = n.inputs;
         cuda::gru_cell_forward(e.at<float>(in[0]), e.at<float>(in[1]), e.at<float>(in[2]), e.at<float>(in[3]),
                                e.at<float>(in[4]), e.at<float>(in[5]), e.at<float>(n.outputs[0]),
                                e.at<float>(n.outputs[1]), size_attr(n, "batch"), size_attr(n, "input_size"),
                                size_attr(n, "hidden_size"), e.stream());
       }},
      {"gru_cell_backward",
       [](CudaExecutor& e, const Node& n) {
         const auto& in = n.inputs;
         const auto& out = n.outputs;
         cuda::gru_cell_backward(e.at<float>(in[0]), e.at<float>(in[1]), e.at<float>(in[2]), e.at<float>(in[3]),
                                 e.at<float>(in[4]), e.at<float>(in[5]), e.at<float>(out[0]), e.at<float>(out[1]),
                                 e.at<float>(out[2]), e.at<float>(out[3]), e.at<float>(out[4]), e.at<float>(out[5]),
                                 size_attr(n, "batch"), size_attr(n, "input_size"), size_attr(n, "hidden_size"),
                                 e.stream());
       }},
      {"san_self_attention",
       [](CudaExecutor& e, const Node& n) {
         const auto& in = n.inputs;
         cuda::san_self_attention_forward(e.at<float>(in[0]), e.at<uint8_t>(in[1]), e.at<float>(in[2]),
                                          e.at<float>(in[3]), e.at<float>(n.outputs[0]), e.at<float>(n.outputs[1]),
                                          size_attr(n, "batch"), size_attr(n, "length"), size_attr(n, "hidden"),
                                          e.stream());
       }},
      {"san_self_attention_backward",
       [](CudaExecutor& e, const Node& n) {
         const auto& in = n.inputs;
         const auto& out = n.outputs;
         cuda::san_self_attention_backward(e.at<float>(in[0]), e.at<float>(in[1]), e.at<uint8_t>(in[2]),
                                           e.at<float>(in[3]), e.at<float>(in[4]), e.at<float>(out[0]),
                                           e.at<float>(out[1]), e.at<float>(out[2]), size_attr(n, "batch"),
                                           size_attr(n, "length"), size_attr(n, "hidden"), e.stream());
       }},
      {"san_bilinear_attention",
       [](CudaExecutor& e, const Node& n) {
         const auto& in = n.inputs;
         const auto& out = n.outputs;
         cuda::san_bilinear_attention_forward(e.at<float>(in[0]), e.at<float>(in[1]), e.at<float>(in[2]),
                                              e.at<uint8_t>(in[3]), e.at<float>(in[4]), e.at<float>(in[5]),
                                              e.at<float>(out[0]), e.at<float>(out[1]), e.at<float>(out[2]),
                                              size_attr(n, "batch"), size_attr(n, "length"),
                                              size_attr(n, "memory_hidden"), size_attr(n, "state_hidden"), e.stream());
       }},
      {"san_bilinear_attention_backward",
       [](CudaExecutor& e, const Node& n) {
         const auto& in = n.inputs;
         const auto& out = n.outputs;
         cuda::san_bilinear_attention_backward(
             e.at<float>(in[0]), e.at<float>(in[1]), e.at<float>(in[2]), e.at<float>(in[3]), e.at<uint8_t>(in[4]),
             e.at<float>(in[5]), e.at<float>(in[6]), e.at<float>(in[7]), e.at<float>(out[0]), e.at<float>(out[1]),
             e.at<float>(out[2]), e.at<float>(out[3]), e.at<float>(out[4]), size_attr(n, "batch"),
             size_attr(n, "length"), size_attr(n, "memory_hidden"), size_attr(n, "state_hidden"), e.stream());
       }},
      {"san_merge",
       [](CudaExecutor& e, const Node& n) {
         cuda::san_merge_forward(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<float>(n.outputs[0]),
                                 size_attr(n, "batch"), size_attr(n, "hidden"), e.stream());
       }},
      {"san_merge_backward",
       [](CudaExecutor& e, const Node& n) {
         cuda::san_merge_backward(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<float>(n.inputs[2]),
                                  e.at<float>(n.outputs[0]), e.at<float>(n.outputs[1]), size_attr(n, "batch"),
                                  size_attr(n, "hidden"), e.stream());
       }},
      {"san_turn_mask",
       [](CudaExecutor& e, const Node& n) {
         cuda::philox_uniform(e.at<float>(n.outputs[0]), size_attr(n, "n"), e.seed(), dropout_offset_value(e, n),
                              e.stream());
         cuda::san_turn_mask(e.at<float>(n.outputs[0]), e.at<float>(n.outputs[1]), size_attr(n, "batch"),
                             size_attr(n, "turns"), float_attr(n, "p"), e.stream());
       }},
      {"san_turn_average",
       [](CudaExecutor& e, const Node& n) {
         cuda::san_turn_average_forward(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]),
                                        e.at<float>(n.outputs[0]), e.at<float>(n.outputs[1]), size_attr(n, "turns"),
                                        size_attr(n, "batch"), size_attr(n, "classes"), e.stream());
       }},
      {"san_turn_average_backward",
       [](CudaExecutor& e, const Node& n) {
         cuda::san_turn_average_backward(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]),
                                         e.at<float>(n.inputs[2]), e.at<float>(n.outputs[0]), size_attr(n, "turns"),
                                         size_attr(n, "batch"), size_attr(n, "classes"), e.stream());
       }},
  });
}

}  // namespace sb::cuda_binding
