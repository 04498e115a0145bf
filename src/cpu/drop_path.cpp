// Drop-path CPU reference (drop_path.h).
#include "src/cpu/drop_path.h"

#include "scalebench/error.h"
#include "scalebench/philox.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {

void drop_path_forward(const float* x, float* y, int64_t batch, int64_t per_sample, float p, uint64_t seed,
                       uint64_t offset) {
  if (!(p >= 0.0f && p < 1.0f) || batch < 0 || per_sample < 0) {
    throw UsageError("drop_path: needs 0 <= p < 1 and non-negative sizes");
  }
  const float scale = 1.0f / (1.0f - p);
  const PhiloxKey key = philox_key(seed);
  for (int64_t n = 0; n < batch; ++n) {
    const PhiloxCounter bits = philox4x32(philox_counter(offset + uint64_t(n / 4)), key);
    const bool keep = uniform_from_bits(bits.word[n % 4]) >= p;
    for (int64_t i = n * per_sample; i < (n + 1) * per_sample; ++i) y[i] = keep ? x[i] * scale : 0.0f;
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_drop_path_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"drop_path",
       [](CpuExecutor& e, const Node& n) {
         cpu::drop_path_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"),
                                size_attr(n, "per_sample"), float_attr(n, "p"), e.seed(), e.dropout_offset(n));
       }},
  });
}

}  // namespace sb::detail
