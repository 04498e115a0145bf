// Span loss kernels (span_loss.h). Forward: one block per (row, side), max then sum of exp over the row's seq
// logits (384 for SQuAD: three per thread), thread 0 finishes log-sum-exp and the row loss in fp64; then one
// block adds each side's kept row losses in fp64 in a fixed order and writes the loss. Backward: one block per
// (row, side), dz = dloss / (2 · kept rows) · (softmax(z) − onehot). Each backward block counts its side's kept
// rows itself — O(batch) reads of the positions, tens of sequences per GPU at seq 384 — because the CPU
// signature has no scratch to pass the forward's counts through. The cross-entropy kernels are not reused for
// the same reason: they need clamped targets and device counters in memory the graph does not have.
#include <cmath>
#include <cstdint>
#include <string>

#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/span_loss.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kSumThreads = 256;  // a power of two: the tree below halves it

// HF: positions.clamp(0, seq); seq itself is the ignore index.
__device__ __forceinline__ int64_t clamp_position(int32_t position, int64_t seq) {
  return position < 0 ? 0 : (position > seq ? seq : position);
}

struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Sum {
  template <typename V>
  __device__ V operator()(V a, V b) const { return a + b; }
};

// Every thread gets op over the block's values: a warp butterfly, then the warps' results in a fixed order.
template <typename V, typename Op>
__device__ V block_reduce(V value, Op op, V* shared) {
  for (int offset = 16; offset > 0; offset >>= 1) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = value;
  __syncthreads();
  V total = shared[0];
  for (int w = 1; w < kWarps; ++w) total = op(total, shared[w]);
  __syncthreads();  // shared may be reused by the next reduction
  return total;
}

template <typename T>
__global__ void span_loss_rows_kernel(const T* __restrict__ start_logits, const T* __restrict__ end_logits,
                                      const int32_t* __restrict__ start_positions,
                                      const int32_t* __restrict__ end_positions, float* __restrict__ row_losses,
                                      float* __restrict__ saved_logsumexp, int64_t batch, int64_t seq) {
  __shared__ float shared[kWarps];
  const int64_t row = blockIdx.x;
  const int side = blockIdx.y;
  const T* z = (side == 0 ? start_logits : end_logits) + row * seq;
  float row_max = -INFINITY;
  for (int64_t c = threadIdx.x; c < seq; c += kThreads) row_max = fmaxf(row_max, to_float(z[c]));
  row_max = block_reduce(row_max, Max{}, shared);
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < seq; c += kThreads) sum += expf(to_float(z[c]) - row_max);
  sum = block_reduce(sum, Sum{}, shared);
  if (threadIdx.x != 0) return;
  const double logsumexp = static_cast<double>(row_max) + log(static_cast<double>(sum));
  const int64_t out = side * batch + row;
  saved_logsumexp[out] = static_cast<float>(logsumexp);
  const int64_t target = clamp_position((side == 0 ? start_positions : end_positions)[row], seq);
  row_losses[out] = target == seq ? 0.0f : static_cast<float>(logsumexp - static_cast<double>(to_float(z[target])));
}

// One block: per side, thread i adds kept rows i, i + 256, ... (fp64), then a fixed halving tree.
__global__ void span_loss_mean_kernel(const int32_t* __restrict__ start_positions,
                                      const int32_t* __restrict__ end_positions,
                                      const float* __restrict__ row_losses, float* __restrict__ loss, int64_t batch,
                                      int64_t seq) {
  __shared__ double partial_sum[kSumThreads];
  __shared__ long long partial_count[kSumThreads];
  double total = 0.0;  // meaningful in thread 0
  for (int side = 0; side < 2; ++side) {
    const int32_t* positions = side == 0 ? start_positions : end_positions;
    double sum = 0.0;
    long long count = 0;
    for (int64_t r = threadIdx.x; r < batch; r += kSumThreads) {
      if (clamp_position(positions[r], seq) != seq) {
        sum += static_cast<double>(row_losses[side * batch + r]);
        ++count;
      }
    }
    partial_sum[threadIdx.x] = sum;
    partial_count[threadIdx.x] = count;
    __syncthreads();
    for (int half = kSumThreads / 2; half > 0; half >>= 1) {
      if (threadIdx.x < half) {
        partial_sum[threadIdx.x] += partial_sum[threadIdx.x + half];
        partial_count[threadIdx.x] += partial_count[threadIdx.x + half];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0 && partial_count[0] > 0) total += partial_sum[0] / static_cast<double>(partial_count[0]);
    __syncthreads();  // the partials are overwritten by the next side
  }
  if (threadIdx.x == 0) *loss = static_cast<float>(total / 2.0);
}

template <typename T>
__global__ void span_loss_backward_kernel(const T* __restrict__ start_logits, const T* __restrict__ end_logits,
                                          const int32_t* __restrict__ start_positions,
                                          const int32_t* __restrict__ end_positions,
                                          const float* __restrict__ saved_logsumexp, T* __restrict__ dstart_logits,
                                          T* __restrict__ dend_logits, int64_t batch, int64_t seq, float dloss,
                                          const float* __restrict__ gradient_scale) {
  __shared__ int shared[kWarps];
  if (gradient_scale != nullptr) dloss *= *gradient_scale;  // a power of two: exact
  const int64_t row = blockIdx.x;
  const int side = blockIdx.y;
  const int32_t* positions = side == 0 ? start_positions : end_positions;
  int kept = 0;
  for (int64_t r = threadIdx.x; r < batch; r += kThreads) kept += clamp_position(positions[r], seq) != seq;
  kept = block_reduce(kept, Sum{}, shared);
  const int64_t target = clamp_position(positions[row], seq);
  const T* z = (side == 0 ? start_logits : end_logits) + row * seq;
  T* dz = (side == 0 ? dstart_logits : dend_logits) + row * seq;
  if (target == seq) {  // an ignored row (kept may be 0 then: the scale below is never formed)
    for (int64_t c = threadIdx.x; c < seq; c += kThreads) dz[c] = from_float<T>(0.0f);
    return;
  }
  // d loss / d row loss = dloss / 2 / kept, rounded to float once as the CPU reference does.
  const float scale = static_cast<float>(static_cast<double>(dloss) / (2.0 * kept));
  const float logsumexp = saved_logsumexp[side * batch + row];
  for (int64_t c = threadIdx.x; c < seq; c += kThreads) {
    const float p = expf(to_float(z[c]) - logsumexp);
    dz[c] = from_float<T>(scale * (p - (c == target ? 1.0f : 0.0f)));
  }
}

void check_sizes(const char* op, int64_t batch, int64_t seq) {
  SB_CHECK(batch >= 0 && batch <= INT32_MAX, std::string(op) + ": batch must be in [0, 2^31 - 1] (a 1-D grid)");
  SB_CHECK(seq >= 1 && seq < INT32_MAX, std::string(op) + ": seq must be in [1, INT32_MAX)");
}

}  // namespace

template <typename T>
void span_loss_forward(const T* start_logits, const T* end_logits, const int32_t* start_positions,
                       const int32_t* end_positions, float* row_losses, float* saved_logsumexp, float* loss,
                       int64_t batch, int64_t seq, cudaStream_t stream) {
  check_sizes("span_loss_forward", batch, seq);
  SB_CHECK(loss, "span_loss_forward: null pointer");
  if (batch > 0) {
    SB_CHECK(start_logits && end_logits && start_positions && end_positions && row_losses && saved_logsumexp,
             "span_loss_forward: null pointer");
    span_loss_rows_kernel<T><<<dim3(static_cast<unsigned>(batch), 2), kThreads, 0, stream>>>(
        start_logits, end_logits, start_positions, end_positions, row_losses, saved_logsumexp, batch, seq);
    SB_CUDA_CHECK_LAUNCH();
  }
  // Also for batch == 0: the loss is written (0), as the CPU reference writes it.
  span_loss_mean_kernel<<<1, kSumThreads, 0, stream>>>(start_positions, end_positions, row_losses, loss, batch, seq);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void span_loss_backward(const T* start_logits, const T* end_logits, const int32_t* start_positions,
                        const int32_t* end_positions, const float* saved_logsumexp, T* dstart_logits,
                        T* dend_logits, int64_t batch, int64_t seq, float dloss, cudaStream_t stream,
                        const float* gradient_scale) {
  check_sizes("span_loss_backward", batch, seq);
  if (batch == 0) return;
  SB_CHECK(start_logits && end_logits && start_positions && end_positions && saved_logsumexp && dstart_logits &&
               dend_logits,
           "span_loss_backward: null pointer");
  span_loss_backward_kernel<T><<<dim3(static_cast<unsigned>(batch), 2), kThreads, 0, stream>>>(
      start_logits, end_logits, start_positions, end_positions, saved_logsumexp, dstart_logits, dend_logits, batch,
      seq, dloss, gradient_scale);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_SPAN_LOSS(T)                                                                                          \
  template void span_loss_forward<T>(const T*, const T*, const int32_t*, const int32_t*, float*, float*, float*, \
                                     int64_t, int64_t, cudaStream_t);                                            \
  template void span_loss_backward<T>(const T*, const T*, const int32_t*, const int32_t*, const float*, T*, T*,  \
                                      int64_t, int64_t, float, cudaStream_t, const float*);
SB_INSTANTIATE_FOR_ELEMENTS(SB_SPAN_LOSS)
#undef SB_SPAN_LOSS

}  // namespace sb::cuda

// The span_loss family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_span_loss_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"span_loss",  // logits in the compute dtype; kept-row counts stay on the device (no host sync)
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::span_loss_forward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<int32_t>(n.inputs[2]),
                                   e.at<int32_t>(n.inputs[3]), e.at<float>(n.outputs[2]), e.at<float>(n.outputs[1]),
                                   e.at<float>(n.outputs[0]), size_attr(n, "batch"), size_attr(n, "seq"), e.stream());
         });
       }},
      {"span_loss_backward",  // the loss starts the backward pass: dloss = 1, times the loss scale if any
       SB_TYPED(cuda::span_loss_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<int32_t>(n.inputs[2]),
                                         e.at<int32_t>(n.inputs[3]), e.at<float>(n.inputs[4]), e.at<T>(n.outputs[0]),
                                         e.at<T>(n.outputs[1]), size_attr(n, "batch"), size_attr(n, "seq"),
                                         gradient_weight(n),
                                         e.stream(), e.loss_gradient_scale()))},
  });
}

}  // namespace sb::cuda_binding
