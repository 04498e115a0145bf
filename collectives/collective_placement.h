// Where a collective's input and output live for a given size and placement, following NCCL's pointer
// rules (communicator.h), and the exact-data patterns its input must hold and its output must equal.
// Shared by the bandwidth sweep and the tests, so both exercise the same pointer arithmetic.
#pragma once

#include <cstdint>

#include "scalebench/communicator.h"

namespace sb {

struct PlacementRequest {
  CollectiveOp op;
  DType dtype;
  ReduceOp reduce;
  int rank;
  int nranks;
  int root;
  uint64_t count;  // elements in the full buffer (nccl-tests' "count"); a multiple of nranks where blocked
  int amplitude;   // of the input pattern
};

struct Placement {
  CollectiveOp op;
  DType dtype;
  ReduceOp reduce;
  int root;
  uint64_t count;        // full-buffer elements
  uint64_t block;        // per-rank block elements (count for all_reduce and broadcast)
  const void* send;
  void* recv;
  void* input;           // where the input pattern is written (inside recv for in-place all_gather)
  uint64_t input_count;
  void* output;          // where the result is checked (a slice of send for in-place reduce_scatter)
  uint64_t output_count;
  PatternSpec input_spec;
  PatternSpec expected_spec;
  // Poisoning the output catches unwritten elements; it is impossible where the output is the input
  // (in-place all_reduce, reduce_scatter, broadcast, alltoall). In-place all_gather poisons the whole
  // buffer first and then writes its own block.
  bool poison_before_input;
  bool poison_after_input;
};

// `first` and `second` each hold at least count * dtype_size bytes.
Placement place_collective(const PlacementRequest& request, bool in_place, void* first, void* second);

// Enqueues the placed collective on `stream`.
void issue_collective(Communicator& communicator, const Placement& placement, StreamHandle stream);

}  // namespace sb
