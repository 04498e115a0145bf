// --check with a generation inside the step (unsupmt's back-translation, graph.h StepPart::generation): the
// greedy argmax of N ranks × b and of one rank × N·b sees logits that differ by rounding (other GEMM shapes, and
// weights that part by rounding after the first update), so on a nearly tied pair of words the two runs may
// pick different words, and from there train on different sentences: a difference that says nothing about
// data parallelism, yet large. The check therefore makes the reference follow the N ranks' words and verifies
// every word it follows: the N ranks record what they generated; the reference generates token by token and,
// where its argmax differs from the recorded word, requires the two words' logits to be within the check's
// tolerance × the row's largest |logit| (a near tie) before it writes the recorded word in and goes on. A wrong
// generation on either side (a cache, a position, a mask) is a large margin, not a tie, and fails the check.
#pragma once

#include <cstdint>
#include <vector>

#include "scalebench/executor.h"

namespace sb {

// The tensors a generation part works with, found from its nodes: the argmax (logits in, words out), the
// write_at_counter that stores its words into the generated ids (B, T) at counter + offset, the copy that
// feeds them back, and the lengths end_sentences applies later (words at or past length - 1 are replaced).
struct GenerationTensors {
  size_t part = 0;  // index in the sub-step's parts
  TensorId logits = kNoTensor, words = kNoTensor, ids = kNoTensor, fed_back = kNoTensor, counter = kNoTensor,
           lengths = kNoTensor;
  int64_t offset = 0;
};
// Null when sub-step `k` has no repeated generation part.
bool find_generation(const Graph& graph, size_t k, GenerationTensors& out);

// What the replay saw.
struct ReplayCount {
  int64_t words = 0, flips = 0;
  double worst_margin = 0;  // largest (logit of own word - logit of recorded word) / max |logit| of the row
};

// Runs sub-step k's parts on `executor` (the reference), following `recorded` (B, T generated ids of the N ranks,
// rows in rank order) word by word as described above; adds to `count`.
void replay_generation(Executor& executor, size_t k, const GenerationTensors& g, const std::vector<int32_t>& recorded,
                       ReplayCount& count);

}  // namespace sb
