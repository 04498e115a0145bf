// RAII device allocation and device-kind names (include/scalebench/device.h).
#include <utility>

#include "scalebench/device.h"

namespace sb {

const char* device_kind_name(DeviceKind kind) { return kind == DeviceKind::kCuda ? "cuda" : "cpu"; }

DeviceBuffer::DeviceBuffer(Device& device, size_t bytes)
    : device_(&device), data_(device.allocate(bytes)), bytes_(bytes) {}

DeviceBuffer::~DeviceBuffer() {
  if (device_ != nullptr && data_ != nullptr) device_->release(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : device_(std::exchange(other.device_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (device_ != nullptr && data_ != nullptr) device_->release(data_);
    device_ = std::exchange(other.device_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

}  // namespace sb
