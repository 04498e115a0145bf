// The Device interface: memory, streams, events, graph capture and the verification kernels that the
// collective benchmarks need. Two implementations with the same operations: `cpu` (host memory,
// synchronous, the reference and the CI path) and `cuda` (one GPU, asynchronous streams).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "scalebench/dtype.h"
#include "scalebench/pattern.h"

namespace sb {

enum class DeviceKind { kCpu, kCuda };
const char* device_kind_name(DeviceKind kind);

// Opaque stream: cudaStream_t on CUDA, nullptr on the CPU (every operation completes before returning).
using StreamHandle = void*;

struct DeviceDescription {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;            // CUDA ordinal among visible devices; 0 on CPU
  std::string name;         // "NVIDIA H200", or the CPU model
  std::string bus_id;       // "0000:19:00.0"; empty on CPU
  size_t total_memory = 0;  // bytes
  int compute_capability = 0;  // 90 for sm_90; 0 on CPU
};

struct DeviceMemoryUsage {
  uint64_t total = 0, free = 0;  // bytes
};

// A point on a stream's timeline. Elapsed time between two recorded events is device time on CUDA and
// host steady-clock time on the CPU device.
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
  virtual void record(StreamHandle stream) = 0;
  // Records while the stream is being captured into a graph, so that each replay records it again.
  virtual void record_in_capture(StreamHandle stream) = 0;
  virtual void synchronize() = 0;
  // Work enqueued on `stream` after this call starts only once the event's last record has completed
  // (cudaStreamWaitEvent): how one stream waits for another without the host waiting. A no-op on the CPU.
  virtual void block(StreamHandle stream) = 0;
  virtual double milliseconds_since(const DeviceEvent& start) const = 0;
};

// A captured sequence of stream work, replayed as one launch.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  virtual void launch(StreamHandle stream) = 0;
};

class Device {
 public:
  virtual ~Device() = default;

  virtual const DeviceDescription& description() const = 0;
  DeviceKind kind() const { return description().kind; }

  // Memory. allocate() throws RuntimeFailure when the device is out of memory.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* pointer) = 0;
  virtual bool host_accessible() const = 0;
  // What the device has free now, everything else on it counted (cudaMemGetInfo): the CUDA context, library
  // handles, NCCL's buffers, other processes. The CPU device answers its total for both (it is bounded only by
  // the allocation budget of `maxbatch --memory`).
  virtual DeviceMemoryUsage memory_usage() {
    return DeviceMemoryUsage{description().total_memory, description().total_memory};
  }
  virtual void copy_to_host(void* host, const void* device, size_t bytes, StreamHandle stream) = 0;
  virtual void copy_from_host(void* device, const void* host, size_t bytes, StreamHandle stream) = 0;
  virtual void copy_on_device(void* dst, const void* src, size_t bytes, StreamHandle stream) = 0;

  // Streams and time.
  virtual StreamHandle create_stream() = 0;
  // A stream whose kernels the GPU's block scheduler prefers over those of ordinary streams (CUDA's greatest
  // priority): gradient all-reduces launched while the backward pass fills every SM get SMs as soon as any
  // free up, instead of queueing behind the compute kernels. Elsewhere the same as create_stream().
  virtual StreamHandle create_high_priority_stream() { return create_stream(); }
  virtual void destroy_stream(StreamHandle stream) = 0;
  virtual void synchronize(StreamHandle stream) = 0;
  virtual bool stream_idle(StreamHandle stream) = 0;  // non-blocking query, for polling with a timeout
  virtual std::unique_ptr<DeviceEvent> create_event() = 0;
  // Named host ranges for profilers (NVTX on CUDA, seen by Nsight Systems beside the kernels they enqueue);
  // nothing on the CPU. Pushes and pops nest.
  virtual void push_range(const char* /*name*/) {}
  virtual void pop_range() {}

  // dst[i] = src[i] converted between fp32 and bf16 (either direction; round to nearest even), enqueued
  // on `stream`: gradients compressed to bf16 for the all-reduce and widened back. UsageError for other pairs.
  virtual void convert(const void* src, DType from, void* dst, DType to, size_t count, StreamHandle stream) = 0;

  // Graph capture; the CPU device throws UsageError.
  virtual bool supports_graphs() const = 0;
  virtual void begin_capture(StreamHandle stream) = 0;
  virtual std::unique_ptr<DeviceGraph> end_capture(StreamHandle stream) = 0;

  // Verification kernels (pattern.h): write the pattern of `spec`, or count elements that differ from it.
  virtual void fill_pattern(void* buffer, size_t count, DType type, const PatternSpec& spec,
                            StreamHandle stream) = 0;
  virtual uint64_t count_mismatches(const void* buffer, size_t count, DType type,
                                    const PatternSpec& spec, StreamHandle stream) = 0;
};

// A device allocation released when it goes out of scope.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device& device, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  Device* device_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Factories. make_cuda_device throws UsageError when scalebench was built without CUDA or the ordinal
// does not exist.
std::unique_ptr<Device> make_cpu_device();
std::unique_ptr<Device> make_cuda_device(int ordinal);
int visible_cuda_device_count();  // 0 when built without CUDA or no driver/GPU is present

}  // namespace sb
