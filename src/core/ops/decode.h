// The decode family: greedy generation's ops (argmax, write_at_counter, fill_from_counter, update_counter,
// end_sentences). None has a gradient; in-place ops list their destination as their output. Kernels:
// src/cpu/decode.cpp, src/cuda/decode.cu.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

// write_at_counter: src (outer, inner) into dst viewed as (outer, time, inner) at time counter + offset.
struct WriteAtCounterParams {
  int64_t outer = 0, time = 0, inner = 0, element_bytes = 0, offset = 0;
};
NodeAttributes encode(const WriteAtCounterParams& params);
WriteAtCounterParams write_at_counter_params(const Node& node);

// end_sentences: ids (rows, time) and lengths (rows); eos and pad are token ids.
struct EndSentencesParams {
  int64_t rows = 0, time = 0, eos = 0, pad = 0;
};
NodeAttributes encode(const EndSentencesParams& params);
EndSentencesParams end_sentences_params(const Node& node);

}  // namespace sb
