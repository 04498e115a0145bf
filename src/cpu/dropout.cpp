// CPU reference dropout (src/cpu/dropout.h). One Philox block serves four consecutive elements, the
// layout a CUDA thread handling a 16-byte vector of floats reproduces without extra draws.
#include "src/cpu/dropout.h"

#include <string>

#include "scalebench/error.h"
#include "scalebench/philox.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

void check_arguments(const char* op, int64_t n, float p) {
  if (n < 0) throw UsageError(std::string(op) + ": negative element count " + std::to_string(n));
  if (!(p >= 0.0f && p < 1.0f)) {
    throw UsageError(std::string(op) + ": dropout probability " + std::to_string(p) + " outside [0, 1)");
  }
}

}  // namespace

void dropout_forward(const float* x, float* y, uint8_t* mask, int64_t n, float p, uint64_t seed,
                     uint64_t offset) {
  check_arguments("dropout_forward", n, p);
  const float scale = 1.0f / (1.0f - p);
  const PhiloxKey key = philox_key(seed);
  for (int64_t first = 0; first < n; first += 4) {
    const uint64_t block = offset + static_cast<uint64_t>(first / 4);
    const PhiloxCounter bits = philox4x32(philox_counter(block), key);
    for (int64_t lane = 0; lane < 4 && first + lane < n; ++lane) {
      const int64_t i = first + lane;
      const bool keep = uniform_from_bits(bits.word[lane]) >= p;
      if (mask != nullptr) mask[i] = keep ? 1 : 0;
      y[i] = keep ? x[i] * scale : 0.0f;
    }
  }
}

void dropout_backward(const float* dy, const uint8_t* mask, float* dx, int64_t n, float p) {
  check_arguments("dropout_backward", n, p);
  const float scale = 1.0f / (1.0f - p);
  for (int64_t i = 0; i < n; ++i) dx[i] = mask[i] != 0 ? dy[i] * scale : 0.0f;
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_dropout_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"dropout",  // no mask kept: the backward pass is this node's dropout again (its backward rule)
       [](CpuExecutor& e, const Node& n) {
         cpu::dropout_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), nullptr, size_attr(n, "n"), float_attr(n, "p"),
                              e.seed(), e.dropout_offset(n));
       }},
  });
}

}  // namespace sb::detail
