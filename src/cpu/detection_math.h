// Box arithmetic shared by the CPU references and the CUDA kernels of Mask R-CNN's detection ops
// (src/cpu/detection.h, src/cuda/detection.h): IoU, the box coder, the FPN level of a RoI, the ellipse mask test
// and the counter-based random keys of the samplers. One inline definition for both compilers, so both devices
// take the same discrete decisions (NMS, matching, sampling, rasterised masks). Products and sums go through
// mul/add (IEEE round-to-nearest on the device: nvcc would otherwise fuse a*b+c into an FMA that the host does
// not), so IoUs and mask tests are bit-identical; exp/log/log2/sqrt may differ by an ulp or two between the
// device's and the C library's implementations, which only decoded and encoded boxes and level boundaries see.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "scalebench/host_device.h"

namespace sb::detection {

SB_HOST_DEVICE inline float mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
SB_HOST_DEVICE inline float add(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
SB_HOST_DEVICE inline float sub(float a, float b) { return add(a, -b); }
SB_HOST_DEVICE inline float fmin2(float a, float b) { return a < b ? a : b; }
SB_HOST_DEVICE inline float fmax2(float a, float b) { return a > b ? a : b; }

// Boxes are (x1, y1, x2, y2) in pixels, torchvision's convention: width = x2 - x1 (no +1).
SB_HOST_DEVICE inline float box_area(const float* b) { return mul(sub(b[2], b[0]), sub(b[3], b[1])); }

// Intersection over union as torchvision's nms kernel computes it (0 when both boxes are empty).
SB_HOST_DEVICE inline float box_iou(const float* a, const float* b) {
  const float w = fmax2(sub(fmin2(a[2], b[2]), fmax2(a[0], b[0])), 0.0f);
  const float h = fmax2(sub(fmin2(a[3], b[3]), fmax2(a[1], b[1])), 0.0f);
  const float inter = mul(w, h);
  const float unite = sub(add(box_area(a), box_area(b)), inter);
  return unite > 0.0f ? inter / unite : 0.0f;
}

// torchvision's BoxCoder: deltas (dx, dy, dw, dh) relative to a reference box, divided by `weights` (1, 1, 1, 1)
// for the RPN, (10, 10, 5, 5) for the box head; dw and dh clamped at log(1000 / 16) before exp.
constexpr float kBoxDeltaClamp = 4.135166556742356f;  // log(1000 / 16)

SB_HOST_DEVICE inline void decode_box(const float* reference, const float* delta, const float* weights, float* out) {
  const float w = sub(reference[2], reference[0]), h = sub(reference[3], reference[1]);
  const float cx = add(reference[0], mul(0.5f, w)), cy = add(reference[1], mul(0.5f, h));
  const float dx = delta[0] / weights[0], dy = delta[1] / weights[1];
  const float dw = fmin2(delta[2] / weights[2], kBoxDeltaClamp), dh = fmin2(delta[3] / weights[3], kBoxDeltaClamp);
  const float pcx = add(mul(dx, w), cx), pcy = add(mul(dy, h), cy);
  const float pw = mul(expf(dw), w), ph = mul(expf(dh), h);
  out[0] = sub(pcx, mul(0.5f, pw));
  out[1] = sub(pcy, mul(0.5f, ph));
  out[2] = add(pcx, mul(0.5f, pw));
  out[3] = add(pcy, mul(0.5f, ph));
}

// The deltas that decode_box turns `reference` into `target` with (the regression targets).
SB_HOST_DEVICE inline void encode_box(const float* reference, const float* target, const float* weights, float* out) {
  const float w = sub(reference[2], reference[0]), h = sub(reference[3], reference[1]);
  const float cx = add(reference[0], mul(0.5f, w)), cy = add(reference[1], mul(0.5f, h));
  const float tw = sub(target[2], target[0]), th = sub(target[3], target[1]);
  const float tcx = add(target[0], mul(0.5f, tw)), tcy = add(target[1], mul(0.5f, th));
  out[0] = mul(weights[0], sub(tcx, cx) / w);
  out[1] = mul(weights[1], sub(tcy, cy) / h);
  out[2] = mul(weights[2], logf(tw / w));
  out[3] = mul(weights[3], logf(th / h));
}

SB_HOST_DEVICE inline void clip_box(float* box, float height, float width) {
  box[0] = fmin2(fmax2(box[0], 0.0f), width);
  box[1] = fmin2(fmax2(box[1], 0.0f), height);
  box[2] = fmin2(fmax2(box[2], 0.0f), width);
  box[3] = fmin2(fmax2(box[3], 0.0f), height);
}

// torchvision's LevelMapper (FPN paper eq. 1): k = floor(4 + log2(sqrt(area) / 224 + 1e-6)) clamped to
// [first, last]; returns k - first, the index among the pooled levels.
SB_HOST_DEVICE inline int fpn_level(const float* box, int first, int last) {
  const float k = floorf(4.0f + log2f(sqrtf(box_area(box)) / 224.0f + 1e-6f));
  const int level = static_cast<int>(fmin2(fmax2(k, static_cast<float>(first)), static_cast<float>(last)));
  return level - first;
}

// The synthetic instance mask of a ground-truth box: the ellipse inscribed in it. Whether the point (x, y) lies
// inside (on the boundary counts).
SB_HOST_DEVICE inline bool inside_ellipse(const float* box, float x, float y) {
  const float rx = mul(0.5f, sub(box[2], box[0])), ry = mul(0.5f, sub(box[3], box[1]));
  if (!(rx > 0.0f) || !(ry > 0.0f)) return false;
  const float u = sub(x, add(box[0], rx)) / rx, v = sub(y, add(box[1], ry)) / ry;
  return add(mul(u, u), mul(v, v)) <= 1.0f;
}

// 32 random bits for element `index` of sampler `stream` at training step `step` of dataset sample `sample`:
// splitmix64 rounds over the four. Keyed by the sample, not the rank, so N ranks x b images draw what one rank
// x N b images draws (the --check invariant); fresh every step, replayed by the same step.
SB_HOST_DEVICE inline uint32_t random_bits(uint64_t sample, uint64_t step, uint64_t index, uint32_t stream) {
  auto mix = [](uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  return static_cast<uint32_t>(mix(mix(mix(sample ^ (uint64_t{stream} << 56)) ^ step) ^ index) >> 32);
}

// A float's bits as an unsigned key that sorts like the float (negative values flipped): for radix sorts.
SB_HOST_DEVICE inline uint32_t ordered_bits(float value) {
#ifdef __CUDA_ARCH__
  const uint32_t bits = __float_as_uint(value);
#else
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
#endif
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

}  // namespace sb::detection

namespace sb::detection {

// One RoIAlign sampling point's four bilinear neighbours and weights, as torchvision's roi_align kernels
// (bilinear_interpolate / bilinear_interpolate_gradient): a point more than one pixel outside the map has no
// neighbours (empty); coordinates below 0 are clamped to 0 and a point past the last row or column reads it.
struct BilinearPoint {
  bool empty;
  int64_t y_low, x_low, y_high, x_high;
  float w1, w2, w3, w4;  // (low, low), (low, high), (high, low), (high, high) as (y, x)
};

SB_HOST_DEVICE inline BilinearPoint bilinear_point(float y, float x, int64_t height, int64_t width) {
  BilinearPoint p{};
  if (y < -1.0f || y > static_cast<float>(height) || x < -1.0f || x > static_cast<float>(width)) {
    p.empty = true;
    return p;
  }
  p.empty = false;
  y = fmax2(y, 0.0f);
  x = fmax2(x, 0.0f);
  p.y_low = static_cast<int64_t>(y);
  p.x_low = static_cast<int64_t>(x);
  if (p.y_low >= height - 1) {
    p.y_high = p.y_low = height - 1;
    y = static_cast<float>(p.y_low);
  } else {
    p.y_high = p.y_low + 1;
  }
  if (p.x_low >= width - 1) {
    p.x_high = p.x_low = width - 1;
    x = static_cast<float>(p.x_low);
  } else {
    p.x_high = p.x_low + 1;
  }
  const float ly = sub(y, static_cast<float>(p.y_low)), lx = sub(x, static_cast<float>(p.x_low));
  const float hy = sub(1.0f, ly), hx = sub(1.0f, lx);
  p.w1 = mul(hy, hx);
  p.w2 = mul(hy, lx);
  p.w3 = mul(ly, hx);
  p.w4 = mul(ly, lx);
  return p;
}

// The pooling window of one RoI on one level (torchvision roi_align): start, bin size and samples per bin.
struct RoiWindow {
  float start_y, start_x, bin_h, bin_w;
  int grid_h, grid_w;
};

SB_HOST_DEVICE inline RoiWindow roi_window(const float* box, float scale, int64_t output_size, int sampling_ratio,
                                           bool aligned) {
  const float offset = aligned ? 0.5f : 0.0f;
  RoiWindow w;
  w.start_x = sub(mul(box[0], scale), offset);
  w.start_y = sub(mul(box[1], scale), offset);
  float roi_w = sub(sub(mul(box[2], scale), offset), w.start_x);
  float roi_h = sub(sub(mul(box[3], scale), offset), w.start_y);
  if (!aligned) {  // torchvision's legacy behaviour: a RoI is at least one pixel
    roi_w = fmax2(roi_w, 1.0f);
    roi_h = fmax2(roi_h, 1.0f);
  }
  w.bin_h = roi_h / static_cast<float>(output_size);
  w.bin_w = roi_w / static_cast<float>(output_size);
  w.grid_h = sampling_ratio > 0 ? sampling_ratio : static_cast<int>(ceilf(roi_h / static_cast<float>(output_size)));
  w.grid_w = sampling_ratio > 0 ? sampling_ratio : static_cast<int>(ceilf(roi_w / static_cast<float>(output_size)));
  return w;
}

// The coordinate of sample i of `grid` in bin `bin` of a window axis.
SB_HOST_DEVICE inline float sample_coordinate(float start, float bin_size, int64_t bin, int i, int grid) {
  return add(add(start, mul(static_cast<float>(bin), bin_size)),
             mul(static_cast<float>(i) + 0.5f, bin_size / static_cast<float>(grid)));
}

}  // namespace sb::detection
