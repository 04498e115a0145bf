// Exact verification data for collectives (nccl-tests' idea, written for scalebench): every rank fills its
// input with small integers that depend on (rank, element), so the result of any collective is an exact
// integer in any reduction order, and a misplaced or unwritten element shows. One formula, used by the CPU
// loops and the CUDA kernels alike (host/device inline functions).
#pragma once

#include <cstdint>

#include "scalebench/dtype.h"
#include "scalebench/host_device.h"

namespace sb {

enum class CollectiveOp { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kAllToAll };
enum class ReduceOp { kSum, kAvg };

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

// In [-amplitude, -1] or [1, amplitude], never 0: a one-element broadcast or gather of a 0 would expect an
// all-zero buffer, which an output never written by a zeroing bug matches too (8 ranks, root 7, element 0
// drew 0 when 0 was allowed).
SB_HOST_DEVICE inline int pattern_input_value(int rank, uint64_t element, int amplitude) {
  uint64_t h = element * 2654435761ull + static_cast<uint64_t>(rank) * 40503ull + 17ull;
  h ^= h >> 13;
  const int v = static_cast<int>(h % static_cast<uint64_t>(2 * amplitude)) - amplitude;  // -a .. a - 1
  return v < 0 ? v : v + 1;
}

SB_HOST_DEVICE inline double pattern_expected_value(const PatternSpec& s, uint64_t element) {
  const uint64_t i = element + s.first_element;
  double sum = 0;
  switch (s.op) {
    case CollectiveOp::kAllReduce:
      for (int r = 0; r < s.nranks; ++r) sum += pattern_input_value(r, i, s.amplitude);
      return s.reduce == ReduceOp::kAvg ? sum / s.nranks : sum;
    case CollectiveOp::kReduceScatter:
      for (int r = 0; r < s.nranks; ++r)
        sum += pattern_input_value(r, static_cast<uint64_t>(s.rank) * s.block + i, s.amplitude);
      return s.reduce == ReduceOp::kAvg ? sum / s.nranks : sum;
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
    return pattern_input_value(s.rank, element + s.first_element, s.amplitude);
  }
  return pattern_expected_value(s, element);
}

// Sums are exact; an average divides by nranks, which rounds unless nranks is a power of two, so it is
// compared within a relative tolerance of the type (`relative_tolerance`, 0 for sums).
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
  switch (type) {
    case DType::kBFloat16: return 1.0 / 128;   // 8 significant bits
    case DType::kFloat16: return 1.0 / 1024;   // 11 significant bits
    case DType::kFloat32: return 1e-6;         // 24 significant bits
    case DType::kFloat64: return 1e-14;
    case DType::kInt32: return 0;              // averages of integers are refused before they run
    case DType::kUInt8: return 0;              // not a collective type
  }
  return 0;
}

}  // namespace sb
