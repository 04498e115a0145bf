// Zero-bordered (and zero-channel-padded) copies and crops of NHWC tensors (conv2d_pad.h): one thread per
// element of the larger tensor, grid-stride; a pure copy, so bit-exact for every T.
#include "src/cuda/conv2d_pad.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void pad_kernel(const T* __restrict__ x, T* __restrict__ padded, int64_t n, int64_t h, int64_t w,
                           int64_t c, int64_t top, int64_t left, int64_t ph, int64_t pw, int64_t pc) {
  const int64_t total = n * ph * pw * pc;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = i % pc;
    int64_t rest = i / pc;
    const int64_t col = rest % pw - left;
    rest /= pw;
    const int64_t row = rest % ph - top;
    const int64_t image = rest / ph;
    const bool inside = row >= 0 && row < h && col >= 0 && col < w && ch < c;
    padded[i] = inside ? x[((image * h + row) * w + col) * c + ch] : from_float<T>(0.0f);
  }
}

template <typename T>
__global__ void crop_kernel(const T* __restrict__ padded, T* __restrict__ x, int64_t n, int64_t h, int64_t w,
                            int64_t c, int64_t top, int64_t left, int64_t ph, int64_t pw, int64_t pc) {
  const int64_t total = n * h * w * c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = i % c;
    int64_t rest = i / c;
    const int64_t col = rest % w;
    rest /= w;
    const int64_t row = rest % h;
    const int64_t image = rest / h;
    x[i] = padded[((image * ph + row + top) * pw + col + left) * pc + ch];
  }
}

}  // namespace

template <typename T>
void conv2d_pad_input(const T* x, T* padded, int64_t n, int64_t h, int64_t w, int64_t c, int64_t top, int64_t left,
                      int64_t padded_h, int64_t padded_w, int64_t padded_c, cudaStream_t stream) {
  SB_CHECK(top >= 0 && left >= 0 && top + h <= padded_h && left + w <= padded_w && c <= padded_c,
           "conv2d_pad_input: bad window");
  const int64_t total = n * padded_h * padded_w * padded_c;
  if (total == 0) return;
  pad_kernel<<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(x, padded, n, h, w, c, top, left,
                                                                                  padded_h, padded_w, padded_c);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void conv2d_crop(const T* padded, T* x, int64_t n, int64_t h, int64_t w, int64_t c, int64_t top, int64_t left,
                 int64_t padded_h, int64_t padded_w, int64_t padded_c, cudaStream_t stream) {
  SB_CHECK(top >= 0 && left >= 0 && top + h <= padded_h && left + w <= padded_w && c <= padded_c,
           "conv2d_crop: bad window");
  const int64_t total = n * h * w * c;
  if (total == 0) return;
  crop_kernel<<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(padded, x, n, h, w, c, top, left,
                                                                                   padded_h, padded_w, padded_c);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_CONV_PAD(T)                                                                                           \
  template void conv2d_pad_input<T>(const T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, \
                                    int64_t, int64_t, cudaStream_t);                                             \
  template void conv2d_crop<T>(const T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,      \
                               int64_t, int64_t, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_CONV_PAD)

}  // namespace sb::cuda
