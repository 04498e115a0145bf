// The memory family's CUDA node bindings: views (no work: they share their input's storage, src/core/planner.h),
// byte copies and fills in any dtype (cudaMemcpyAsync / cudaMemsetAsync on the executor's stream), and the
// typed fill of src/cuda/fill.h.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/fill.h"

namespace sb::cuda_binding {

void bind_memory_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"view", [](CudaExecutor&, const Node&) {}},  // shares its input's storage (planner.h)
      {"zero_fill",  // any dtype: all-zero bytes are 0 in fp32, bf16, fp16 and the integers
       [](CudaExecutor& e, const Node& n) {
         SB_CUDA_CHECK(cudaMemsetAsync(e.u8(n.outputs[0]), 0, e.graph().tensor(n.outputs[0]).bytes(), e.stream()));
       }},
      {"stack",  // byte copies: any dtype, the parts' and the output's being equal (graph builder)
       [](CudaExecutor& e, const Node& n) {
         const size_t part_bytes = e.graph().tensor(n.inputs[0]).bytes();
         for (size_t i = 0; i < n.inputs.size(); ++i) {
           SB_CUDA_CHECK(cudaMemcpyAsync(e.u8(n.outputs[0]) + i * part_bytes, e.u8(n.inputs[i]), part_bytes,
                                         cudaMemcpyDeviceToDevice, e.stream()));
         }
       }},
      {"unstack",
       [](CudaExecutor& e, const Node& n) {
         const size_t part_bytes = e.graph().tensor(n.outputs[0]).bytes();
         for (size_t i = 0; i < n.outputs.size(); ++i) {
           SB_CUDA_CHECK(cudaMemcpyAsync(e.u8(n.outputs[i]), e.u8(n.inputs[0]) + i * part_bytes, part_bytes,
                                         cudaMemcpyDeviceToDevice, e.stream()));
         }
       }},
      {"grad_multiply", [](CudaExecutor&, const Node&) {}},  // shares its input's storage (a view)
      // pix2pixHD's stop_gradient and discard_gradient (graph_builder_pix2pixhd.cpp) are views too.
      {"stop_gradient", [](CudaExecutor&, const Node&) {}},
      {"discard_gradient", [](CudaExecutor&, const Node&) {}},
      {"copy",
       [](CudaExecutor& e, const Node& n) {
         SB_CUDA_CHECK(cudaMemcpyAsync(e.u8(n.outputs[0]), e.u8(n.inputs[0]), static_cast<size_t>(size_attr(n, "bytes")),
                                       cudaMemcpyDeviceToDevice, e.stream()));
       }},
      // Constants (StyleGAN's, and the seed of an input gradient) in the output's dtype.
      {"fill", SB_TYPED(cuda::fill(e.at<T>(n.outputs[0]), size_attr(n, "n"), float_attr(n, "value"), e.stream()))},
  });
}

}  // namespace sb::cuda_binding
