// CUDA target assignment of Mask R-CNN (src/cuda/detection_targets.h).
#include <cuda_runtime.h>

#include <cub/cub.cuh>

#include <algorithm>

#include "scalebench/error.h"
#include "src/cpu/detection_math.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/detection_scratch.h"
#include "src/cuda/detection_targets.h"
#include "src/cuda/grid.h"
#include "src/cuda/radix_key_bits.h"
#include "src/cuda/radix_sort_bytes.h"
#include "src/cuda/stream_scratch.h"
#include "src/core/ops/detection_targets.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBoxes = 1024;  // ground-truth boxes per image the anchor matcher's shared maxima hold
constexpr unsigned long long kPositive = 0, kNegative = 1, kIgnored = 2;
// An anchor's sort key: image | category (2 bits) | 32 random bits. One radix sort over the whole batch with the
// image in the top bits orders each image's anchors as a per-image sort would (radix sorts are stable), where
// CUB's segmented sort gives each image's 268,569 anchors to one thread block (5.3 ms of a 99-ms maskrcnn step
// on H200).
constexpr int kImageShift = 34;
__host__ __device__ constexpr unsigned long long image_key(int64_t n) {
  return static_cast<unsigned long long>(n) << kImageShift;
}
// The key bits the sort must look at: those of the category and random bits, and enough for the last image.
int sort_key_bits(int64_t batch) { return kImageShift + bits_to_tell_apart(batch); }

using detail::ScratchCarver;

// Per image (blockIdx.y): every anchor's best box (first maximum) and IoU, and each box's highest IoU over the
// anchors (a block maximum in shared memory, then one atomicMax per block and box: IoUs are >= 0, so their bits
// order as integers).
__global__ void match_anchors_kernel(const float* __restrict__ anchors, const float* __restrict__ gt_boxes,
                                     int64_t anchor_count, int64_t boxes, int32_t* __restrict__ match,
                                     float* __restrict__ match_iou, int* __restrict__ box_best) {
  __shared__ int best[kMaxBoxes];
  const int64_t n = blockIdx.y;
  const float* image_boxes = gt_boxes + n * boxes * 4;
  for (int64_t k = threadIdx.x; k < boxes; k += blockDim.x) best[k] = 0;
  __syncthreads();
  for (int64_t a = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; a < anchor_count; a += int64_t{gridDim.x} * blockDim.x) {
    int64_t b = 0;
    float b_iou = -1.0f;
    for (int64_t k = 0; k < boxes; ++k) {
      const float iou = detection::box_iou(anchors + a * 4, image_boxes + k * 4);
      if (iou > b_iou) b = k, b_iou = iou;
      atomicMax(&best[k], __float_as_int(iou));
    }
    match[n * anchor_count + a] = static_cast<int32_t>(b);
    match_iou[n * anchor_count + a] = b_iou;
  }
  __syncthreads();
  for (int64_t k = threadIdx.x; k < boxes; k += blockDim.x) atomicMax(&box_best[n * boxes + k], best[k]);
}

__global__ void anchor_keys_kernel(const float* __restrict__ anchors, const float* __restrict__ gt_boxes,
                                   const int32_t* __restrict__ sample_ids, StepValue sampling_step,
                                   cpu::RpnTargetGeometry g, const float* __restrict__ match_iou,
                                   const int* __restrict__ box_best, unsigned long long* __restrict__ keys,
                                   int32_t* __restrict__ values) {
  const auto step = static_cast<uint64_t>(sampling_step.resolve());
  const int64_t total = g.batch * g.anchors;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t n = i / g.anchors, a = i % g.anchors;
    bool low_quality = false;
    for (int64_t k = 0; k < g.boxes && !low_quality; ++k) {
      const float best = __int_as_float(box_best[n * g.boxes + k]);
      low_quality = best > 0.0f && detection::box_iou(anchors + a * 4, gt_boxes + (n * g.boxes + k) * 4) == best;
    }
    const float iou = match_iou[i];
    const unsigned long long category = iou >= g.foreground_iou || low_quality ? kPositive
                                        : iou < g.background_iou               ? kNegative
                                                                               : kIgnored;
    keys[i] = image_key(n) | (category << 32) |
              detection::random_bits(uint64_t(sample_ids[n]), step, uint64_t(a), cpu::kRpnSamplerStream);
    values[i] = static_cast<int32_t>(a);
  }
}

// The first position of a sorted segment whose key is >= bound.
__device__ int64_t lower_bound(const unsigned long long* keys, int64_t count, unsigned long long bound) {
  int64_t low = 0, high = count;
  while (low < high) {
    const int64_t mid = (low + high) / 2;
    if (keys[mid] < bound) low = mid + 1; else high = mid;
  }
  return low;
}

// Per image: positives, the positives and negatives taken, and their weight.
struct SampleCounts {
  int64_t positives, take_positive, take_negative;
  float weight;
};

__global__ void count_anchor_samples_kernel(const unsigned long long* __restrict__ sorted, cpu::RpnTargetGeometry g,
                                            SampleCounts* __restrict__ counts) {
  const int64_t n = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (n >= g.batch) return;
  const unsigned long long* keys = sorted + n * g.anchors;
  const int64_t positives = lower_bound(keys, g.anchors, image_key(n) | (kNegative << 32));
  const int64_t negatives = lower_bound(keys, g.anchors, image_key(n) | (kIgnored << 32)) - positives;
  SampleCounts c;
  c.positives = positives;
  c.take_positive = min(positives, g.max_positives());
  c.take_negative = min(negatives, g.sampled_per_image - c.take_positive);
  c.weight = 1.0f / static_cast<float>(g.batch * max(c.take_positive + c.take_negative, int64_t{1}));
  counts[n] = c;
}

__global__ void emit_anchor_samples_kernel(const int32_t* __restrict__ order, const SampleCounts* __restrict__ counts,
                                           const float* __restrict__ anchors, const float* __restrict__ gt_boxes,
                                           const int32_t* __restrict__ match, cpu::RpnTargetGeometry g,
                                           float* __restrict__ labels, float* __restrict__ label_weights,
                                           float* __restrict__ box_targets, float* __restrict__ box_weights) {
  const float unit[4] = {1, 1, 1, 1};
  const int64_t total = g.batch * g.sampled_per_image;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t n = i / g.sampled_per_image, k = i % g.sampled_per_image;
    const SampleCounts c = counts[n];
    const bool positive = k < c.take_positive;
    if (!positive && k - c.take_positive >= c.take_negative) continue;
    const int64_t position = positive ? k : c.positives + (k - c.take_positive);
    const int64_t a = order[n * g.anchors + position], e = n * g.anchors + a;
    labels[e] = positive ? 1.0f : 0.0f;
    label_weights[e] = c.weight;
    if (!positive) continue;
    detection::encode_box(anchors + a * 4, gt_boxes + (n * g.boxes + match[e]) * 4, unit, box_targets + e * 4);
    for (int j = 0; j < 4; ++j) box_weights[e * 4 + j] = c.weight;
  }
}

struct RpnBuffers {
  int32_t* match;
  float* match_iou;
  int* box_best;
  unsigned long long *keys_in, *keys_out;
  int32_t *values_in, *values_out;
  SampleCounts* counts;
  void* cub;
  size_t cub_bytes;
};

RpnBuffers carve_rpn(ScratchCarver& carver, const cpu::RpnTargetGeometry& g) {
  RpnBuffers b{};
  const auto n = static_cast<size_t>(g.batch * g.anchors);
  b.match = carver.take<int32_t>(n), b.match_iou = carver.take<float>(n);
  b.box_best = carver.take<int>(static_cast<size_t>(g.batch * g.boxes));
  b.keys_in = carver.take<unsigned long long>(n), b.keys_out = carver.take<unsigned long long>(n);
  b.values_in = carver.take<int32_t>(n), b.values_out = carver.take<int32_t>(n);
  b.counts = carver.take<SampleCounts>(static_cast<size_t>(g.batch));
  b.cub_bytes = radix_sort_pairs_bytes(n, sizeof(unsigned long long), sizeof(int32_t));  // no device query: plans size it
  b.cub = carver.take_bytes(b.cub_bytes);
  return b;
}

// ---- RoI sampling: one block per image.

struct RoiPick {
  int64_t positives, take_positive, take_negative, length;  // length: the picked list before it repeats
  // The position in the sorted order of sampled RoI r.
  __device__ int64_t position(int64_t r) const {
    const int64_t q = r % length;
    if (q < take_positive) return q;
    if (q < take_positive + take_negative) return positives + (q - take_positive);
    return take_positive + (q - take_positive - take_negative);
  }
};

constexpr int kCandidateBits = 13;  // candidate index in the sort key: up to 8192 per image

__global__ void roi_sample_kernel(const float* __restrict__ proposals, const float* __restrict__ gt_boxes,
                                  const int32_t* __restrict__ gt_classes, const int32_t* __restrict__ sample_ids,
                                  StepValue sampling_step, cpu::RoiSampleGeometry g, int64_t slots,
                                  int32_t* __restrict__ match_all, cpu::RoiSampleOutputs out) {
  extern __shared__ unsigned long long keys[];
  __shared__ int positives;
  const auto step = static_cast<uint64_t>(sampling_step.resolve());
  const float coder[4] = {10, 10, 5, 5};
  const int64_t n = blockIdx.x, candidates = g.candidates();
  const float* boxes = gt_boxes + n * g.boxes * 4;
  int32_t* match = match_all + n * candidates;
  auto candidate = [&](int64_t c) {
    return c < g.proposals ? proposals + (n * g.proposals + c) * 4 : boxes + (c - g.proposals) * 4;
  };
  if (threadIdx.x == 0) positives = 0;
  __syncthreads();
  for (int64_t c = threadIdx.x; c < slots; c += blockDim.x) {
    if (c >= candidates) {
      keys[c] = ~0ull;
      continue;
    }
    int64_t best = 0;
    float best_iou = -1.0f;
    for (int64_t k = 0; k < g.boxes; ++k) {
      const float iou = detection::box_iou(candidate(c), boxes + k * 4);
      if (iou > best_iou) best = k, best_iou = iou;
    }
    match[c] = static_cast<int32_t>(best);
    const unsigned long long category = best_iou >= g.foreground_iou ? kPositive : kNegative;
    if (category == kPositive) atomicAdd(&positives, 1);
    keys[c] = (category << 45) |
              (static_cast<unsigned long long>(
                   detection::random_bits(uint64_t(sample_ids[n]), step, uint64_t(c), cpu::kRoiSamplerStream))
               << kCandidateBits) |
              static_cast<unsigned long long>(c);
  }
  __syncthreads();
  for (int64_t k = 2; k <= slots; k <<= 1) {  // bitonic sort, ascending
    for (int64_t j = k >> 1; j > 0; j >>= 1) {
      for (int64_t i = threadIdx.x; i < slots; i += blockDim.x) {
        const int64_t partner = i ^ j;
        if (partner <= i) continue;
        const bool ascending = (i & k) == 0;
        const unsigned long long a = keys[i], b = keys[partner];
        if ((a > b) == ascending) keys[i] = b, keys[partner] = a;
      }
      __syncthreads();
    }
  }
  RoiPick pick;
  pick.positives = positives;
  pick.take_positive = min(pick.positives, g.max_positives());
  pick.take_negative = min(candidates - pick.positives, g.rois_per_image - pick.take_positive);
  const int64_t extra = min(pick.positives - pick.take_positive, g.rois_per_image - pick.take_positive - pick.take_negative);
  pick.length = pick.take_positive + pick.take_negative + extra;
  const float box_weight = 1.0f / static_cast<float>(g.batch * g.rois_per_image);
  const int64_t index_mask = (int64_t{1} << kCandidateBits) - 1;
  for (int64_t r = threadIdx.x; r < g.rois_per_image; r += blockDim.x) {
    const int64_t c = static_cast<int64_t>(keys[pick.position(r)] & index_mask), i = n * g.rois_per_image + r;
    const bool positive = (keys[pick.position(r)] >> 45) == kPositive;
    const float* box = candidate(c);
    out.rois[i * 5] = static_cast<float>(n);
    for (int k = 0; k < 4; ++k) out.rois[i * 5 + 1 + k] = box[k];
    out.labels[i] = positive ? gt_classes[n * g.boxes + match[c]] : 0;
    out.sampled[i] = static_cast<int32_t>(c);
    for (int k = 0; k < 4; ++k) {
      out.box_targets[i * 4 + k] = 0.0f;
      out.box_weights[i * 4 + k] = positive ? box_weight : 0.0f;
    }
    if (positive) detection::encode_box(box, boxes + match[c] * 4, coder, out.box_targets + i * 4);
  }
  const int64_t real = min(g.mask_rois_per_image, pick.take_positive);
  for (int64_t m = threadIdx.x; m < g.mask_rois_per_image; m += blockDim.x) {
    const int64_t r = m < real ? m : 0, i = n * g.mask_rois_per_image + m;
    const int64_t c = static_cast<int64_t>(keys[pick.position(r)] & index_mask);
    const float* box = candidate(c);
    out.mask_rois[i * 5] = static_cast<float>(n);
    for (int k = 0; k < 4; ++k) out.mask_rois[i * 5 + 1 + k] = box[k];
    out.mask_labels[i] = gt_classes[n * g.boxes + match[c]];
    out.mask_boxes[i] = match[c];
    out.mask_weights[i] = m < real ? 1.0f / static_cast<float>(g.batch * real) : 0.0f;
  }
}

int64_t sort_slots(int64_t candidates) {
  int64_t slots = 1;
  while (slots < candidates) slots <<= 1;
  return slots;
}

__global__ void mask_targets_kernel(const float* __restrict__ mask_rois, const int32_t* __restrict__ mask_boxes,
                                    const float* __restrict__ mask_weights, const float* __restrict__ gt_boxes,
                                    int64_t boxes, int64_t resolution, int64_t total, float* __restrict__ targets,
                                    float* __restrict__ weights) {
  const float inverse_cells = 1.0f / static_cast<float>(resolution * resolution);
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t j = e % resolution, i = (e / resolution) % resolution, q = e / (resolution * resolution);
    const float* roi = mask_rois + q * 5;
    const float* box = gt_boxes + (static_cast<int64_t>(roi[0]) * boxes + mask_boxes[q]) * 4;
    const float cell_w = detection::sub(roi[3], roi[1]) / static_cast<float>(resolution);
    const float cell_h = detection::sub(roi[4], roi[2]) / static_cast<float>(resolution);
    const float x = detection::add(roi[1], detection::mul(static_cast<float>(j) + 0.5f, cell_w));
    const float y = detection::add(roi[2], detection::mul(static_cast<float>(i) + 0.5f, cell_h));
    targets[e] = detection::inside_ellipse(box, x, y) ? 1.0f : 0.0f;
    weights[e] = mask_weights[q] * inverse_cells;
  }
}

}  // namespace

size_t rpn_targets_scratch_bytes(const cpu::RpnTargetGeometry& g) {
  ScratchCarver carver;
  carve_rpn(carver, g);
  return carver.bytes();
}

void rpn_targets(const float* anchors, const float* gt_boxes, const int32_t* sample_ids, StepValue step,
                 const cpu::RpnTargetGeometry& g, float* labels, float* label_weights, float* box_targets,
                 float* box_weights, cudaStream_t stream) {
  if (g.boxes > kMaxBoxes) throw UsageError("rpn_targets: at most " + std::to_string(kMaxBoxes) + " boxes per image");
  ScratchLease scratch(stream, rpn_targets_scratch_bytes(g));
  ScratchCarver carver(scratch.data());
  const RpnBuffers b = carve_rpn(carver, g);
  const int64_t total = g.batch * g.anchors;
  SB_CUDA_CHECK(cudaMemsetAsync(labels, 0, sizeof(float) * total, stream));
  SB_CUDA_CHECK(cudaMemsetAsync(label_weights, 0, sizeof(float) * total, stream));
  SB_CUDA_CHECK(cudaMemsetAsync(box_targets, 0, sizeof(float) * total * 4, stream));
  SB_CUDA_CHECK(cudaMemsetAsync(box_weights, 0, sizeof(float) * total * 4, stream));
  SB_CUDA_CHECK(cudaMemsetAsync(b.box_best, 0, sizeof(int) * g.batch * g.boxes, stream));
  const int per_image = std::max(1, detail::grid_stride_blocks(total, kThreads) / static_cast<int>(std::max<int64_t>(g.batch, 1)));
  match_anchors_kernel<<<dim3(per_image, static_cast<unsigned>(g.batch)), kThreads, 0, stream>>>(
      anchors, gt_boxes, g.anchors, g.boxes, b.match, b.match_iou, b.box_best);
  SB_CUDA_CHECK(cudaGetLastError());
  anchor_keys_kernel<<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(
      anchors, gt_boxes, sample_ids, step, g, b.match_iou, b.box_best, b.keys_in, b.values_in);
  SB_CUDA_CHECK(cudaGetLastError());
  radix_sort_within(b.cub, b.cub_bytes, "rpn_targets", [&](void* temp, size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(temp, bytes, b.keys_in, b.keys_out, b.values_in, b.values_out,
                                           static_cast<int>(total), 0, sort_key_bits(g.batch), stream);
  });
  count_anchor_samples_kernel<<<static_cast<unsigned>((g.batch + 63) / 64), 64, 0, stream>>>(b.keys_out, g, b.counts);
  SB_CUDA_CHECK(cudaGetLastError());
  const int64_t sampled = g.batch * g.sampled_per_image;
  emit_anchor_samples_kernel<<<detail::grid_stride_blocks(sampled, kThreads), kThreads, 0, stream>>>(
      b.values_out, b.counts, anchors, gt_boxes, b.match, g, labels, label_weights, box_targets, box_weights);
  SB_CUDA_CHECK(cudaGetLastError());
}

size_t roi_sample_scratch_bytes(const cpu::RoiSampleGeometry& g) {
  return sizeof(int32_t) * static_cast<size_t>(g.batch * g.candidates()) + 256;
}

void roi_sample(const float* proposals, const float* gt_boxes, const int32_t* gt_classes, const int32_t* sample_ids,
                StepValue step, const cpu::RoiSampleGeometry& g, const cpu::RoiSampleOutputs& out,
                cudaStream_t stream) {
  if (g.candidates() > (int64_t{1} << kCandidateBits)) throw UsageError("roi_sample: at most 8192 candidates per image");
  ScratchLease scratch(stream, roi_sample_scratch_bytes(g));
  const int64_t slots = sort_slots(g.candidates());
  const size_t shared = sizeof(unsigned long long) * static_cast<size_t>(slots);
  if (shared > 48 * 1024) {
    SB_CUDA_CHECK(cudaFuncSetAttribute(roi_sample_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(shared)));
  }
  roi_sample_kernel<<<static_cast<unsigned>(g.batch), kThreads, shared, stream>>>(
      proposals, gt_boxes, gt_classes, sample_ids, step, g, slots, static_cast<int32_t*>(scratch.data()), out);
  SB_CUDA_CHECK(cudaGetLastError());
}

void mask_targets(const float* mask_rois, const int32_t* mask_boxes, const float* mask_weights, const float* gt_boxes,
                  int64_t rois, int64_t boxes, int64_t resolution, float* targets, float* weights, cudaStream_t stream) {
  const int64_t total = rois * resolution * resolution;
  if (total == 0) return;
  mask_targets_kernel<<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(
      mask_rois, mask_boxes, mask_weights, gt_boxes, boxes, resolution, total, targets, weights);
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sb::cuda

// The detection_targets family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_detection_targets_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"rpn_targets",
       [](CudaExecutor& e, const Node& n) {
         cuda::rpn_targets(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<int32_t>(n.inputs[2]),
                           step_count_value(e), detail::rpn_target_geometry(n.attributes), e.at<float>(n.outputs[0]),
                           e.at<float>(n.outputs[1]), e.at<float>(n.outputs[2]), e.at<float>(n.outputs[3]), e.stream());
       },
       [](const Node& n) -> uint64_t {
         return cuda::rpn_targets_scratch_bytes(detail::rpn_target_geometry(n.attributes));
       }},
      {"roi_sample",
       [](CudaExecutor& e, const Node& n) {
         const auto& o = n.outputs;
         const cpu::RoiSampleOutputs out{e.at<float>(o[0]), e.at<int32_t>(o[1]), e.at<float>(o[2]),
                                         e.at<float>(o[3]), e.at<int32_t>(o[4]), e.at<float>(o[5]),
                                         e.at<int32_t>(o[6]), e.at<int32_t>(o[7]), e.at<float>(o[8])};
         cuda::roi_sample(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<int32_t>(n.inputs[2]),
                          e.at<int32_t>(n.inputs[3]), step_count_value(e), detail::roi_sample_geometry(n.attributes),
                          out, e.stream());
       },
       [](const Node& n) -> uint64_t {
         return cuda::roi_sample_scratch_bytes(detail::roi_sample_geometry(n.attributes));
       }},
      {"mask_targets",
       [](CudaExecutor& e, const Node& n) {
         cuda::mask_targets(e.at<float>(n.inputs[0]), e.at<int32_t>(n.inputs[1]), e.at<float>(n.inputs[2]),
                            e.at<float>(n.inputs[3]), size_attr(n, "rois"), size_attr(n, "boxes"),
                            size_attr(n, "resolution"), e.at<float>(n.outputs[0]), e.at<float>(n.outputs[1]),
                            e.stream());
       }},
  });
}

}  // namespace sb::cuda_binding
