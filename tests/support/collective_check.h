// One verified run of a collective for the test suites (STYLE.md rule 4): inputs from the exact pattern
// (pattern.h), outputs poisoned first, every output element compared with the expected pattern, and one
// output element changed on purpose afterwards, which the comparison must catch. Shared by the unit suite
// (local backend) and the mpi suite; works on any Device.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "scalebench/communicator.h"
#include "scalebench/device.h"
#include "scalebench/pattern.h"
#include "src/cpu/element_access.h"

namespace sb::test {

enum class Placement { kOutOfPlace, kInPlace };

inline const char* placement_name(Placement placement) {
  return placement == Placement::kInPlace ? "in_place" : "out_of_place";
}

inline const char* collective_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kReduceScatter: return "reduce_scatter";
    case CollectiveOp::kAllGather: return "all_gather";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kAllToAll: return "all_to_all";
  }
  return "?";
}

struct CollectiveCase {
  CollectiveOp op = CollectiveOp::kAllReduce;
  ReduceOp reduce = ReduceOp::kSum;  // all_reduce and reduce_scatter only
  int root = 0;                      // broadcast only
  DType type = DType::kFloat32;
  Placement placement = Placement::kOutOfPlace;
  size_t block = 1;  // elements per rank block, as PatternSpec::block
};

// "all_reduce avg bf16 in_place block 7".
inline std::string describe_case(const CollectiveCase& c) {
  std::string text = collective_name(c.op);
  if (pattern_reduces(c.op)) {
    const char* const kNames[] = {"sum", "prod", "max", "min", "avg"};  // ReduceOp's order
    text += std::string(" ") + kNames[static_cast<int>(c.reduce)];
  }
  if (c.op == CollectiveOp::kBroadcast) text += " root " + std::to_string(c.root);
  return text + " " + dtype_name(c.type) + " " + placement_name(c.placement) + " block " +
         std::to_string(c.block);
}

// "rank 1: all_reduce avg bf16 in_place block 7", the prefix of a rank's failure messages.
inline std::string describe(const CollectiveCase& c, int rank) {
  return "rank " + std::to_string(rank) + ": " + describe_case(c);
}

struct CaseOutcome {
  uint64_t compared = 0;           // output elements checked on this rank
  uint64_t mismatches = 0;         // of those, how many differ from the expected pattern
  uint64_t nonzero_expected = 0;   // expected values that are not 0, so a zeroed output would be caught
  uint64_t caught_corruption = 0;  // mismatches after one output element was changed on purpose; must be 1
};

// Runs `c` once on `comm` and verifies this rank's output. Every rank of `comm` must call it with the same
// case. Throws what the communicator throws (UsageError for refused cases) before touching any peer.
inline CaseOutcome run_collective_case(Communicator& comm, Device& device, const CollectiveCase& c,
                                       StreamHandle stream) {
  const int nranks = comm.size();
  const int rank = comm.rank();
  const size_t element_bytes = dtype_size(c.type);
  const size_t ranks = static_cast<size_t>(nranks);

  PatternSpec input;
  input.role = PatternRole::kInput;
  input.op = c.op;
  input.reduce = c.reduce;
  input.rank = rank;
  input.nranks = nranks;
  input.root = c.root;
  input.block = c.block;
  input.amplitude = pattern_amplitude(nranks, dtype_exact_integer_limit(c.type));
  PatternSpec expected = input;
  expected.role = PatternRole::kExpected;
  PatternSpec poison = input;
  poison.role = PatternRole::kPoison;

  size_t send_count = c.block;  // elements
  size_t recv_count = c.block;
  if (c.op == CollectiveOp::kReduceScatter || c.op == CollectiveOp::kAllToAll) send_count = ranks * c.block;
  if (c.op == CollectiveOp::kAllGather || c.op == CollectiveOp::kAllToAll) recv_count = ranks * c.block;

  const bool in_place = c.placement == Placement::kInPlace;
  DeviceBuffer first(device, std::max(send_count, recv_count) * element_bytes);
  DeviceBuffer second = in_place ? DeviceBuffer() : DeviceBuffer(device, recv_count * element_bytes);
  void* send = first.data();
  void* recv = in_place ? first.data() : second.data();
  const size_t own_block = static_cast<size_t>(rank) * c.block * element_bytes;  // bytes
  if (in_place && c.op == CollectiveOp::kReduceScatter) recv = static_cast<char*>(send) + own_block;
  if (in_place && c.op == CollectiveOp::kAllGather) send = static_cast<char*>(recv) + own_block;

  // Poison first: an in-place all_gather's input lies inside its output, and a broadcast's non-root
  // ranks contribute nothing, so their in-place buffer starts poisoned.
  device.fill_pattern(recv, recv_count, c.type, poison, stream);
  if (!(in_place && c.op == CollectiveOp::kBroadcast && rank != c.root)) {
    device.fill_pattern(send, send_count, c.type, input, stream);
  }

  switch (c.op) {
    case CollectiveOp::kAllReduce: comm.all_reduce(send, recv, c.block, c.type, c.reduce, stream); break;
    case CollectiveOp::kReduceScatter:
      comm.reduce_scatter(send, recv, c.block, c.type, c.reduce, stream);
      break;
    case CollectiveOp::kAllGather: comm.all_gather(send, recv, c.block, c.type, stream); break;
    case CollectiveOp::kBroadcast: comm.broadcast(send, recv, c.block, c.type, c.root, stream); break;
    case CollectiveOp::kAllToAll: comm.all_to_all(send, recv, c.block, c.type, stream); break;
  }
  comm.wait(stream, describe(c, rank));

  CaseOutcome outcome;
  outcome.compared = recv_count;
  outcome.mismatches = device.count_mismatches(recv, recv_count, c.type, expected, stream);
  for (size_t i = 0; i < recv_count; ++i) {
    if (pattern_value(expected, i) != 0) ++outcome.nonzero_expected;
  }

  // Off by one at the middle element: the smallest change the exact comparison must still see.
  const size_t victim = recv_count / 2;
  unsigned char wrong[sizeof(double)] = {};
  cpu::store_element(wrong, 0, c.type, pattern_value(expected, victim) + 1);
  device.copy_from_host(static_cast<char*>(recv) + victim * element_bytes, wrong, element_bytes, stream);
  outcome.caught_corruption = device.count_mismatches(recv, recv_count, c.type, expected, stream);
  device.synchronize(stream);
  return outcome;
}

}  // namespace sb::test
