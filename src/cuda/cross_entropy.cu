// Softmax cross-entropy kernels (cross_entropy.h). Forward: one 256-thread block per row; each thread keeps a
// running (max, sum of exp) pair and the sum of logits over a strided slice (16-byte loads, 4 floats or 8 bf16,
// when classes is a multiple of that width), pairs are merged by a warp butterfly and then warp by warp in
// order; thread 0 finishes the row in fp64. Few classes (pixel-wise losses: deeplabv3's 21 over 4.2 M rows)
// take one thread per row instead, since a block of 256 threads for 21 logits left the GPU mostly idle (8.7 ms
// for deeplabv3's forward on an H200). The per-row losses are then added in fp64 in a fixed order: blocks over
// fixed chunks of rows, then one block over the chunk partials (a single block over millions of rows was
// another serial tail). Backward: one block per row, p = exp(z - saved logsumexp), dz = scale * (p - q) in
// fp32, rounded once to T; with few classes one thread per logit. Logits of type T are widened to fp32 on
// load; losses and logsumexp are fp32 for either T.
#include <cmath>
#include <cstdint>
#include <string>

#include "src/cuda/cross_entropy.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/loss_mean.h"
#include "src/cuda/stream_scratch.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kSumThreads = 256;  // a power of two: the trees below halve it
// At most this many classes take the thread-per-row forward and thread-per-logit backward.
constexpr int64_t kSmallClasses = 64;
// The loss sum's first level: at most kMaxSumChunks chunks of at least kMinSumChunkRows rows each.
constexpr int64_t kMaxSumChunks = 1024;
constexpr int64_t kMinSumChunkRows = 2048;


// v[First] + ... + v[First + N - 1] as a balanced tree, ((v0 + v1) + (v2 + v3)) for N = 4 (the order the
// float4 code used).
template <int N, int First = 0>
__device__ __forceinline__ float pairwise_sum(const float* v) {
  if constexpr (N == 1) {
    return v[First];
  } else {
    return pairwise_sum<N / 2, First>(v) + pairwise_sum<N / 2, First + N / 2>(v);
  }
}

// Running log-sum-exp state: the sum of exp(z - max) over the elements seen.
struct MaxSum {
  float max;
  float sum;
};

__device__ __forceinline__ void online_add(MaxSum& state, float z) {
  if (z > state.max) {
    state.sum = state.sum * expf(state.max - z) + 1.0f;  // exp(-inf) = 0 for the first element
    state.max = z;
  } else if (z != -INFINITY) {  // -inf adds nothing (and -inf - -inf would be NaN)
    state.sum += expf(z - state.max);
  }
}

// Symmetric in its arguments (fp + and max are commutative), so a butterfly leaves every lane equal.
__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.max, b.max);
  if (m == -INFINITY) return {m, 0.0f};
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

// The row's loss from its log-sum-exp state and logit sum, in fp64; the logsumexp is saved for backward.
template <typename T>
__device__ void write_row_loss(const T* z, int32_t target, MaxSum total, float total_logits, int64_t classes,
                               double eps, double eps_i, int32_t ignore_index, float* row_loss,
                               float* saved_logsumexp) {
  const double logsumexp = static_cast<double>(total.max) + log(static_cast<double>(total.sum));
  *saved_logsumexp = static_cast<float>(logsumexp);
  if (target == ignore_index) {
    *row_loss = 0.0f;
    return;
  }
  if (target < 0 || target >= classes) {  // a data bug upstream: make it loud, read nothing out of bounds
    *row_loss = NAN;
    return;
  }
  const double nll = logsumexp - static_cast<double>(to_float(z[target]));
  double loss = nll;
  if (eps > 0.0) {
    // sum_c(-log p_c) = V * logsumexp - sum_c z_c; loss = (1 - eps - eps_i) * nll + eps_i * smooth.
    const double smooth = static_cast<double>(classes) * logsumexp - static_cast<double>(total_logits);
    loss = (1.0 - eps - eps_i) * nll + eps_i * smooth;
  }
  *row_loss = static_cast<float>(loss);
}

// W: logits per thread step (classes % W == 0; for W > 1 logits 16-byte aligned).
template <typename T, int W>
__global__ void cross_entropy_forward_kernel(const T* __restrict__ logits, const int32_t* __restrict__ targets,
                                             float* __restrict__ losses, float* __restrict__ saved_logsumexp,
                                             int64_t classes, double eps, double eps_i, int32_t ignore_index) {
  __shared__ MaxSum warp_state[kWarps];
  __shared__ float warp_logit_sum[kWarps];
  const int64_t row = blockIdx.x;
  const T* z = logits + row * classes;

  MaxSum state{-INFINITY, 0.0f};
  float logit_sum = 0.0f;
  const Pack<T, W>* zv = reinterpret_cast<const Pack<T, W>*>(z);
  for (int64_t i = threadIdx.x; i < classes / W; i += kThreads) {
    const Pack<T, W> v = zv[i];
    float f[W];
#pragma unroll
    for (int j = 0; j < W; ++j) {
      f[j] = to_float(v.element[j]);
      online_add(state, f[j]);
    }
    logit_sum += pairwise_sum<W>(f);
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    const MaxSum other{__shfl_xor_sync(0xffffffffu, state.max, offset),
                       __shfl_xor_sync(0xffffffffu, state.sum, offset)};
    state = merge(state, other);
    logit_sum += __shfl_xor_sync(0xffffffffu, logit_sum, offset);
  }
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if (lane == 0) {
    warp_state[warp] = state;
    warp_logit_sum[warp] = logit_sum;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;

  MaxSum total = warp_state[0];
  float total_logits = warp_logit_sum[0];
  for (int w = 1; w < kWarps; ++w) {
    total = merge(total, warp_state[w]);
    total_logits += warp_logit_sum[w];
  }
  write_row_loss(z, targets[row], total, total_logits, classes, eps, eps_i, ignore_index, losses + row,
                 saved_logsumexp + row);
}

// One thread per row, logits in order: for a handful of classes per row.
template <typename T>
__global__ void cross_entropy_forward_small_kernel(const T* __restrict__ logits, const int32_t* __restrict__ targets,
                                                   float* __restrict__ losses, float* __restrict__ saved_logsumexp,
                                                   int64_t rows, int64_t classes, double eps, double eps_i,
                                                   int32_t ignore_index) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const T* z = logits + row * classes;
  MaxSum state{-INFINITY, 0.0f};
  float logit_sum = 0.0f;
  for (int64_t c = 0; c < classes; ++c) {
    const float f = to_float(z[c]);
    online_add(state, f);
    logit_sum += f;
  }
  write_row_loss(z, targets[row], state, logit_sum, classes, eps, eps_i, ignore_index, losses + row,
                 saved_logsumexp + row);
}

// Adds every thread's (sum, count) into element 0 by a fixed halving tree (kSumThreads threads).
__device__ void block_tree_sum(double* sums, long long* counts) {
  __syncthreads();
  for (int half = kSumThreads / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) {
      sums[threadIdx.x] += sums[threadIdx.x + half];
      counts[threadIdx.x] += counts[threadIdx.x + half];
    }
    __syncthreads();
  }
}

// First level of the loss sum: block b adds the counted losses of rows b·chunk_rows .. (b + 1)·chunk_rows - 1,
// thread i the rows i, i + 256, ... of that chunk in order (fp64), then the block tree.
__global__ void cross_entropy_chunk_sum_kernel(const float* __restrict__ losses, const int32_t* __restrict__ targets,
                                               int64_t rows, int64_t chunk_rows, int32_t ignore_index,
                                               double* __restrict__ chunk_sums, long long* __restrict__ chunk_counts) {
  __shared__ double sums[kSumThreads];
  __shared__ long long counts[kSumThreads];
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * chunk_rows;
  const int64_t end = begin + chunk_rows < rows ? begin + chunk_rows : rows;
  double sum = 0.0;
  long long count = 0;
  for (int64_t r = begin + threadIdx.x; r < end; r += kSumThreads) {
    if (targets[r] != ignore_index) {
      sum += static_cast<double>(losses[r]);
      ++count;
    }
  }
  sums[threadIdx.x] = sum;
  counts[threadIdx.x] = count;
  block_tree_sum(sums, counts);
  if (threadIdx.x == 0) {
    chunk_sums[blockIdx.x] = sums[0];
    chunk_counts[blockIdx.x] = counts[0];
  }
}

// Second level, one block: the chunks' partials in the same fixed order, then loss_sum and counted_rows.
__global__ void cross_entropy_total_kernel(const double* __restrict__ chunk_sums,
                                           const long long* __restrict__ chunk_counts, int64_t chunks,
                                           float* __restrict__ loss_sum, int64_t* __restrict__ counted_rows) {
  __shared__ double sums[kSumThreads];
  __shared__ long long counts[kSumThreads];
  double sum = 0.0;
  long long count = 0;
  for (int64_t c = threadIdx.x; c < chunks; c += kSumThreads) {
    sum += chunk_sums[c];
    count += chunk_counts[c];
  }
  sums[threadIdx.x] = sum;
  counts[threadIdx.x] = count;
  block_tree_sum(sums, counts);
  if (threadIdx.x == 0) {
    *loss_sum = static_cast<float>(sums[0]);
    *counted_rows = static_cast<int64_t>(counts[0]);
  }
}

// W: logits per thread step (classes % W == 0; for W > 1 logits and dlogits 16-byte aligned).
template <typename T, int W>
__global__ void cross_entropy_backward_kernel(const T* __restrict__ logits, const int32_t* __restrict__ targets,
                                              const float* __restrict__ saved_logsumexp, T* __restrict__ dlogits,
                                              int64_t classes, float q_target, float q_other, int32_t ignore_index,
                                              float scale, const float* __restrict__ gradient_scale) {
  if (gradient_scale != nullptr) scale *= *gradient_scale;
  const int64_t row = blockIdx.x;
  const T* z = logits + row * classes;
  T* dz = dlogits + row * classes;
  const int32_t target = targets[row];
  if (target == ignore_index || target < 0 || target >= classes) {
    const float fill = target == ignore_index ? 0.0f : NAN;
    for (int64_t c = threadIdx.x; c < classes; c += kThreads) dz[c] = from_float<T>(fill);
    return;
  }
  const float logsumexp = saved_logsumexp[row];
  const Pack<T, W>* zv = reinterpret_cast<const Pack<T, W>*>(z);
  Pack<T, W>* dzv = reinterpret_cast<Pack<T, W>*>(dz);
  for (int64_t i = threadIdx.x; i < classes / W; i += kThreads) {
    const Pack<T, W> v = zv[i];
    const int64_t c = W * i;
    Pack<T, W> out;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const float q = c + j == target ? q_target : q_other;
      out.element[j] = from_float<T>(scale * (expf(to_float(v.element[j]) - logsumexp) - q));
    }
    dzv[i] = out;
  }
}

// One thread per logit: for a handful of classes per row (the block kernel above left most of its threads idle).
template <typename T>
__global__ void cross_entropy_backward_small_kernel(const T* __restrict__ logits, const int32_t* __restrict__ targets,
                                                    const float* __restrict__ saved_logsumexp,
                                                    T* __restrict__ dlogits, int64_t elements, int64_t classes,
                                                    float q_target, float q_other, int32_t ignore_index, float scale,
                                                    const float* __restrict__ gradient_scale) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= elements) return;
  if (gradient_scale != nullptr) scale *= *gradient_scale;
  const int64_t row = i / classes;
  const int64_t c = i - row * classes;
  const int32_t target = targets[row];
  if (target == ignore_index || target < 0 || target >= classes) {
    dlogits[i] = from_float<T>(target == ignore_index ? 0.0f : NAN);
    return;
  }
  const float q = c == target ? q_target : q_other;
  dlogits[i] = from_float<T>(scale * (expf(to_float(logits[i]) - saved_logsumexp[row]) - q));
}

void check_arguments(const char* op, int64_t rows, int64_t classes, float label_smoothing) {
  SB_CHECK(rows >= 0, std::string(op) + ": rows must be >= 0");
  SB_CHECK(rows <= INT32_MAX, std::string(op) + ": rows must fit a 1-D grid (<= 2^31 - 1)");
  SB_CHECK(classes >= 1, std::string(op) + ": classes must be >= 1");
  SB_CHECK(label_smoothing >= 0.0f && label_smoothing < 1.0f,
           std::string(op) + ": label_smoothing must be in [0, 1)");
  SB_CHECK(label_smoothing == 0.0f || classes >= 2,
           std::string(op) + ": label smoothing needs at least 2 classes (eps / (classes - 1))");
}

// The CPU reference's off-target share: eps / (V - 1), 0 without smoothing.
double off_target_probability(int64_t classes, float label_smoothing) {
  return label_smoothing > 0.0f ? static_cast<double>(label_smoothing) / static_cast<double>(classes - 1) : 0.0;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Blocks of kThreads for one thread per item.
unsigned blocks_for(int64_t items) {
  const int64_t blocks = (items + kThreads - 1) / kThreads;
  SB_CHECK(blocks <= INT32_MAX, "cross-entropy: too many items for a 1-D grid");
  return static_cast<unsigned>(blocks);
}

}  // namespace

template <typename T>
void softmax_cross_entropy_forward(const T* logits, const int32_t* targets, float* losses, float* saved_logsumexp,
                                   float* loss_sum, int64_t* counted_rows, int64_t rows, int64_t classes,
                                   float label_smoothing, int32_t ignore_index, cudaStream_t stream) {
  check_arguments("softmax_cross_entropy_forward", rows, classes, label_smoothing);
  SB_CHECK(loss_sum && counted_rows, "softmax_cross_entropy_forward: null pointer");
  if (rows > 0) {
    SB_CHECK(logits && targets && losses && saved_logsumexp, "softmax_cross_entropy_forward: null pointer");
    const double eps = label_smoothing;
    const double eps_i = off_target_probability(classes, label_smoothing);
    const unsigned grid = static_cast<unsigned>(rows);
    constexpr int kWidth = kElementsPer16Bytes<T>;
    if (classes <= kSmallClasses) {
      cross_entropy_forward_small_kernel<T><<<blocks_for(rows), kThreads, 0, stream>>>(
          logits, targets, losses, saved_logsumexp, rows, classes, eps, eps_i, ignore_index);
    } else if (classes % kWidth == 0 && aligned16(logits)) {
      cross_entropy_forward_kernel<T, kWidth><<<grid, kThreads, 0, stream>>>(logits, targets, losses, saved_logsumexp,
                                                                             classes, eps, eps_i, ignore_index);
    } else {
      cross_entropy_forward_kernel<T, 1><<<grid, kThreads, 0, stream>>>(logits, targets, losses, saved_logsumexp,
                                                                        classes, eps, eps_i, ignore_index);
    }
    SB_CUDA_CHECK_LAUNCH();
  }
  // Also for rows == 0: the sums are written (0 and 0), as the CPU reference writes them.
  int64_t chunk_rows = (rows + kMaxSumChunks - 1) / kMaxSumChunks;
  if (chunk_rows < kMinSumChunkRows) chunk_rows = kMinSumChunkRows;
  const int64_t chunks = rows == 0 ? 1 : (rows + chunk_rows - 1) / chunk_rows;
  const ScratchLease scratch(stream, cross_entropy_forward_scratch_bytes());
  auto* chunk_sums = static_cast<double*>(scratch.data());
  auto* chunk_counts = reinterpret_cast<long long*>(chunk_sums + kMaxSumChunks);
  cross_entropy_chunk_sum_kernel<<<static_cast<unsigned>(chunks), kSumThreads, 0, stream>>>(
      losses, targets, rows, chunk_rows, ignore_index, chunk_sums, chunk_counts);
  SB_CUDA_CHECK_LAUNCH();
  cross_entropy_total_kernel<<<1, kSumThreads, 0, stream>>>(chunk_sums, chunk_counts, chunks, loss_sum, counted_rows);
  SB_CUDA_CHECK_LAUNCH();
}

uint64_t cross_entropy_forward_scratch_bytes() {
  return static_cast<uint64_t>(kMaxSumChunks) * (sizeof(double) + sizeof(long long));
}

template <typename T>
void softmax_cross_entropy_backward(const T* logits, const int32_t* targets, const float* saved_logsumexp,
                                    T* dlogits, int64_t rows, int64_t classes, float label_smoothing,
                                    int32_t ignore_index, float scale, cudaStream_t stream,
                                    const float* gradient_scale) {
  check_arguments("softmax_cross_entropy_backward", rows, classes, label_smoothing);
  if (rows == 0) return;
  SB_CHECK(logits && targets && saved_logsumexp && dlogits, "softmax_cross_entropy_backward: null pointer");
  const float q_other = static_cast<float>(off_target_probability(classes, label_smoothing));
  const float q_target = static_cast<float>(1.0 - static_cast<double>(label_smoothing));
  const unsigned grid = static_cast<unsigned>(rows);
  constexpr int kWidth = kElementsPer16Bytes<T>;
  if (classes <= kSmallClasses) {
    cross_entropy_backward_small_kernel<T><<<blocks_for(rows * classes), kThreads, 0, stream>>>(
        logits, targets, saved_logsumexp, dlogits, rows * classes, classes, q_target, q_other, ignore_index, scale,
        gradient_scale);
  } else if (classes % kWidth == 0 && aligned16(logits) && aligned16(dlogits)) {
    cross_entropy_backward_kernel<T, kWidth><<<grid, kThreads, 0, stream>>>(
        logits, targets, saved_logsumexp, dlogits, classes, q_target, q_other, ignore_index, scale, gradient_scale);
  } else {
    cross_entropy_backward_kernel<T, 1><<<grid, kThreads, 0, stream>>>(
        logits, targets, saved_logsumexp, dlogits, classes, q_target, q_other, ignore_index, scale, gradient_scale);
  }
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_CROSS_ENTROPY(T)                                                                                     \
  template void softmax_cross_entropy_forward<T>(const T*, const int32_t*, float*, float*, float*, int64_t*,    \
                                                 int64_t, int64_t, float, int32_t, cudaStream_t);               \
  template void softmax_cross_entropy_backward<T>(const T*, const int32_t*, const float*, T*, int64_t, int64_t, \
                                                  float, int32_t, float, cudaStream_t, const float*);
SB_INSTANTIATE_FOR_ELEMENTS(SB_CROSS_ENTROPY)
#undef SB_CROSS_ENTROPY

}  // namespace sb::cuda

// The cross_entropy family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_cross_entropy_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"softmax_cross_entropy",  // logits in the compute dtype; loss and statistics fp32
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::softmax_cross_entropy_forward(e.at<T>(n.inputs[0]), e.at<int32_t>(n.inputs[1]),
                                               e.at<float>(n.outputs[2]), e.at<float>(n.outputs[1]), e.loss_sum(),
                                               e.counted(), size_attr(n, "rows"), size_attr(n, "classes"),
                                               float_attr(n, "label_smoothing"),
                                               static_cast<int32_t>(size_attr(n, "ignore_index")), e.stream());
         });
         cuda::loss_mean(e.loss_sum(), e.counted(), e.at<float>(n.outputs[0]), e.stream());
         e.counted_rows(n);  // first time only: learn the backward's scale
       },
       [](const Node&) -> uint64_t { return cuda::cross_entropy_forward_scratch_bytes(); }},
      {"softmax_cross_entropy_backward", SB_TYPED({  // starts the backward pass: times the loss scale, if any
         const int64_t counted = e.counted_rows(n);
         cuda::softmax_cross_entropy_backward(e.at<T>(n.inputs[0]), e.at<int32_t>(n.inputs[1]),
                                              e.at<float>(n.inputs[2]), e.at<T>(n.outputs[0]), size_attr(n, "rows"),
                                              size_attr(n, "classes"), float_attr(n, "label_smoothing"),
                                              static_cast<int32_t>(size_attr(n, "ignore_index")),
                                              counted > 0 ? gradient_weight(n) * e.loss_weight(n.inputs[1]) /
                                                                static_cast<float>(counted)
                                                          : 0.0f,
                                              e.stream(), e.loss_gradient_scale());
       })},
  });
}

}  // namespace sb::cuda_binding
