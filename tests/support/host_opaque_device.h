// A Device whose memory the host cannot address, so that the staging paths of host-side backends (mpi)
// run without a GPU. It wraps the CPU device and hands out addresses with bit 52 flipped: outside the
// user address space on x86-64 and AArch64 (below the top byte that AArch64 ignores), so a backend that
// dereferences a device pointer instead of staging it faults at once rather than passing by accident.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>

#include "scalebench/device.h"

namespace sb::test {

class HostOpaqueDevice final : public Device {
 public:
  HostOpaqueDevice() : inner_(make_cpu_device()) {}

  const DeviceDescription& description() const override { return inner_->description(); }

  void* allocate(size_t bytes) override { return flip(inner_->allocate(bytes)); }
  void release(void* pointer) override { inner_->release(flip(pointer)); }
  bool host_accessible() const override { return false; }
  void copy_to_host(void* host, const void* device, size_t bytes, StreamHandle) override {
    std::memcpy(host, flip(device), bytes);
  }
  void copy_from_host(void* device, const void* host, size_t bytes, StreamHandle) override {
    std::memcpy(flip(device), host, bytes);
  }
  void copy_on_device(void* dst, const void* src, size_t bytes, StreamHandle stream) override {
    inner_->copy_on_device(flip(dst), flip(src), bytes, stream);
  }

  StreamHandle create_stream() override { return inner_->create_stream(); }
  void destroy_stream(StreamHandle stream) override { inner_->destroy_stream(stream); }
  void synchronize(StreamHandle stream) override { inner_->synchronize(stream); }
  bool stream_idle(StreamHandle stream) override { return inner_->stream_idle(stream); }
  std::unique_ptr<DeviceEvent> create_event() override { return inner_->create_event(); }

  void convert(const void* src, DType from, void* dst, DType to, size_t count, StreamHandle stream) override {
    inner_->convert(flip(src), from, flip(dst), to, count, stream);
  }

  bool supports_graphs() const override { return false; }
  void begin_capture(StreamHandle stream) override { inner_->begin_capture(stream); }
  std::unique_ptr<DeviceGraph> end_capture(StreamHandle stream) override {
    return inner_->end_capture(stream);
  }

  void fill_pattern(void* buffer, size_t count, DType type, const PatternSpec& spec,
                    StreamHandle stream) override {
    inner_->fill_pattern(flip(buffer), count, type, spec, stream);
  }
  uint64_t count_mismatches(const void* buffer, size_t count, DType type, const PatternSpec& spec,
                            StreamHandle stream) override {
    return inner_->count_mismatches(flip(buffer), count, type, spec, stream);
  }

 private:
  static constexpr uintptr_t kFlipBit = uintptr_t{1} << 52;

  // Flipping one high bit keeps offsets: flip(p) + k == flip(p + k) for any in-buffer offset k.
  static void* flip(const void* pointer) {
    return pointer == nullptr ? nullptr
                              : reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(pointer) ^ kFlipBit);
  }

  std::unique_ptr<Device> inner_;
};

}  // namespace sb::test
