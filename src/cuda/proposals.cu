// CUDA RPN proposal stage (src/cuda/proposals.h).
#include <cuda_runtime.h>

#include <cub/cub.cuh>

#include <algorithm>
#include <cmath>

#include "src/cpu/detection_math.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/detection_scratch.h"
#include "src/cuda/grid.h"
#include "src/cuda/proposals.h"
#include "src/cuda/radix_key_bits.h"
#include "src/cuda/radix_sort_bytes.h"
#include "src/cuda/stream_scratch.h"
#include "src/core/ops/proposals.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kNmsTile = 64;

using detail::ScratchCarver;

struct BaseAnchors {
  float box[cpu::kMaxAnchorLevels][cpu::kAnchorsPerCell][4];
  int64_t first[cpu::kMaxAnchorLevels + 1];  // first anchor of each level
  int64_t width[cpu::kMaxAnchorLevels], stride_h[cpu::kMaxAnchorLevels], stride_w[cpu::kMaxAnchorLevels];
  int levels;
};

__global__ void anchor_grid_kernel(BaseAnchors b, float* __restrict__ anchors, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    int l = 0;
    while (i >= b.first[l + 1]) ++l;
    const int64_t local = i - b.first[l], a = local % cpu::kAnchorsPerCell, cell = local / cpu::kAnchorsPerCell;
    const auto sx = static_cast<float>((cell % b.width[l]) * b.stride_w[l]);
    const auto sy = static_cast<float>((cell / b.width[l]) * b.stride_h[l]);
    anchors[i * 4 + 0] = b.box[l][a][0] + sx;
    anchors[i * 4 + 1] = b.box[l][a][1] + sy;
    anchors[i * 4 + 2] = b.box[l][a][2] + sx;
    anchors[i * 4 + 3] = b.box[l][a][3] + sy;
  }
}

// The sorts below are one radix sort over the whole batch, descending, with the segment (image and level, or
// image) in the key's top bits counted down, so that segments come out in order and each sorted as a per-segment
// sort would (radix sorts are stable). CUB's segmented sort gives each segment to one thread block, and P2's
// 201,600 anchors per image made the proposals 2.5 ms of a 99-ms maskrcnn step on H200.
__device__ unsigned long long segment_key(int64_t segment, int64_t segments, int shift) {
  return static_cast<unsigned long long>(segments - 1 - segment) << shift;
}

struct LevelTable {
  int64_t first[cpu::kMaxAnchorLevels];       // first anchor of the level
  int64_t count[cpu::kMaxAnchorLevels];       // anchors of the level
  int64_t candidates[cpu::kMaxAnchorLevels];  // kept after top-k
  int64_t first_candidate[cpu::kMaxAnchorLevels + 1];
  int64_t mask_offset[cpu::kMaxAnchorLevels + 1];  // words before the level's NMS mask, per image
  int levels;
};

LevelTable level_table(const cpu::ProposalGeometry& g) {
  LevelTable t{};
  t.levels = g.levels;
  int64_t first = 0;
  for (int l = 0; l < g.levels; ++l) {
    t.first[l] = first, t.count[l] = g.level_anchors[l], t.candidates[l] = g.level_candidates(l);
    t.first_candidate[l + 1] = t.first_candidate[l] + t.candidates[l];
    t.mask_offset[l + 1] = t.mask_offset[l] + t.candidates[l] * cpu::nms_mask_words(t.candidates[l]);
    first += g.level_anchors[l];
  }
  return t;
}

// Keys that sort like the logits within their segment (image, level); the anchor index within the image as the
// value.
__global__ void sort_inputs_kernel(const float* __restrict__ objectness, LevelTable t, unsigned long long* __restrict__ keys,
                                   int32_t* __restrict__ values, int64_t anchors, int64_t n) {
  const int64_t segments = n / anchors * t.levels;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t image = i / anchors, a = i % anchors;
    int l = 0;
    while (l + 1 < t.levels && a >= t.first[l + 1]) ++l;
    keys[i] = segment_key(image * t.levels + l, segments, 32) | detection::ordered_bits(objectness[i]);
    values[i] = static_cast<int32_t>(a);
  }
}

// The leading candidates of every sorted segment, levels one after another per image.
__global__ void gather_top_kernel(const int32_t* __restrict__ sorted, LevelTable t, int64_t anchors,
                                  int64_t candidates, int64_t batch, int32_t* __restrict__ indices) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < batch * candidates;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t n = i / candidates, c = i % candidates;
    int l = 0;
    while (c >= t.first_candidate[l + 1]) ++l;
    indices[i] = sorted[n * anchors + t.first[l] + (c - t.first_candidate[l])];
  }
}

struct TopKBuffers {
  unsigned long long *keys_in, *keys_out;
  int32_t *values_in, *values_out;
  void* cub;
  size_t cub_bytes;
};

TopKBuffers carve_top_k(ScratchCarver& carver, const cpu::ProposalGeometry& g) {
  TopKBuffers b{};
  const auto n = static_cast<size_t>(g.batch * g.anchors);
  b.keys_in = carver.take<unsigned long long>(n), b.keys_out = carver.take<unsigned long long>(n);
  b.values_in = carver.take<int32_t>(n), b.values_out = carver.take<int32_t>(n);
  b.cub_bytes = radix_sort_pairs_bytes(n, sizeof(unsigned long long), sizeof(int32_t));  // no device query: plans size it
  b.cub = carver.take_bytes(b.cub_bytes);
  return b;
}

void run_top_k(const float* objectness, const cpu::ProposalGeometry& g, const TopKBuffers& b, int32_t* indices,
               cudaStream_t stream) {
  const int64_t n = g.batch * g.anchors, segments = g.batch * g.levels;
  const LevelTable t = level_table(g);
  sort_inputs_kernel<<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(objectness, t, b.keys_in,
                                                                                         b.values_in, g.anchors, n);
  SB_CUDA_CHECK(cudaGetLastError());
  radix_sort_within(b.cub, b.cub_bytes, "top_k_per_level", [&](void* temp, size_t& bytes) {
    return cub::DeviceRadixSort::SortPairsDescending(temp, bytes, b.keys_in, b.keys_out, b.values_in, b.values_out,
                                                     static_cast<int>(n), 0, 32 + bits_to_tell_apart(segments), stream);
  });
  const int64_t candidates = g.candidates();
  gather_top_kernel<<<detail::grid_stride_blocks(g.batch * candidates, kThreads), kThreads, 0, stream>>>(
      b.values_out, t, g.anchors, candidates, g.batch, indices);
  SB_CUDA_CHECK(cudaGetLastError());
}

// Decoded (or anchor) boxes of the candidates, clipped, and whether each is large enough to count.
__global__ void decode_kernel(const int32_t* __restrict__ indices, const float* __restrict__ deltas,
                              const float* __restrict__ anchors, int64_t anchor_count, int64_t candidates,
                              int64_t total, float height, float width, float min_size, bool decode,
                              float* __restrict__ boxes, uint8_t* __restrict__ valid) {
  const float unit[4] = {1, 1, 1, 1};
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t n = i / candidates, a = indices[i];
    float box[4];
    if (decode) {
      detection::decode_box(anchors + a * 4, deltas + (n * anchor_count + a) * 4, unit, box);
    } else {
      for (int k = 0; k < 4; ++k) box[k] = anchors[a * 4 + k];
    }
    detection::clip_box(box, height, width);
    for (int k = 0; k < 4; ++k) boxes[i * 4 + k] = box[k];
    valid[i] = detection::sub(box[2], box[0]) >= min_size && detection::sub(box[3], box[1]) >= min_size;
  }
}

// torchvision's nms_kernel: block (column tile, row tile) of one (image, level) segment; thread t compares box
// (row tile · 64 + t) with the column tile's boxes after it and writes one 64-bit word.
struct NmsSegments {
  int64_t first[cpu::kMaxAnchorLevels];        // first box of the level within an image's boxes
  int64_t count[cpu::kMaxAnchorLevels];
  int64_t mask_offset[cpu::kMaxAnchorLevels];  // first word of the level's mask within an image's mask
  int64_t boxes_per_image, words_per_image;
  int levels;
};

__global__ void nms_mask_kernel(const float* __restrict__ boxes, NmsSegments s, float threshold,
                                unsigned long long* __restrict__ mask) {
  const int64_t segment = blockIdx.z, n = segment / s.levels, l = segment % s.levels;
  const int64_t count = s.count[l], words = cpu::nms_mask_words(count);
  const int64_t row_tile = blockIdx.y, column_tile = blockIdx.x;
  if (row_tile * kNmsTile >= count || column_tile * kNmsTile >= count || column_tile < row_tile) return;
  const float* level_boxes = boxes + (n * s.boxes_per_image + s.first[l]) * 4;
  __shared__ float tile[kNmsTile * 4];
  const int64_t columns = min(int64_t{kNmsTile}, count - column_tile * kNmsTile);
  const int64_t rows = min(int64_t{kNmsTile}, count - row_tile * kNmsTile);
  if (threadIdx.x < columns) {
    for (int k = 0; k < 4; ++k) tile[threadIdx.x * 4 + k] = level_boxes[(column_tile * kNmsTile + threadIdx.x) * 4 + k];
  }
  __syncthreads();
  if (threadIdx.x >= rows) return;
  const int64_t i = row_tile * kNmsTile + threadIdx.x;
  const float* box = level_boxes + i * 4;
  unsigned long long bits = 0;
  for (int64_t j = row_tile == column_tile ? threadIdx.x + 1 : 0; j < columns; ++j) {
    if (detection::box_iou(box, tile + j * 4) > threshold) bits |= 1ull << j;
  }
  mask[n * s.words_per_image + s.mask_offset[l] + i * words + column_tile] = bits;
}

// The greedy pass of one (image, level) segment: box i is kept unless an earlier kept box's word sets its bit.
__global__ void nms_reduce_kernel(const unsigned long long* __restrict__ mask, const uint8_t* __restrict__ valid,
                                  NmsSegments s, uint8_t* __restrict__ keep) {
  extern __shared__ unsigned long long removed[];
  const int64_t segment = blockIdx.x, n = segment / s.levels, l = segment % s.levels;
  const int64_t count = s.count[l], words = cpu::nms_mask_words(count);
  const unsigned long long* rows = mask + n * s.words_per_image + s.mask_offset[l];
  const int64_t first = n * s.boxes_per_image + s.first[l];
  for (int64_t w = threadIdx.x; w < words; w += blockDim.x) removed[w] = 0;
  __syncthreads();
  for (int64_t i = 0; i < count; ++i) {
    const bool kept = !((removed[i / 64] >> (i % 64)) & 1) && (valid == nullptr || valid[first + i] != 0);
    __syncthreads();  // every thread has read removed[] before anyone updates it
    if (kept) {
      for (int64_t w = i / 64 + threadIdx.x; w < words; w += blockDim.x) removed[w] |= rows[i * words + w];
    }
    if (threadIdx.x == 0) keep[first + i] = kept;
    __syncthreads();
  }
}

NmsSegments nms_segments(const cpu::ProposalGeometry& g) {
  const LevelTable t = level_table(g);
  NmsSegments s{};
  s.levels = g.levels, s.boxes_per_image = g.candidates(), s.words_per_image = t.mask_offset[g.levels];
  for (int l = 0; l < g.levels; ++l) s.first[l] = t.first_candidate[l], s.count[l] = t.candidates[l], s.mask_offset[l] = t.mask_offset[l];
  return s;
}

void run_nms(const float* boxes, const uint8_t* valid, const NmsSegments& s, int64_t batch, int64_t largest,
             float threshold, unsigned long long* mask, uint8_t* keep, cudaStream_t stream) {
  const auto tiles = static_cast<unsigned>((largest + kNmsTile - 1) / kNmsTile);
  nms_mask_kernel<<<dim3(tiles, tiles, static_cast<unsigned>(batch * s.levels)), kNmsTile, 0, stream>>>(boxes, s, threshold, mask);
  SB_CUDA_CHECK(cudaGetLastError());
  const size_t shared = sizeof(unsigned long long) * static_cast<size_t>(cpu::nms_mask_words(largest));
  nms_reduce_kernel<<<static_cast<unsigned>(batch * s.levels), 64, shared, stream>>>(mask, valid, s, keep);
  SB_CUDA_CHECK(cudaGetLastError());
}

// Sort keys of the final order: survivors first, then by logit, descending; values are candidate positions.
__global__ void final_keys_kernel(const uint8_t* __restrict__ keep, const int32_t* __restrict__ indices,
                                  const float* __restrict__ objectness, int64_t anchors, int64_t candidates,
                                  int64_t total, unsigned long long* __restrict__ keys, int32_t* __restrict__ values,
                                  int64_t batch) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t n = i / candidates, c = i % candidates;
    keys[i] = segment_key(n, batch, 33) | (static_cast<unsigned long long>(keep[i]) << 32) |
              detection::ordered_bits(objectness[n * anchors + indices[i]]);
    values[i] = static_cast<int32_t>(c);
  }
}

__global__ void emit_proposals_kernel(const int32_t* __restrict__ order, const float* __restrict__ boxes,
                                      const int32_t* __restrict__ indices, int64_t candidates, int64_t post,
                                      int64_t total, float* __restrict__ proposals, int32_t* __restrict__ source) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t n = i / post, p = i % post, c = n * candidates + order[n * candidates + p];
    for (int k = 0; k < 4; ++k) proposals[i * 4 + k] = boxes[c * 4 + k];
    source[i] = indices[c];
  }
}

struct ProposalBuffers {
  TopKBuffers top_k;
  int32_t* indices;
  float* boxes;
  uint8_t *valid, *keep;
  unsigned long long *mask, *keys_in, *keys_out;
  int32_t *values_in, *values_out;
  void* cub;
  size_t cub_bytes;
};

ProposalBuffers carve_proposals(ScratchCarver& carver, const cpu::ProposalGeometry& g) {
  ProposalBuffers b{};
  b.top_k = carve_top_k(carver, g);
  const auto total = static_cast<size_t>(g.batch * g.candidates());
  b.indices = carver.take<int32_t>(total);
  b.boxes = carver.take<float>(total * 4);
  b.valid = carver.take<uint8_t>(total), b.keep = carver.take<uint8_t>(total);
  b.mask = carver.take<unsigned long long>(static_cast<size_t>(g.batch * nms_segments(g).words_per_image));
  b.keys_in = carver.take<unsigned long long>(total), b.keys_out = carver.take<unsigned long long>(total);
  b.values_in = carver.take<int32_t>(total), b.values_out = carver.take<int32_t>(total);
  b.cub_bytes = radix_sort_pairs_bytes(total, sizeof(unsigned long long), sizeof(int32_t));
  b.cub = carver.take_bytes(b.cub_bytes);
  return b;
}

}  // namespace

void anchor_grid(const cpu::AnchorLevel* levels, int count, float* anchors, cudaStream_t stream) {
  BaseAnchors b{};
  b.levels = count;
  const float ratios[cpu::kAnchorsPerCell] = {0.5f, 1.0f, 2.0f};
  for (int l = 0; l < count; ++l) {
    for (int a = 0; a < cpu::kAnchorsPerCell; ++a) {  // the CPU reference's arithmetic, on the host
      const float h_ratio = std::sqrt(ratios[a]), w_ratio = 1.0f / h_ratio;
      const float ws = w_ratio * levels[l].size, hs = h_ratio * levels[l].size;
      b.box[l][a][0] = std::nearbyint(-ws / 2), b.box[l][a][1] = std::nearbyint(-hs / 2);
      b.box[l][a][2] = std::nearbyint(ws / 2), b.box[l][a][3] = std::nearbyint(hs / 2);
    }
    b.first[l + 1] = b.first[l] + levels[l].anchors();
    b.width[l] = levels[l].width, b.stride_h[l] = levels[l].stride_h, b.stride_w[l] = levels[l].stride_w;
  }
  for (int l = count + 1; l <= cpu::kMaxAnchorLevels; ++l) b.first[l] = b.first[count];
  const int64_t n = b.first[count];
  if (n == 0) return;
  anchor_grid_kernel<<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(b, anchors, n);
  SB_CUDA_CHECK(cudaGetLastError());
}

size_t top_k_per_level_scratch_bytes(const cpu::ProposalGeometry& g) {
  ScratchCarver carver;
  carve_top_k(carver, g);
  return carver.bytes();
}

void top_k_per_level(const float* objectness, const cpu::ProposalGeometry& g, int32_t* indices, cudaStream_t stream) {
  ScratchLease scratch(stream, top_k_per_level_scratch_bytes(g));
  ScratchCarver carver(scratch.data());
  run_top_k(objectness, g, carve_top_k(carver, g), indices, stream);
}

void nms_bitmask(const float* boxes, int64_t count, float threshold, uint64_t* mask, cudaStream_t stream) {
  if (count == 0) return;
  NmsSegments s{};
  s.levels = 1, s.count[0] = count, s.boxes_per_image = count, s.words_per_image = count * cpu::nms_mask_words(count);
  const auto tiles = static_cast<unsigned>((count + kNmsTile - 1) / kNmsTile);
  SB_CUDA_CHECK(cudaMemsetAsync(mask, 0, sizeof(uint64_t) * s.words_per_image, stream));  // tiles below the diagonal
  nms_mask_kernel<<<dim3(tiles, tiles, 1), kNmsTile, 0, stream>>>(boxes, s, threshold,
                                                                   reinterpret_cast<unsigned long long*>(mask));
  SB_CUDA_CHECK(cudaGetLastError());
}

void nms_reduce(const uint64_t* mask, const uint8_t* valid, int64_t count, uint8_t* keep, cudaStream_t stream) {
  if (count == 0) return;
  NmsSegments s{};
  s.levels = 1, s.count[0] = count, s.boxes_per_image = count, s.words_per_image = count * cpu::nms_mask_words(count);
  const size_t shared = sizeof(unsigned long long) * static_cast<size_t>(cpu::nms_mask_words(count));
  nms_reduce_kernel<<<1, 64, shared, stream>>>(reinterpret_cast<const unsigned long long*>(mask), valid, s, keep);
  SB_CUDA_CHECK(cudaGetLastError());
}

size_t rpn_proposals_scratch_bytes(const cpu::ProposalGeometry& g) {
  ScratchCarver carver;
  carve_proposals(carver, g);
  return carver.bytes();
}

void rpn_proposals(const float* objectness, const float* deltas, const float* anchors, const cpu::ProposalGeometry& g,
                   float* proposals, int32_t* source, cudaStream_t stream) {
  ScratchLease scratch(stream, rpn_proposals_scratch_bytes(g));
  ScratchCarver carver(scratch.data());
  const ProposalBuffers b = carve_proposals(carver, g);
  const int64_t candidates = g.candidates(), total = g.batch * candidates;
  run_top_k(objectness, g, b.top_k, b.indices, stream);
  decode_kernel<<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(
      b.indices, deltas, anchors, g.anchors, candidates, total, g.image_height, g.image_width, g.min_size, g.decode,
      b.boxes, b.valid);
  SB_CUDA_CHECK(cudaGetLastError());
  int64_t largest = 0;
  for (int l = 0; l < g.levels; ++l) largest = std::max(largest, g.level_candidates(l));
  run_nms(b.boxes, b.valid, nms_segments(g), g.batch, largest, g.nms_threshold, b.mask, b.keep, stream);
  final_keys_kernel<<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(
      b.keep, b.indices, objectness, g.anchors, candidates, total, b.keys_in, b.values_in, g.batch);
  SB_CUDA_CHECK(cudaGetLastError());
  radix_sort_within(b.cub, b.cub_bytes, "rpn_proposals", [&](void* temp, size_t& bytes) {
    return cub::DeviceRadixSort::SortPairsDescending(temp, bytes, b.keys_in, b.keys_out, b.values_in, b.values_out,
                                                     static_cast<int>(total), 0, 33 + bits_to_tell_apart(g.batch),
                                                     stream);
  });
  const int64_t emitted = g.batch * g.post_nms_top_n;
  emit_proposals_kernel<<<detail::grid_stride_blocks(emitted, kThreads), kThreads, 0, stream>>>(
      b.values_out, b.boxes, b.indices, candidates, g.post_nms_top_n, emitted, proposals, source);
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sb::cuda

// The proposals family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_proposals_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"anchor_grid",
       [](CudaExecutor& e, const Node& n) {
         const std::vector<cpu::AnchorLevel> levels = detail::anchor_levels(n.attributes);
         cuda::anchor_grid(levels.data(), static_cast<int>(levels.size()), e.at<float>(n.outputs[0]), e.stream());
       }},
      {"rpn_proposals",
       [](CudaExecutor& e, const Node& n) {
         cuda::rpn_proposals(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<float>(n.inputs[2]),
                             detail::proposal_geometry(n.attributes), e.at<float>(n.outputs[0]),
                             e.at<int32_t>(n.outputs[1]), e.stream());
       },
       [](const Node& n) -> uint64_t {
         return cuda::rpn_proposals_scratch_bytes(detail::proposal_geometry(n.attributes));
       }},
  });
}

}  // namespace sb::cuda_binding
