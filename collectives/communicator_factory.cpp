// Backend names and the choice of backend (include/scalebench/communicator.h).
#include "collectives/backends.h"
#include "scalebench/error.h"

namespace sb {

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::kAuto: return "auto";
    case Backend::kNccl: return "nccl";
    case Backend::kMpi: return "mpi";
    case Backend::kLocal: return "local";
  }
  return "auto";
}

Backend parse_backend(const std::string& text) {
  for (Backend backend : {Backend::kAuto, Backend::kNccl, Backend::kMpi, Backend::kLocal}) {
    if (text == backend_name(backend)) return backend;
  }
  throw UsageError("unknown backend '" + text + "' (accepted: auto, nccl, mpi, local)");
}

const char* buffer_registration_name(BufferRegistration registration) {
  switch (registration) {
    case BufferRegistration::kNone: return "none";
    case BufferRegistration::kLocal: return "local";
    case BufferRegistration::kSymmetric: return "symmetric";
  }
  return "none";
}

BufferRegistration parse_buffer_registration(const std::string& text) {
  for (BufferRegistration r : {BufferRegistration::kNone, BufferRegistration::kLocal, BufferRegistration::kSymmetric}) {
    if (text == buffer_registration_name(r)) return r;
  }
  throw UsageError("unknown buffer registration '" + text + "' (accepted: none, local, symmetric)");
}

void RangeRegistrations::add(Communicator& communicator, const std::vector<std::pair<void*, size_t>>& ranges) {
  if (granted_ == BufferRegistration::kNone || !supported_) return;
  const BufferRegistration wanted = granted_;
  for (const auto& [pointer, bytes] : ranges) {
    std::unique_ptr<RegisteredRange> range = communicator.register_range(pointer, bytes, wanted);
    if (range == nullptr) {
      held_.clear();
      granted_ = BufferRegistration::kNone;
      supported_ = false;
      why_less_ = std::string("the ") + backend_name(communicator.backend()) + " backend registers no buffers";
      return;
    }
    if (static_cast<int>(range->kind()) < static_cast<int>(granted_)) {
      granted_ = range->kind();
      why_less_ = range->why_less();
    }
    held_.push_back(std::move(range));
  }
}

std::unique_ptr<Communicator> make_communicator(Backend backend, ProcessGroup& group, Device& device,
                                                const CommunicatorOptions& options) {
  if (backend == Backend::kAuto) {
    if (device.kind() == DeviceKind::kCuda) {
      backend = Backend::kNccl;
    } else {
      backend = group.is_mpi() ? Backend::kMpi : Backend::kLocal;
    }
  }
  switch (backend) {
    case Backend::kNccl: return make_nccl_communicator(group, device, options);
    case Backend::kMpi: return make_mpi_communicator(group, device, options);
    case Backend::kLocal:
      if (group.size() != 1) {
        throw UsageError("the local backend runs one rank; this job has " + std::to_string(group.size()));
      }
      return make_local_communicator(device);
    case Backend::kAuto: break;
  }
  throw UsageError("no communicator backend selected");
}

}  // namespace sb
