// The CPU device: host memory, synchronous "streams", steady-clock events. It is the numerical reference
// and the device CI runs on; every operation has completed when the call returns.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <new>

#include "scalebench/device.h"
#include "scalebench/error.h"
#include "src/cpu/cast.h"
#include "src/cpu/element_access.h"

namespace sb {
namespace {

class CpuEvent final : public DeviceEvent {
 public:
  void record(StreamHandle) override { time_ = std::chrono::steady_clock::now(); }
  void record_in_capture(StreamHandle) override {
    throw UsageError("graph capture needs the CUDA device");
  }
  void synchronize() override {}
  void block(StreamHandle) override {}
  double milliseconds_since(const DeviceEvent& start) const override {
    const auto& begin = static_cast<const CpuEvent&>(start).time_;
    return std::chrono::duration<double, std::milli>(time_ - begin).count();
  }

 private:
  std::chrono::steady_clock::time_point time_{};
};

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "CPU";
}

size_t physical_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  size_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemTotal:") return kib * 1024;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

class CpuDevice final : public Device {
 public:
  CpuDevice() {
    description_.kind = DeviceKind::kCpu;
    description_.name = cpu_model_name();
    description_.total_memory = physical_memory_bytes();
  }

  const DeviceDescription& description() const override { return description_; }

  void* allocate(size_t bytes) override {
    // 64-byte alignment: the same vector-width guarantees the CUDA allocator gives.
    void* pointer = std::aligned_alloc(64, ((bytes + 63) / 64) * 64 + 64);
    if (pointer == nullptr) {
      throw OutOfMemory("out of host memory allocating " + std::to_string(bytes) + " bytes");
    }
    return pointer;
  }
  void release(void* pointer) override { std::free(pointer); }
  bool host_accessible() const override { return true; }
  void copy_to_host(void* host, const void* device, size_t bytes, StreamHandle) override {
    std::memcpy(host, device, bytes);
  }
  void copy_from_host(void* device, const void* host, size_t bytes, StreamHandle) override {
    std::memcpy(device, host, bytes);
  }
  void copy_on_device(void* dst, const void* src, size_t bytes, StreamHandle) override {
    std::memmove(dst, src, bytes);
  }

  StreamHandle create_stream() override { return nullptr; }
  void destroy_stream(StreamHandle) override {}
  void synchronize(StreamHandle) override {}
  bool stream_idle(StreamHandle) override { return true; }
  std::unique_ptr<DeviceEvent> create_event() override { return std::make_unique<CpuEvent>(); }

  void convert(const void* src, DType from, void* dst, DType to, size_t count, StreamHandle) override {
    const auto n = static_cast<int64_t>(count);
    if (from == DType::kFloat32 && to == DType::kBFloat16) {
      cpu::cast_float_to_bf16(static_cast<const float*>(src), static_cast<uint16_t*>(dst), n);
    } else if (from == DType::kBFloat16 && to == DType::kFloat32) {
      cpu::cast_bf16_to_float(static_cast<const uint16_t*>(src), static_cast<float*>(dst), n);
    } else {
      throw UsageError(std::string("convert: ") + dtype_name(from) + " to " + dtype_name(to) + " is not supported");
    }
  }

  bool supports_graphs() const override { return false; }
  void begin_capture(StreamHandle) override { throw UsageError("graph capture needs the CUDA device"); }
  std::unique_ptr<DeviceGraph> end_capture(StreamHandle) override {
    throw UsageError("graph capture needs the CUDA device");
  }

  void fill_pattern(void* buffer, size_t count, DType type, const PatternSpec& spec,
                    StreamHandle) override {
    for (size_t i = 0; i < count; ++i) {
      double value = spec.role == PatternRole::kPoison ? poison_value(type) : pattern_value(spec, i);
      cpu::store_element(buffer, i, type, value);
    }
  }

  uint64_t count_mismatches(const void* buffer, size_t count, DType type, const PatternSpec& spec,
                            StreamHandle) override {
    const double tolerance = pattern_tolerance(type, spec);
    uint64_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      if (!pattern_matches(cpu::load_element(buffer, i, type), pattern_value(spec, i), tolerance)) ++wrong;
    }
    return wrong;
  }

 private:
  static double poison_value(DType type) {
    return type == DType::kInt32 ? std::numeric_limits<int32_t>::min()
                                 : std::numeric_limits<double>::quiet_NaN();
  }

  DeviceDescription description_;
};

}  // namespace

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

}  // namespace sb
