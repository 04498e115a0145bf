// Conv2dRunner in a build without cuDNN (src/cuda/conv2d.h): convolutions on the cuda device need cuDNN, so
// building a CUDA executor for a graph with one is a usage error that says how to get it.
#include "scalebench/error.h"
#include "src/cuda/conv2d.h"

namespace sb::cuda {

struct Conv2dRunner::State {};

Conv2dRunner::Conv2dRunner(const Conv2dGeometry&, DType, bool, ConvPass, uint64_t) {
  throw UsageError("conv2d on the cuda device needs cuDNN, and this scalebench was built without it "
                   "(install cuDNN 9 and reconfigure with -DSB_ENABLE_CUDNN=ON)");
}
Conv2dRunner::~Conv2dRunner() = default;
void Conv2dRunner::run(const void*, const void*, void*, void*, cudaStream_t) const {}
std::string Conv2dRunner::algorithm() const { return "none"; }
uint64_t Conv2dRunner::library_workspace() const { return 0; }

}  // namespace sb::cuda
