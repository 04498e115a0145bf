// YOLOv3 loss kernels (yolo_loss.h). Predictions are numbered head by head, each head (n, gy, gx, anchor).
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/grid.h"
#include "src/cuda/yolo_loss.h"
#include "src/core/ops/yolo_loss.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kSumThreads = 1024;

struct Anchors {
  float w[9], h[9];
};

Anchors anchors() {
  Anchors a;
  for (int k = 0; k < 9; ++k) {
    a.w[k] = cpu::kYoloAnchorPixels[k][0] / cpu::kYoloAnchorReference;
    a.h[k] = cpu::kYoloAnchorPixels[k][1] / cpu::kYoloAnchorReference;
  }
  return a;
}

template <typename T>
struct Heads {
  T* head[3];
  int64_t grid[3];
  int64_t first[4];  // first prediction index of each head; first[3] = total
};

__device__ inline float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ inline float softplusf(float x) { return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))); }

__device__ inline float iou_centered(float x1, float y1, float w1, float h1, float x2, float y2, float w2, float h2) {
  const float iw = fminf(x1 + w1 / 2, x2 + w2 / 2) - fmaxf(x1 - w1 / 2, x2 - w2 / 2);
  const float ih = fminf(y1 + h1 / 2, y2 + h2 / 2) - fmaxf(y1 - h1 / 2, y2 - h2 / 2);
  if (iw <= 0.0f || ih <= 0.0f) return 0.0f;
  const float inter = iw * ih;
  return inter / (w1 * h1 + w2 * h2 - inter);
}

template <typename T>
__global__ void assign_kernel(const float* __restrict__ truth, int32_t* __restrict__ slots, Heads<T> heads,
                              Anchors anchors, int64_t batch, int64_t boxes) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= batch * boxes) return;
  const int64_t n = i / boxes, b = i % boxes;
  const float* t = truth + i * 5;
  if (!(t[3] > 0.0f && t[4] > 0.0f)) return;
  int best = 0;
  float best_iou = -1.0f;
  for (int k = 0; k < 9; ++k) {
    const float inter = fminf(t[3], anchors.w[k]) * fminf(t[4], anchors.h[k]);
    const float iou = inter / (t[3] * t[4] + anchors.w[k] * anchors.h[k] - inter);
    if (iou > best_iou) best_iou = iou, best = k;
  }
  const int s = 2 - best / 3, a = best % 3;
  const int64_t grid = heads.grid[s];
  const int64_t gx = min(static_cast<int64_t>(floorf(t[1] * grid)), grid - 1);
  const int64_t gy = min(static_cast<int64_t>(floorf(t[2] * grid)), grid - 1);
  atomicMax(slots + heads.first[s] + ((n * grid + gy) * grid + gx) * 3 + a, int32_t(b));
}

// kBackward: write the prediction's 5 + C gradients (times seed / N); otherwise its loss terms into losses.
template <typename T, bool kBackward>
__global__ void prediction_kernel(Heads<T> heads, Heads<T> dheads, const float* __restrict__ truth,
                                  const int32_t* __restrict__ slots, float* __restrict__ losses, Anchors anchors,
                                  int64_t batch, int64_t boxes, int64_t classes, float host_seed,
                                  const float* gradient_scale) {
  const int64_t total = heads.first[3];
  const int64_t per_anchor = 5 + classes, channels = 3 * per_anchor;
  const float scale = host_seed * (gradient_scale != nullptr ? *gradient_scale : 1.0f) / float(batch);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int s = i < heads.first[1] ? 0 : (i < heads.first[2] ? 1 : 2);
    const int64_t local = i - heads.first[s], grid = heads.grid[s];
    const int a = int(local % 3);
    const int64_t gx = (local / 3) % grid, gy = (local / (3 * grid)) % grid, n = local / (3 * grid * grid);
    const int k = (2 - s) * 3 + a;
    const float aw = anchors.w[k], ah = anchors.h[k];
    const int64_t base = ((n * grid + gy) * grid + gx) * channels + a * per_anchor;
    const T* p = heads.head[s] + base;
    T* d = kBackward ? dheads.head[s] + base : nullptr;
    const float p0 = to_float(p[0]), p1 = to_float(p[1]), p2 = to_float(p[2]), p3 = to_float(p[3]);
    const float p4 = to_float(p[4]);
    const float sx = sigmoidf(p0), sy = sigmoidf(p1), so = sigmoidf(p4);
    const int32_t owner = slots[i];
    if (owner < 0) {
      const float bx = (float(gx) + sx) / float(grid), by = (float(gy) + sy) / float(grid);
      const float bw = aw * expf(p2), bh = ah * expf(p3);
      float best = 0.0f;
      for (int64_t b = 0; b < boxes; ++b) {
        const float* t = truth + (n * boxes + b) * 5;
        if (t[3] > 0.0f && t[4] > 0.0f) best = fmaxf(best, iou_centered(bx, by, bw, bh, t[1], t[2], t[3], t[4]));
      }
      const bool ignored = best > cpu::kYoloIgnoreThreshold;
      if constexpr (kBackward) {
        for (int64_t c = 0; c < per_anchor; ++c) d[c] = from_float<T>(0.0f);
        if (!ignored) d[4] = from_float<T>(scale * so);
      } else {
        losses[i] = ignored ? 0.0f : softplusf(p4);
      }
      continue;
    }
    const float* t = truth + (n * boxes + owner) * 5;
    const float box_scale = 2.0f - t[3] * t[4];
    const float tx = t[1] * grid - float(gx), ty = t[2] * grid - float(gy);
    const float tw = logf(t[3] / aw), th = logf(t[4] / ah);
    const int64_t cls = static_cast<int64_t>(t[0]);
    if constexpr (kBackward) {
      d[0] = from_float<T>(scale * box_scale * 2.0f * (sx - tx) * sx * (1.0f - sx));
      d[1] = from_float<T>(scale * box_scale * 2.0f * (sy - ty) * sy * (1.0f - sy));
      d[2] = from_float<T>(scale * box_scale * 2.0f * (p2 - tw));
      d[3] = from_float<T>(scale * box_scale * 2.0f * (p3 - th));
      d[4] = from_float<T>(scale * (so - 1.0f));
      for (int64_t c = 0; c < classes; ++c) {
        d[5 + c] = from_float<T>(scale * (sigmoidf(to_float(p[5 + c])) - (c == cls ? 1.0f : 0.0f)));
      }
    } else {
      float sum = softplusf(-p4) + box_scale * ((sx - tx) * (sx - tx) + (sy - ty) * (sy - ty) +
                                                (p2 - tw) * (p2 - tw) + (p3 - th) * (p3 - th));
      for (int64_t c = 0; c < classes; ++c) {
        const float v = to_float(p[5 + c]);
        sum += softplusf(c == cls ? -v : v);
      }
      losses[i] = sum;
    }
  }
}

// One block: strided sums in double in a fixed order, then a fixed tree.
__global__ void sum_kernel(const float* __restrict__ losses, int64_t count, int64_t batch, float* __restrict__ loss) {
  __shared__ double partial[kSumThreads];
  double sum = 0;
  for (int64_t i = threadIdx.x; i < count; i += kSumThreads) sum += losses[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kSumThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss = float(partial[0] / double(batch));
}

template <typename T>
Heads<T> describe(const T* h0, const T* h1, const T* h2, const cpu::YoloGeometry& g) {
  Heads<T> heads{};
  heads.head[0] = const_cast<T*>(h0), heads.head[1] = const_cast<T*>(h1), heads.head[2] = const_cast<T*>(h2);
  heads.first[0] = 0;
  for (int s = 0; s < 3; ++s) {
    heads.grid[s] = g.grid[s];
    heads.first[s + 1] = heads.first[s] + g.batch * 3 * g.grid[s] * g.grid[s];
  }
  return heads;
}

template <typename T>
int32_t* assign(const Heads<T>& heads, const float* truth, const cpu::YoloGeometry& g, void* workspace,
                cudaStream_t stream) {
  SB_CHECK(g.batch > 0 && g.classes > 0 && g.boxes > 0 && g.grid[0] > 0 && g.grid[1] > 0 && g.grid[2] > 0,
           "yolo_loss: sizes must be positive");
  auto* slots = static_cast<int32_t*>(workspace);
  SB_CUDA_CHECK(cudaMemsetAsync(slots, 0xFF, size_t(heads.first[3]) * sizeof(int32_t), stream));  // -1
  const int64_t truths = g.batch * g.boxes;
  assign_kernel<<<int((truths + kThreads - 1) / kThreads), kThreads, 0, stream>>>(truth, slots, heads, anchors(),
                                                                                g.batch, g.boxes);
  SB_CUDA_CHECK_LAUNCH();
  return slots;
}

}  // namespace

template <typename T>
void yolo_loss_forward(const T* head0, const T* head1, const T* head2, const float* truth, float* loss,
                       const cpu::YoloGeometry& g, void* workspace, cudaStream_t stream) {
  const Heads<T> heads = describe(head0, head1, head2, g);
  int32_t* slots = assign(heads, truth, g, workspace, stream);
  float* losses = reinterpret_cast<float*>(slots + heads.first[3]);
  prediction_kernel<T, false><<<detail::grid_stride_blocks(heads.first[3], kThreads), kThreads, 0, stream>>>(
      heads, heads, truth, slots, losses, anchors(), g.batch, g.boxes, g.classes, 1.0f, nullptr);
  SB_CUDA_CHECK_LAUNCH();
  sum_kernel<<<1, kSumThreads, 0, stream>>>(losses, heads.first[3], g.batch, loss);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void yolo_loss_backward(const T* head0, const T* head1, const T* head2, const float* truth, T* dhead0, T* dhead1,
                        T* dhead2, const cpu::YoloGeometry& g, float seed, void* workspace, cudaStream_t stream,
                        const float* gradient_scale) {
  const Heads<T> heads = describe(head0, head1, head2, g);
  const Heads<T> dheads = describe<T>(dhead0, dhead1, dhead2, g);
  int32_t* slots = assign(heads, truth, g, workspace, stream);
  prediction_kernel<T, true><<<detail::grid_stride_blocks(heads.first[3], kThreads), kThreads, 0, stream>>>(
      heads, dheads, truth, slots, nullptr, anchors(), g.batch, g.boxes, g.classes, seed, gradient_scale);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_YOLO(T)                                                                                                \
  template void yolo_loss_forward<T>(const T*, const T*, const T*, const float*, float*, const cpu::YoloGeometry&, \
                                     void*, cudaStream_t);                                                        \
  template void yolo_loss_backward<T>(const T*, const T*, const T*, const float*, T*, T*, T*,                     \
                                      const cpu::YoloGeometry&, float, void*, cudaStream_t, const float*);
SB_INSTANTIATE_FOR_ELEMENTS(SB_YOLO)

}  // namespace sb::cuda

// The yolo_loss family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {
namespace {

cpu::YoloGeometry yolo_geometry(const Node& n) {
  cpu::YoloGeometry g;
  g.batch = size_attr(n, "batch"), g.classes = size_attr(n, "classes"), g.boxes = size_attr(n, "boxes");
  g.grid[0] = size_attr(n, "g0"), g.grid[1] = size_attr(n, "g1"), g.grid[2] = size_attr(n, "g2");
  return g;
}

}  // namespace

void bind_yolo_loss_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      // YOLOv3's loss (src/cuda/yolo_loss.h): heads in the compute dtype, truth and loss fp32; the backward
      // starts the pass (dloss = 1, times the loss scale if any).
      {"yolo_loss",
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::yolo_loss_forward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.inputs[2]),
                                   e.at<float>(n.inputs[3]), e.at<float>(n.outputs[0]), yolo_geometry(n),
                                   e.u8(n.outputs[1]), e.stream());
         });
       }},
      {"yolo_loss_backward", SB_TYPED(cuda::yolo_loss_backward(
                                 e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.inputs[2]),
                                 e.at<float>(n.inputs[3]), e.at<T>(n.outputs[0]), e.at<T>(n.outputs[1]),
                                 e.at<T>(n.outputs[2]), yolo_geometry(n),
                                 gradient_weight(n) * e.loss_weight(n.inputs[3]),
                                 e.u8(n.outputs[3]), e.stream(), e.loss_gradient_scale()))},
  });
}

}  // namespace sb::cuda_binding
