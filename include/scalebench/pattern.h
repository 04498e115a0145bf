// Exact verification data for collectives (nccl-tests' idea, written for scalebench): every rank fills its
// input with small integers that depend on (rank, element), so the result of any collective is an exact
// integer in any reduction order, and a misplaced or unwritten element shows. Each reduce op has data of its
// own that keeps its result exact: small integers for sum, min and max; +-1 and +-2 for prod (powers of two
// multiply exactly, at most 2^15 even in fp16); for avg, inputs whose sum is a multiple of the rank count.
// One formula, used by the CPU loops and the CUDA kernels alike (host/device inline functions).
#pragma once

#include <cstdint>

#include "scalebench/dtype.h"
#include "scalebench/host_device.h"

namespace sb {

enum class CollectiveOp { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kAllToAll };
// In nccl-tests' order (its `-o all` runs sum, prod, max, min, avg).
enum class ReduceOp { kSum, kProd, kMax, kMin, kAvg };

enum class PatternRole {
  kInput,     // what `rank` contributes
  kExpected,  // what `rank` must hold after the collective
  kPoison,    // NaN (floats) or INT32_MIN: written into outputs so unwritten elements are caught
};

struct PatternSpec {
  PatternRole role = PatternRole::kInput;
  CollectiveOp op = CollectiveOp::kAllReduce;
  ReduceOp reduce = ReduceOp::kSum;
  int rank = 0;
  int nranks = 1;
  int root = 0;
  // Elements in one rank's block: the receive count of reduce_scatter, the send count of all_gather, the
  // per-peer count of all_to_all; the whole count for all_reduce and broadcast.
  uint64_t block = 0;
  // Index of the buffer's first element in the logical sequence (an in-place all_gather input sits at
  // rank * block inside the output buffer, but holds elements 0..block-1 of the rank's input).
  uint64_t first_element = 0;
  int amplitude = 8;  // inputs lie in [-amplitude, amplitude]
};

// Input amplitude that keeps every sum of `nranks` inputs exact for a type whose exact-integer limit is
// `exact_limit` (256 for bf16, 2048 for fp16, 2^24 for fp32).
inline int pattern_amplitude(int nranks, double exact_limit) {
  double a = exact_limit / (nranks > 0 ? nranks : 1);
  if (a > 8) a = 8;
  if (a < 1) a = 1;
  return static_cast<int>(a);
}

// The collectives whose result combines the ranks' inputs with a ReduceOp; the others ignore it.
SB_HOST_DEVICE inline bool pattern_reduces(CollectiveOp op) {
  return op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduceScatter;
}

// In [-amplitude, -1] or [1, amplitude], never 0: a one-element broadcast or gather of a 0 would expect an
// all-zero buffer, which an output never written by a zeroing bug matches too (8 ranks, root 7, element 0
// drew 0 when 0 was allowed).
SB_HOST_DEVICE inline int pattern_input_value(int rank, uint64_t element, int amplitude) {
  uint64_t h = element * 2654435761ull + static_cast<uint64_t>(rank) * 40503ull + 17ull;
  h ^= h >> 13;
  const int v = static_cast<int>(h % static_cast<uint64_t>(2 * amplitude)) - amplitude;  // -a .. a - 1
  return v < 0 ? v : v + 1;
}

// A well-mixed 64-bit hash of (salt, rank, element) for the prod and avg data, whose single bits are drawn.
SB_HOST_DEVICE inline uint64_t pattern_mix(uint64_t salt, int rank, uint64_t element) {
  uint64_t h = element * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(rank) * 0xC2B2AE3D27D4EB4Full + salt;
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return h;
}

// Largest power of two a product may reach: 2^15, below fp16's largest finite value (65504); bf16, fp32,
// fp64 and int32 (2^30 with its sign) hold more.
constexpr int kPatternMaxProductDoublings = 15;

// prod: +-1 or +-2. On element i only the ranks with (rank + i) mod nranks < 15 may draw 2, so every partial
// product in any order is +-2^k with k <= 15: exact in every type at any rank count.
SB_HOST_DEVICE inline int pattern_prod_input(int rank, int nranks, uint64_t element) {
  const uint64_t h = pattern_mix(0x5052ull, rank, element);
  const uint64_t n = static_cast<uint64_t>(nranks > 0 ? nranks : 1);
  const bool may_double = (static_cast<uint64_t>(rank) + element) % n < kPatternMaxProductDoublings;
  const int magnitude = may_double && ((h >> 40) & 1) ? 2 : 1;
  return ((h >> 41) & 1) ? -magnitude : magnitude;
}

// avg: rank r contributes c(i) + d((r + 1) mod n, i) - d(r, i). The d terms cancel in the sum, which is
// n * c(i), so the average c(i) is an integer at any rank count (sum then divide is exact, integer types
// included), and never 0. With h = max(1, amplitude / 2), |c| <= h and 0 <= d <= amplitude - h, so every
// input lies in [-amplitude, amplitude] and every partial sum stays as exact as the sums' data.
SB_HOST_DEVICE inline int pattern_avg_center(uint64_t element, int amplitude) {
  const int half = amplitude / 2 > 1 ? amplitude / 2 : 1;
  const int v = static_cast<int>(pattern_mix(0x4156ull, 0, element) % static_cast<uint64_t>(2 * half)) - half;
  return v < 0 ? v : v + 1;
}
SB_HOST_DEVICE inline int pattern_avg_offset(int rank, uint64_t element, int amplitude) {
  const int half = amplitude / 2 > 1 ? amplitude / 2 : 1;
  const int spread = amplitude - half > 0 ? amplitude - half : 0;
  return static_cast<int>(pattern_mix(0x4147ull, rank, element) % static_cast<uint64_t>(spread + 1));
}
SB_HOST_DEVICE inline int pattern_avg_input(int rank, int nranks, uint64_t element, int amplitude) {
  const int next = nranks > 0 ? (rank + 1) % nranks : 0;
  return pattern_avg_center(element, amplitude) + pattern_avg_offset(next, element, amplitude) -
         pattern_avg_offset(rank, element, amplitude);
}

// What `rank` contributes to element `element` of a reduction with `op`.
SB_HOST_DEVICE inline int pattern_reduce_input(ReduceOp op, int rank, int nranks, uint64_t element,
                                               int amplitude) {
  switch (op) {
    case ReduceOp::kProd: return pattern_prod_input(rank, nranks, element);
    case ReduceOp::kAvg: return pattern_avg_input(rank, nranks, element, amplitude);
    case ReduceOp::kSum:
    case ReduceOp::kMax:
    case ReduceOp::kMin: break;
  }
  return pattern_input_value(rank, element, amplitude);
}

// The reduction of every rank's contribution to `element`, in double (exact for this data).
SB_HOST_DEVICE inline double pattern_reduced_value(ReduceOp op, int nranks, uint64_t element, int amplitude) {
  double acc = pattern_reduce_input(op, 0, nranks, element, amplitude);
  for (int r = 1; r < nranks; ++r) {
    const double v = pattern_reduce_input(op, r, nranks, element, amplitude);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: acc += v; break;
      case ReduceOp::kProd: acc *= v; break;
      case ReduceOp::kMax: acc = v > acc ? v : acc; break;
      case ReduceOp::kMin: acc = v < acc ? v : acc; break;
    }
  }
  return op == ReduceOp::kAvg ? acc / (nranks > 0 ? nranks : 1) : acc;
}

SB_HOST_DEVICE inline double pattern_expected_value(const PatternSpec& s, uint64_t element) {
  const uint64_t i = element + s.first_element;
  switch (s.op) {
    case CollectiveOp::kAllReduce:
      return pattern_reduced_value(s.reduce, s.nranks, i, s.amplitude);
    case CollectiveOp::kReduceScatter:
      return pattern_reduced_value(s.reduce, s.nranks, static_cast<uint64_t>(s.rank) * s.block + i, s.amplitude);
    case CollectiveOp::kAllGather:
      return pattern_input_value(static_cast<int>(i / s.block), i % s.block, s.amplitude);
    case CollectiveOp::kBroadcast:
      return pattern_input_value(s.root, i, s.amplitude);
    case CollectiveOp::kAllToAll:
      return pattern_input_value(static_cast<int>(i / s.block),
                                 static_cast<uint64_t>(s.rank) * s.block + i % s.block, s.amplitude);
  }
  return 0;
}

// The value the pattern puts at `element` for roles kInput and kExpected.
SB_HOST_DEVICE inline double pattern_value(const PatternSpec& s, uint64_t element) {
  if (s.role == PatternRole::kInput) {
    return pattern_reduces(s.op) ? pattern_reduce_input(s.reduce, s.rank, s.nranks, element + s.first_element,
                                                        s.amplitude)
                                 : pattern_input_value(s.rank, element + s.first_element, s.amplitude);
  }
  return pattern_expected_value(s, element);
}

// Every result is exact where the library reduces as written (sum then divide for avg). NCCL averages
// floats by multiplying each input by 1/n before summing (PreMulSum), exact only when n is a power of two;
// otherwise results are compared within a relative tolerance of the type (`relative_tolerance`, 0: exact).
SB_HOST_DEVICE inline bool pattern_matches(double got, double expected, double relative_tolerance) {
  if (!(got == got)) return false;  // NaN: unwritten (poisoned) or corrupted
  double diff = got > expected ? got - expected : expected - got;
  double scale = expected < 0 ? -expected : expected;
  return diff <= relative_tolerance * (scale > 1 ? scale : 1);
}

// Relative tolerance for comparing a pattern result of `type`: 0 (exact) for sums and movement, and for
// averages the rounding of one division (half an ulp at the type's precision, doubled for safety).
inline double pattern_tolerance(DType type, const PatternSpec& spec) {
  const bool averages = spec.reduce == ReduceOp::kAvg &&
                        (spec.op == CollectiveOp::kAllReduce || spec.op == CollectiveOp::kReduceScatter);
  if (spec.role != PatternRole::kExpected || !averages) return 0;
  const bool power_of_two = spec.nranks > 0 && (spec.nranks & (spec.nranks - 1)) == 0;
  if (power_of_two) return 0;
  switch (type) {
    case DType::kBFloat16: return 1.0 / 128;   // 8 significant bits
    case DType::kFloat16: return 1.0 / 1024;   // 11 significant bits
    case DType::kFloat32: return 1e-6;         // 24 significant bits
    case DType::kFloat64: return 1e-14;
    case DType::kInt32: return 0;              // NCCL sums integers, then divides: exact for this data
    case DType::kUInt8: return 0;              // not a collective type
  }
  return 0;
}

}  // namespace sb
