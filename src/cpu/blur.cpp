// The fixed [1, 2, 1] blur on the CPU (src/cpu/blur.h): nine taps per output, sums in double.
#include "src/cpu/blur.h"

#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {

void blur2d(const float* x, float* y, int64_t batch, int64_t height, int64_t width, int64_t channels) {
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t h = 0; h < height; ++h) {
      for (int64_t w = 0; w < width; ++w) {
        for (int64_t c = 0; c < channels; ++c) {
          double sum = 0;
          for (int64_t i = -1; i <= 1; ++i) {
            if (h + i < 0 || h + i >= height) continue;
            for (int64_t j = -1; j <= 1; ++j) {
              if (w + j < 0 || w + j >= width) continue;
              sum += double(kBlurTaps[i + 1]) * kBlurTaps[j + 1] * x[((n * height + h + i) * width + w + j) * channels + c];
            }
          }
          y[((n * height + h) * width + w) * channels + c] = static_cast<float>(sum);
        }
      }
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_blur_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"blur2d",
       [](CpuExecutor& e, const Node& n) {
         cpu::blur2d(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "batch"), size_attr(n, "height"),
                     size_attr(n, "width"), size_attr(n, "channels"));
       }},
  });
}

}  // namespace sb::detail
