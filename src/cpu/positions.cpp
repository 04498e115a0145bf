// Sinusoidal positions and position ids (positions.h). fairseq builds the table in fp32 torch ops:
//   exponent = float(i) * float(-log(10000) / (half - 1)); f = expf(exponent); angle = float(p) * f;
// each step is rounded to fp32 here at the same place, with exp/sin/cos evaluated in fp64 of the fp32 input.
#include "src/cpu/positions.h"

#include <cmath>
#include <limits>
#include <string>

#include "scalebench/error.h"

namespace sb::cpu {

void sinusoidal_positions(float* table, int64_t positions, int64_t dim, int64_t padding_idx) {
  SB_CHECK(positions >= 0, "sinusoidal_positions: positions must be >= 0");
  SB_CHECK(dim >= 4, "sinusoidal_positions: dim must be >= 4 (the frequency spacing divides by dim / 2 - 1)");
  SB_CHECK(padding_idx == kNoPaddingIdx || (padding_idx >= 0 && padding_idx < positions),
           "sinusoidal_positions: padding_idx " + std::to_string(padding_idx) + " outside [0, " +
               std::to_string(positions) + ") and not kNoPaddingIdx");
  const int64_t half = dim / 2;
  const float neg_step = static_cast<float>(-std::log(10000.0) / static_cast<double>(half - 1));
  for (int64_t i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(i) * neg_step;
    const float frequency = static_cast<float>(std::exp(static_cast<double>(exponent)));
    for (int64_t p = 0; p < positions; ++p) {
      const float angle = static_cast<float>(p) * frequency;
      table[p * dim + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
      table[p * dim + half + i] = static_cast<float>(std::cos(static_cast<double>(angle)));
    }
  }
  if (dim % 2 == 1) {
    for (int64_t p = 0; p < positions; ++p) table[p * dim + dim - 1] = 0.0f;
  }
  if (padding_idx != kNoPaddingIdx) {
    for (int64_t c = 0; c < dim; ++c) table[padding_idx * dim + c] = 0.0f;
  }
}

namespace {

void check_position_range(const char* op, int64_t batch, int64_t seq_len, int64_t padding_idx) {
  SB_CHECK(batch >= 0 && seq_len >= 0, std::string(op) + ": batch and seq_len must be >= 0");
  SB_CHECK(padding_idx >= 0 && padding_idx + 1 + seq_len <= std::numeric_limits<int32_t>::max(),
           std::string(op) + ": padding_idx must be >= 0 and padding_idx + 1 + seq_len fit in int32");
}

}  // namespace

void make_positions(const int32_t* tokens, int32_t* positions, int64_t batch, int64_t seq_len,
                    int64_t padding_idx) {
  check_position_range("make_positions", batch, seq_len, padding_idx);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t seen = 0;  // non-padding tokens so far: fairseq's cumsum of the mask
    for (int64_t t = 0; t < seq_len; ++t) {
      const int64_t index = b * seq_len + t;
      if (tokens[index] == padding_idx) {
        positions[index] = static_cast<int32_t>(padding_idx);
      } else {
        positions[index] = static_cast<int32_t>(padding_idx + 1 + seen++);
      }
    }
  }
}

void positions_from_lengths(const int32_t* lengths, int32_t* positions, int64_t batch, int64_t seq_len,
                            int64_t padding_idx) {
  check_position_range("positions_from_lengths", batch, seq_len, padding_idx);
  for (int64_t b = 0; b < batch; ++b) {
    SB_CHECK(lengths[b] >= 0 && lengths[b] <= seq_len,
             "positions_from_lengths: lengths[" + std::to_string(b) + "] = " + std::to_string(lengths[b]) +
                 " outside [0, seq_len = " + std::to_string(seq_len) + "]");
    for (int64_t t = 0; t < seq_len; ++t) {
      positions[b * seq_len + t] = static_cast<int32_t>(t < lengths[b] ? padding_idx + 1 + t : padding_idx);
    }
  }
}

}  // namespace sb::cpu
