// The temporary bytes CUB's DeviceRadixSort::SortPairs(Descending) needs for n pairs, computed on the host so
// that a memory plan (`scalebench plan`, maxbatch, the trainer's capacity check) never queries a device: CUB's own
// size query reads the current device's compute capability and fails without one (plan crashed on Mask R-CNN).
// A bound, from CUB's onesweep dispatch (cub/device/dispatch/dispatch_radix_sort.cuh, used for keys of 4 bytes or
// more on every architecture CUDA 13 builds for): a third key and value buffer (the input is kept), one 256-digit
// look-back row of 4-byte counters per tile (tiles hold at least 256 items), and per-pass bins and counters.
// Every sort checks CUB's own figure against it when it runs (radix_sort_within).
#pragma once

#include <cstddef>
#include <string>

#include "scalebench/error.h"
#include "src/cuda/cuda_check.h"

namespace sb::cuda {

constexpr size_t kRadixDigits = 256;            // onesweep's 8 radix bits
constexpr size_t kRadixSmallestTile = 256;      // items per tile, below every CUB onesweep policy
constexpr size_t kRadixFixedBytes = 64 << 10;   // bins and counters of up to 8 passes, and five 256-byte alignments

constexpr size_t radix_sort_pairs_bytes(size_t n, size_t key_bytes, size_t value_bytes) {
  const size_t tiles = (n + kRadixSmallestTile - 1) / kRadixSmallestTile;
  return n * (key_bytes + value_bytes) + tiles * kRadixDigits * 4 + kRadixFixedBytes;
}

// Runs `sort(temp, bytes)` (a CUB radix sort call) in `bound` bytes of `temp`, after CUB's own size query (a
// device is present then): a bound below CUB's figure is a bug here, reported as such.
template <typename Sort>
void radix_sort_within(void* temp, size_t bound, const char* what, Sort sort) {
  size_t needs = 0;
  SB_CUDA_CHECK(sort(nullptr, needs));
  if (needs > bound) {
    SB_FATAL(std::string(what) + ": CUB's radix sort needs " + std::to_string(needs) +
             " temporary bytes, above the host bound of " + std::to_string(bound) + " (src/cuda/radix_sort_bytes.h)");
  }
  size_t bytes = bound;
  SB_CUDA_CHECK(sort(temp, bytes));
}

}  // namespace sb::cuda
