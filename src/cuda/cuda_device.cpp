// The CUDA device: one GPU, cudaMalloc'd memory, real streams, CUDA events and graphs. Selecting the device
// makes it current for this thread, which is what NCCL and cuBLAS bind to.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include "scalebench/device.h"
#include "scalebench/error.h"
#include "scalebench/versions.h"
#include "src/cuda/cast.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/pattern_kernels.h"

namespace sb {
namespace {

class CudaEvent final : public DeviceEvent {
 public:
  CudaEvent() { SB_CUDA_CHECK(cudaEventCreate(&event_)); }
  ~CudaEvent() override {
    cudaEventDestroy(event_);
    if (order_ != nullptr) cudaEventDestroy(order_);
  }
  // On a stream being captured into a graph (a training step, issue 25) an event must do two things: order
  // another stream of the capture after this point (a plain record, which the capture turns into a graph
  // edge) and stamp the time at every replay (an external record node). One event cannot do both, so the
  // capture records a second event for the ordering, and block() waits on that one until the next record.
  // The timing record goes first: the ordering record then follows it, so a stream that waits on the event
  // also waits on the timing node. The other way round the timing node would hang off the end of a forked
  // stream (the communication stream's last record), and ending the capture fails with "unjoined work".
  void record(StreamHandle stream) override {
    const auto s = static_cast<cudaStream_t>(stream);
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    SB_CUDA_CHECK(cudaStreamIsCapturing(s, &capture));
    recorded_in_capture_ = capture == cudaStreamCaptureStatusActive;
    if (!recorded_in_capture_) {
      SB_CUDA_CHECK(cudaEventRecord(event_, s));
      return;
    }
    if (order_ == nullptr) SB_CUDA_CHECK(cudaEventCreateWithFlags(&order_, cudaEventDisableTiming));
    SB_CUDA_CHECK(cudaEventRecordWithFlags(event_, s, cudaEventRecordExternal));
    SB_CUDA_CHECK(cudaEventRecord(order_, s));
  }
  void record_in_capture(StreamHandle stream) override {
    // An external record becomes a node of the captured graph, so every replay stamps the time again.
    SB_CUDA_CHECK(cudaEventRecordWithFlags(event_, static_cast<cudaStream_t>(stream), cudaEventRecordExternal));
  }
  void synchronize() override { SB_CUDA_CHECK(cudaEventSynchronize(event_)); }
  void block(StreamHandle stream) override {
    SB_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), recorded_in_capture_ ? order_ : event_, 0));
  }
  double milliseconds_since(const DeviceEvent& start) const override {
    float ms = 0;
    SB_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<const CudaEvent&>(start).event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
  cudaEvent_t order_ = nullptr;  // the ordering half of a record in a capture
  bool recorded_in_capture_ = false;
};

class CudaGraph final : public DeviceGraph {
 public:
  explicit CudaGraph(cudaGraph_t graph) : graph_(graph) {
    SB_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  ~CudaGraph() override {
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
  }
  void launch(StreamHandle stream) override {
    SB_CUDA_CHECK(cudaGraphLaunch(exec_, static_cast<cudaStream_t>(stream)));
  }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int ordinal) {
    SB_CUDA_CHECK(cudaSetDevice(ordinal));
    cudaDeviceProp properties{};
    SB_CUDA_CHECK(cudaGetDeviceProperties(&properties, ordinal));
    char bus_id[32] = {};
    SB_CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ordinal));
    description_.kind = DeviceKind::kCuda;
    description_.index = ordinal;
    description_.name = properties.name;
    description_.bus_id = bus_id;
    description_.total_memory = properties.totalGlobalMem;
    description_.compute_capability = properties.major * 10 + properties.minor;
    SB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&mismatch_counter_), sizeof(unsigned long long)));
  }
  ~CudaDevice() override { cudaFree(mismatch_counter_); }

  const DeviceDescription& description() const override { return description_; }

  void* allocate(size_t bytes) override {
    void* pointer = nullptr;
    const cudaError_t status = cudaMalloc(&pointer, bytes == 0 ? 1 : bytes);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear the sticky-free error so later calls work
      size_t free_bytes = 0, total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      throw OutOfMemory("out of GPU memory: " + std::to_string(bytes) + " bytes requested on GPU " +
                           std::to_string(description_.index) + ", " + std::to_string(free_bytes) +
                           " of " + std::to_string(total_bytes) + " bytes free");
    }
    SB_CUDA_CHECK(status);
    return pointer;
  }
  void release(void* pointer) override { SB_CUDA_CHECK(cudaFree(pointer)); }
  DeviceMemoryUsage memory_usage() override {
    size_t free_bytes = 0, total_bytes = 0;
    SB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return DeviceMemoryUsage{total_bytes, free_bytes};
  }
  bool host_accessible() const override { return false; }
  void copy_to_host(void* host, const void* device, size_t bytes, StreamHandle stream) override {
    auto s = static_cast<cudaStream_t>(stream);
    SB_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, s));
    SB_CUDA_CHECK(cudaStreamSynchronize(s));  // the host reads it next
  }
  void copy_from_host(void* device, const void* host, size_t bytes, StreamHandle stream) override {
    auto s = static_cast<cudaStream_t>(stream);
    SB_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, s));
    SB_CUDA_CHECK(cudaStreamSynchronize(s));  // the host buffer may be reused at once
  }
  void copy_on_device(void* dst, const void* src, size_t bytes, StreamHandle stream) override {
    SB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)));
  }

  StreamHandle create_stream() override {
    cudaStream_t stream = nullptr;
    SB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return stream;
  }
  StreamHandle create_high_priority_stream() override {
    int least = 0, greatest = 0;
    SB_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t stream = nullptr;
    SB_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
    return stream;
  }
  void destroy_stream(StreamHandle stream) override {
    SB_CUDA_CHECK(cudaStreamDestroy(static_cast<cudaStream_t>(stream)));
  }
  void synchronize(StreamHandle stream) override {
    SB_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  }
  bool stream_idle(StreamHandle stream) override {
    const cudaError_t status = cudaStreamQuery(static_cast<cudaStream_t>(stream));
    if (status == cudaErrorNotReady) return false;
    SB_CUDA_CHECK(status);
    return true;
  }
  std::unique_ptr<DeviceEvent> create_event() override { return std::make_unique<CudaEvent>(); }
  void push_range(const char* name) override { nvtxRangePushA(name); }
  void pop_range() override { nvtxRangePop(); }

  void convert(const void* src, DType from, void* dst, DType to, size_t count, StreamHandle stream) override {
    const auto n = static_cast<int64_t>(count);
    auto s = static_cast<cudaStream_t>(stream);
    if (from == DType::kFloat32 && to == DType::kBFloat16) {
      cuda::cast(static_cast<const float*>(src), static_cast<cuda::bf16*>(dst), n, s);
    } else if (from == DType::kBFloat16 && to == DType::kFloat32) {
      cuda::cast(static_cast<const cuda::bf16*>(src), static_cast<float*>(dst), n, s);
    } else {
      throw UsageError(std::string("convert: ") + dtype_name(from) + " to " + dtype_name(to) + " is not supported");
    }
  }

  bool supports_graphs() const override { return true; }
  void begin_capture(StreamHandle stream) override {
    SB_CUDA_CHECK(cudaStreamBeginCapture(static_cast<cudaStream_t>(stream), cudaStreamCaptureModeGlobal));
  }
  std::unique_ptr<DeviceGraph> end_capture(StreamHandle stream) override {
    cudaGraph_t graph = nullptr;
    SB_CUDA_CHECK(cudaStreamEndCapture(static_cast<cudaStream_t>(stream), &graph));
    return std::make_unique<CudaGraph>(graph);
  }

  void fill_pattern(void* buffer, size_t count, DType type, const PatternSpec& spec,
                    StreamHandle stream) override {
    cuda::fill_pattern(buffer, count, type, spec, static_cast<cudaStream_t>(stream));
  }

  uint64_t count_mismatches(const void* buffer, size_t count, DType type, const PatternSpec& spec,
                            StreamHandle stream) override {
    auto s = static_cast<cudaStream_t>(stream);
    SB_CUDA_CHECK(cudaMemsetAsync(mismatch_counter_, 0, sizeof(unsigned long long), s));
    cuda::count_mismatches(buffer, count, type, spec, pattern_tolerance(type, spec), mismatch_counter_, s);
    unsigned long long wrong = 0;
    SB_CUDA_CHECK(cudaMemcpyAsync(&wrong, mismatch_counter_, sizeof wrong, cudaMemcpyDeviceToHost, s));
    SB_CUDA_CHECK(cudaStreamSynchronize(s));
    return wrong;
  }

 private:
  DeviceDescription description_;
  unsigned long long* mismatch_counter_ = nullptr;
};

}  // namespace

std::unique_ptr<Device> make_cuda_device(int ordinal) {
  const int visible = visible_cuda_device_count();
  if (ordinal < 0 || ordinal >= visible) {
    throw UsageError("GPU " + std::to_string(ordinal) + " requested but " + std::to_string(visible) +
                     " CUDA devices are visible");
  }
  return std::make_unique<CudaDevice>(ordinal);
}

int visible_cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no GPU: not an error for a program that can run on the CPU
    return 0;
  }
  return count;
}

std::string cuda_runtime_version() {
  int version = 0;
  if (cudaRuntimeGetVersion(&version) != cudaSuccess) return "";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string cublas_version() {
  const size_t version = cublasLtGetVersion();  // major * 10000 + minor * 100 + patch
  return std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) + "." +
         std::to_string(version % 100);
}

std::string cuda_driver_version() {
  int version = 0;
  if (cudaDriverGetVersion(&version) != cudaSuccess || version == 0) return "";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace sb
