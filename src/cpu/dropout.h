// CPU reference dropout (sb::cpu) on Philox-4x32-10 (include/scalebench/philox.h): the mask is a pure
// function of (seed, offset, element index), so the CUDA kernel draws the same mask bit for bit and a step
// can be replayed. Tests: tests/unit/test_cpu_dropout.cpp (suite CpuDropout).
#pragma once

#include <cstdint>

namespace sb::cpu {

// Element -> random number mapping (the contract the CUDA kernel must reproduce exactly):
//   block    = offset + i / 4                        uint64, integer division, wraps modulo 2^64
//   counter  = { low32(block), high32(block), 0, 0 } philox_counter(block)
//   key      = { low32(seed), high32(seed) }         philox_key(seed)
//   bits     = philox4x32(counter, key).word[i % 4]
//   u        = (bits >> 8) * 2^-24                    uniform_from_bits(bits), exact, in [0, 1)
//   keep     = u >= p                                 (p as the float passed in)
//   scale    = 1.0f / (1.0f - p)                      one IEEE fp32 division (no fast-math reciprocal)
//   y[i]     = keep ? x[i] * scale : 0.0f            one fp32 multiplication
//   mask[i]  = keep ? 1 : 0
// A call over n elements uses counter blocks [offset, offset + ceil(n / 4)). Two dropout calls under the
// same seed draw independent masks only if their block ranges do not overlap: the engine advances the
// offset by at least ceil(n / 4) per call (and per step). p == 0 keeps everything and y == x exactly.
// Throws UsageError unless 0 <= p < 1 and n >= 0. y may be the same array as x.
// mask may be nullptr: the engine keeps no mask, its backward pass draws the same one again (dropout of dy
// with the forward's seed and offset is exactly dy masked and scaled).
void dropout_forward(const float* x, float* y, uint8_t* mask, int64_t n, float p, uint64_t seed,
                     uint64_t offset);

// dx = mask ? dy * scale : 0, with the forward's scale (1.0f / (1.0f - p)) and its saved mask; no random
// numbers are drawn. Overwrites dx (may be the same array as dy).
void dropout_backward(const float* dy, const uint8_t* mask, float* dx, int64_t n, float p);

}  // namespace sb::cpu
