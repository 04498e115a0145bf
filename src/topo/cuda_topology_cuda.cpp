// What the CUDA runtime knows about the GPUs this process can see: name, memory, bus id, compute
// capability, and per pair cudaDeviceCanAccessPeer and cudaDevP2PAttrPerformanceRank. Built only with
// CUDA (cuda_topology_without_cuda.cpp is the other half). No driver or no GPU is not an error here:
// cudaGetDeviceCount fails and the node simply has zero GPUs.
#include <cuda_runtime_api.h>

#include <string>

#include "src/topo/topology_detail.h"

namespace sb {
namespace detail {
namespace {

std::string describe(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}

// Only non-sticky errors reach here (no kernel runs), so clearing the last error is enough.
void forget_error() { (void)cudaGetLastError(); }

}  // namespace

void add_cuda_facts(NodeTopology& node) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    forget_error();
    node.cuda_note = "no CUDA device visible (cudaGetDeviceCount: " + describe(status) + ")";
    return;
  }
  if (count == 0) {
    node.cuda_note = "no CUDA device visible";
    return;
  }
  for (int i = 0; i < count; ++i) {
    GpuInfo gpu;
    gpu.index = i;
    cudaDeviceProp properties{};
    status = cudaGetDeviceProperties(&properties, i);
    if (status == cudaSuccess) {
      gpu.name = properties.name;
      gpu.total_memory_bytes = properties.totalGlobalMem;
      gpu.compute_capability = properties.major * 10 + properties.minor;
    } else {
      forget_error();
      if (!node.cuda_note.empty()) node.cuda_note += "; ";
      node.cuda_note += "GPU" + std::to_string(i) + ": cudaGetDeviceProperties: " + describe(status);
    }
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, i) == cudaSuccess) {
      gpu.bus_id = normalize_bus_id(bus_id);
    } else {
      forget_error();
    }
    node.gpus.push_back(gpu);
  }
  for (int a = 0; a < count; ++a) {
    for (int b = a + 1; b < count; ++b) {
      GpuPair pair;
      pair.gpu_a = a;
      pair.gpu_b = b;
      int value = 0;
      if (cudaDeviceCanAccessPeer(&value, a, b) == cudaSuccess) {
        pair.cuda_peer_access = value != 0;
      } else {
        forget_error();
      }
      if (cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrPerformanceRank, a, b) == cudaSuccess) {
        pair.cuda_performance_rank = value;
      } else {
        forget_error();
      }
      // Until NVML says otherwise, peer access means both reads and writes work.
      pair.p2p_read = pair.p2p_write = pair.cuda_peer_access;
      node.pairs.push_back(pair);
    }
  }
}

}  // namespace detail
}  // namespace sb
