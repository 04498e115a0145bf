// CUDA multi-scale RoIAlign (src/cuda/roi_align.h). Channels are fastest (NHWC rows), so a warp works on
// neighbouring channels of each bilinear neighbour: the forward pass gathers, one thread per pack of channels of an
// output bin (RoI, bin row, bin column); the backward pass scatters with atomicAdd into fp32, 32 threads per bin
// (torchvision's CUDA kernels scatter too; the order of the adds, hence the last bits, varies from run to run).
// The level, window and sample geometry are the CPU reference's own inline functions (src/cpu/detection_math.h).
#include <cuda_runtime.h>

#include "src/cpu/detection_math.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/grid.h"
#include "src/cuda/packs.h"
#include "src/cuda/roi_align.h"
#include "src/core/ops/roi_align.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

template <typename P>
struct Levels {
  P level[cpu::kMaxRoiLevels];
};

struct Geometry {
  int64_t channels, output_size, height[cpu::kMaxRoiLevels], width[cpu::kMaxRoiLevels];
  int levels, first_level, sampling_ratio;
  bool aligned;
};

Geometry device_geometry(const cpu::RoiAlignGeometry& g) {
  Geometry d{};
  d.channels = g.channels, d.output_size = g.output_size, d.levels = g.levels, d.first_level = g.first_level;
  d.sampling_ratio = g.sampling_ratio, d.aligned = g.aligned;
  for (int l = 0; l < g.levels; ++l) d.height[l] = g.height[l], d.width[l] = g.width[l];
  return d;
}

// Calls visit(level, pixel index of each neighbour, weight / samples) for every sample of bin (r, ph, pw).
template <typename Visit>
__device__ void for_each_sample(const float* rois, const Geometry& g, int64_t r, int64_t ph, int64_t pw, Visit&& visit) {
  const float* roi = rois + r * 5;
  const float* box = roi + 1;
  const int level = detection::fpn_level(box, g.first_level, g.first_level + g.levels - 1);
  const auto image = static_cast<int64_t>(roi[0]);
  const float scale = 1.0f / static_cast<float>(int64_t{1} << (g.first_level + level));
  const detection::RoiWindow w = detection::roi_window(box, scale, g.output_size, g.sampling_ratio, g.aligned);
  const float inverse_count = 1.0f / static_cast<float>(max(w.grid_h * w.grid_w, 1));
  const int64_t h = g.height[level], wd = g.width[level], base = image * h * wd;
  for (int iy = 0; iy < w.grid_h; ++iy) {
    const float y = detection::sample_coordinate(w.start_y, w.bin_h, ph, iy, w.grid_h);
    for (int ix = 0; ix < w.grid_w; ++ix) {
      const float x = detection::sample_coordinate(w.start_x, w.bin_w, pw, ix, w.grid_w);
      const detection::BilinearPoint p = detection::bilinear_point(y, x, h, wd);
      if (p.empty) continue;
      visit(level, base + p.y_low * wd + p.x_low, p.w1 * inverse_count);
      visit(level, base + p.y_low * wd + p.x_high, p.w2 * inverse_count);
      visit(level, base + p.y_high * wd + p.x_low, p.w3 * inverse_count);
      visit(level, base + p.y_high * wd + p.x_high, p.w4 * inverse_count);
    }
  }
}

// Each thread takes a pack of W consecutive channels of one bin (one 16-byte access when the channels and pointers
// allow): the bin's level, window and sample geometry is worked out once per pack. Per channel it made the box
// head's RoIAlign, (8192, 7, 7, 256) bf16, 3.8 ms of maskrcnn's step on H200; 0.98 ms for all RoIAligns after.
template <typename T, int W>
__global__ void roi_align_forward_kernel(Levels<const T*> features, const float* __restrict__ rois, T* __restrict__ y,
                                         Geometry g, int64_t packs) {
  const int64_t channel_packs = g.channels / W;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < packs; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = (i % channel_packs) * W, bin = i / channel_packs;
    const int64_t pw = bin % g.output_size, ph = (bin / g.output_size) % g.output_size;
    const int64_t r = bin / (g.output_size * g.output_size);
    float sum[W] = {};
    for_each_sample(rois, g, r, ph, pw, [&](int level, int64_t pixel, float weight) {
      const Pack<T, W> v = *reinterpret_cast<const Pack<T, W>*>(features.level[level] + pixel * g.channels + c);
#pragma unroll
      for (int j = 0; j < W; ++j) sum[j] += weight * to_float(v.element[j]);
    });
    Pack<T, W> out;
#pragma unroll
    for (int j = 0; j < W; ++j) out.element[j] = from_float<T>(sum[j]);
    *reinterpret_cast<Pack<T, W>*>(y + bin * g.channels + c) = out;
  }
}

// The backward pass scatters: 32 threads per bin, each looping over the channels 32 apart, so every atomicAdd
// of a warp lands on 32 neighbouring floats, and the bin's geometry is worked out once per thread rather than once
// per channel. (Packs of channels per thread, with float4 atomics, made the box head's scatter slower on H200:
// 4.7 ms where one channel per thread took 3.7.)
constexpr int kBackwardLanes = 32;

template <typename T>
__global__ void roi_align_backward_kernel(const T* __restrict__ dy, const float* __restrict__ rois,
                                          Levels<float*> dfeatures, Geometry g, int64_t bins) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < bins * kBackwardLanes;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t lane = i % kBackwardLanes, bin = i / kBackwardLanes;
    const int64_t pw = bin % g.output_size, ph = (bin / g.output_size) % g.output_size;
    const int64_t r = bin / (g.output_size * g.output_size);
    const T* d = dy + bin * g.channels;
    for_each_sample(rois, g, r, ph, pw, [&](int level, int64_t pixel, float weight) {
      float* to = dfeatures.level[level] + pixel * g.channels;
      for (int64_t c = lane; c < g.channels; c += kBackwardLanes) {
        const float v = to_float(d[c]);
        if (v != 0.0f) atomicAdd(to + c, weight * v);
      }
    });
  }
}

// Packs of 16 bytes of T where the channel count is a multiple of one and every pointer is 16-byte aligned.
template <typename T>
bool channel_packs_fit(const cpu::RoiAlignGeometry& g, const T* const* levels, const void* other) {
  if (!rows_fit_16_byte_packs<T>(g.channels, {other})) return false;
  for (int l = 0; l < g.levels; ++l) {
    if (!detail::aligned_16(levels[l])) return false;
  }
  return true;
}

}  // namespace

template <typename T>
void roi_align_forward(const T* const* features, const float* rois, T* y, const cpu::RoiAlignGeometry& g,
                       cudaStream_t stream) {
  const int64_t n = g.rois * g.output_size * g.output_size * g.channels;
  if (n == 0) return;
  Levels<const T*> levels{};
  for (int l = 0; l < g.levels; ++l) levels.level[l] = features[l];
  constexpr int kWidth = kElementsPer16Bytes<T>;
  if (channel_packs_fit<T>(g, features, y)) {
    roi_align_forward_kernel<T, kWidth><<<detail::grid_stride_blocks(n / kWidth, kThreads), kThreads, 0, stream>>>(
        levels, rois, y, device_geometry(g), n / kWidth);
  } else {
    roi_align_forward_kernel<T, 1><<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(
        levels, rois, y, device_geometry(g), n);
  }
  SB_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void roi_align_backward(const T* dy, const float* rois, float* const* dfeatures, const cpu::RoiAlignGeometry& g,
                        cudaStream_t stream) {
  Levels<float*> levels{};
  for (int l = 0; l < g.levels; ++l) {
    levels.level[l] = dfeatures[l];
    SB_CUDA_CHECK(cudaMemsetAsync(dfeatures[l], 0, sizeof(float) * g.batch * g.height[l] * g.width[l] * g.channels, stream));
  }
  const int64_t n = g.rois * g.output_size * g.output_size * g.channels;
  if (n == 0) return;
  const int64_t bins = g.rois * g.output_size * g.output_size;
  roi_align_backward_kernel<T><<<detail::grid_stride_blocks(bins * kBackwardLanes, kThreads), kThreads, 0, stream>>>(
      dy, rois, levels, device_geometry(g), bins);
  SB_CUDA_CHECK(cudaGetLastError());
}

#define SB_ROI_ALIGN(T)                                                                                            \
  template void roi_align_forward<T>(const T* const*, const float*, T*, const cpu::RoiAlignGeometry&, cudaStream_t); \
  template void roi_align_backward<T>(const T*, const float*, float* const*, const cpu::RoiAlignGeometry&, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_ROI_ALIGN)
#undef SB_ROI_ALIGN

}  // namespace sb::cuda

// The roi_align family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_roi_align_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"roi_align", SB_TYPED({
         const cpu::RoiAlignGeometry g = detail::roi_align_geometry(n.attributes);
         std::vector<const T*> levels;
         for (int l = 0; l < g.levels; ++l) levels.push_back(e.at<T>(n.inputs[size_t(l)]));
         cuda::roi_align_forward(levels.data(), e.at<float>(n.inputs.back()), e.at<T>(n.outputs[0]), g, e.stream());
       })},
      {"roi_align_backward",  // dy in the compute dtype, the level gradients fp32
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           const cpu::RoiAlignGeometry g = detail::roi_align_geometry(n.attributes);
           std::vector<float*> levels;
           for (TensorId id : n.outputs) levels.push_back(e.at<float>(id));
           cuda::roi_align_backward(e.at<T>(n.inputs[0]), e.at<float>(n.inputs[1]), levels.data(), g, e.stream());
         });
       }},
  });
}

}  // namespace sb::cuda_binding
