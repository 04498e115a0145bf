// The conv2d and conv_transpose2d families' CUDA node bindings: each pass runs the Conv2dRunner the executor
// chose for its node at construction (src/cuda/conv2d.h; cuDNN or scalebench's depthwise kernels), so these
// bindings build with and without cuDNN (conv2d_cudnn.cpp / conv2d_without_cudnn.cpp).
#include "src/cuda/bias.h"
#include "src/cuda/conv2d.h"
#include "src/cuda/cuda_bindings.h"

// The conv2d family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_conv2d_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      // Convolutions through cuDNN with the algorithm chosen at construction, depthwise ones through
      // scalebench's kernels (src/cuda/conv2d.h); x, w, y and their gradients in one dtype; the bias (fp32) is
      // added after the forward pass.
      {"conv2d", SB_TYPED({
         e.conv_runner(n).run(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]), e.u8(n.outputs[1]),
                              e.stream());
         if (n.inputs.size() > 2) {
           cuda::bias_add_forward(e.at<T>(n.outputs[0]), e.at<float>(n.inputs[2]),
                                  size_attr(n, "batch") * size_attr(n, "out_h") * size_attr(n, "out_w"),
                                  size_attr(n, "out_c"), e.stream());
         }
       })},
      {"conv2d_backward_data", SB_TYPED(e.conv_runner(n).run(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                             e.at<T>(n.outputs[0]), e.u8(n.outputs[1]), e.stream()))},
      {"conv2d_backward_filter", SB_TYPED(e.conv_runner(n).run(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                               e.at<T>(n.outputs[0]), e.u8(n.outputs[1]),
                                                               e.stream()))},
  });
}

// The conv_transpose2d family's node bindings.

void bind_conv_transpose2d_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      // pix2pixHD's transposed convolution is cuDNN's backward-data pass of the conv its geometry describes (its
      // backward nodes are that conv's forward and backward-filter passes), its fp32 bias added after it.
      {"conv_transpose2d", SB_TYPED({
         e.conv_runner(n).run(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]), e.u8(n.outputs[1]),
                              e.stream());
         if (n.inputs.size() > 2) {
           cuda::bias_add_forward(e.at<T>(n.outputs[0]), e.at<float>(n.inputs[2]),
                                  size_attr(n, "batch") * size_attr(n, "in_h") * size_attr(n, "in_w"),
                                  size_attr(n, "in_c"), e.stream());
         }
       })},
  });
}

}  // namespace sb::cuda_binding
