// Pointer arithmetic and patterns of each collective (collectives/collective_placement.h).
#include "collectives/collective_placement.h"

namespace sb {
namespace {

char* offset(void* base, uint64_t elements, DType type) {
  return static_cast<char*>(base) + elements * dtype_size(type);
}

}  // namespace

Placement place_collective(const PlacementRequest& r, bool in_place, void* first, void* second) {
  Placement p{};
  p.op = r.op;
  p.dtype = r.dtype;
  p.reduce = r.reduce;
  p.root = r.root;
  p.count = r.count;
  const bool blocked = r.op == CollectiveOp::kReduceScatter || r.op == CollectiveOp::kAllGather ||
                       r.op == CollectiveOp::kAllToAll;
  p.block = blocked ? r.count / static_cast<uint64_t>(r.nranks) : r.count;

  PatternSpec spec;
  spec.op = r.op;
  spec.reduce = r.reduce;
  spec.rank = r.rank;
  spec.nranks = r.nranks;
  spec.root = r.root;
  spec.block = p.block;
  spec.amplitude = r.amplitude;
  p.input_spec = spec;
  p.input_spec.role = PatternRole::kInput;
  p.expected_spec = spec;
  p.expected_spec.role = PatternRole::kExpected;

  switch (r.op) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kAllToAll:
      p.send = first;
      p.recv = in_place ? first : second;
      p.input = first;
      p.input_count = r.count;
      p.output = p.recv;
      p.output_count = r.count;
      break;
    case CollectiveOp::kReduceScatter:
      p.send = first;
      p.recv = in_place ? offset(first, static_cast<uint64_t>(r.rank) * p.block, r.dtype) : second;
      p.input = first;
      p.input_count = r.count;
      p.output = p.recv;
      p.output_count = p.block;
      break;
    case CollectiveOp::kAllGather:
      p.recv = second;
      p.send = in_place ? offset(second, static_cast<uint64_t>(r.rank) * p.block, r.dtype) : first;
      p.input = const_cast<void*>(p.send);
      p.input_count = p.block;
      p.output = second;
      p.output_count = r.count;
      break;
  }
  p.poison_after_input = !in_place;
  p.poison_before_input = in_place && r.op == CollectiveOp::kAllGather;
  return p;
}

void issue_collective(Communicator& communicator, const Placement& p, StreamHandle stream) {
  switch (p.op) {
    case CollectiveOp::kAllReduce:
      return communicator.all_reduce(p.send, p.recv, p.count, p.dtype, p.reduce, stream);
    case CollectiveOp::kReduceScatter:
      return communicator.reduce_scatter(p.send, p.recv, p.block, p.dtype, p.reduce, stream);
    case CollectiveOp::kAllGather:
      return communicator.all_gather(p.send, p.recv, p.block, p.dtype, stream);
    case CollectiveOp::kBroadcast:
      return communicator.broadcast(p.send, p.recv, p.count, p.dtype, p.root, stream);
    case CollectiveOp::kAllToAll:
      return communicator.all_to_all(p.send, p.recv, p.block, p.dtype, stream);
  }
}

}  // namespace sb
