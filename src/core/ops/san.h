// The SAN family (src/core/ops/san.cpp): the params of the answer module's nodes (src/cpu/san.h says what each op
// computes). Each forward node also carries "matmul_flops", derived from its sizes by encode; the backward nodes
// copy the forward's attributes with matmul_flops doubled. san_merge's nodes carry two sizes ("batch",
// "hidden") and have no struct.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

struct GruCellParams {
  int64_t batch = 0, input_size = 0, hidden_size = 0;
};
NodeAttributes encode(const GruCellParams& params);
GruCellParams gru_cell_params(const Node& node);

// memory (batch, length, hidden).
struct SanSelfAttentionParams {
  int64_t batch = 0, length = 0, hidden = 0;
};
NodeAttributes encode(const SanSelfAttentionParams& params);
SanSelfAttentionParams san_self_attention_params(const Node& node);

// keys and values (batch, length, memory_hidden), state (batch, state_hidden).
struct SanBilinearAttentionParams {
  int64_t batch = 0, length = 0, memory_hidden = 0, state_hidden = 0;
};
NodeAttributes encode(const SanBilinearAttentionParams& params);
SanBilinearAttentionParams san_bilinear_attention_params(const Node& node);

// The (batch, turns) keep mask of the turns' dropout: "n" uniforms (turns + 1 per row) from the step's Philox
// range at "block_offset"; "p" the drop probability (0 when dropout is off).
struct SanTurnMaskParams {
  int64_t batch = 0, turns = 0;
  double drop_p = 0;
  int64_t n = 0, block_offset = 0;
};
NodeAttributes encode(const SanTurnMaskParams& params);
SanTurnMaskParams san_turn_mask_params(const Node& node);

// turn_logits (turns, batch, classes).
struct SanTurnAverageParams {
  int64_t turns = 0, batch = 0, classes = 0;
};
NodeAttributes encode(const SanTurnAverageParams& params);
SanTurnAverageParams san_turn_average_params(const Node& node);

}  // namespace sb
