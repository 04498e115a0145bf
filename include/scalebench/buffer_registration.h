// How a buffer is made known to the collective library before its collectives (--grad-registration,
// include/scalebench/communicator.h's register_range): not at all; local user-buffer registration (NCCL's
// ncclCommRegister: zero-copy, fewer channels); or a symmetric window (NCCL >= 2.27's ncclCommWindowRegister with
// NCCL_WIN_COLL_SYMMETRIC: every rank's buffer at the same offset of memory the peers map, which NCCL's symmetric
// kernels read and write directly, on few SMs, over NVLink).
#pragma once

#include <string>

namespace sb {

enum class BufferRegistration { kNone, kLocal, kSymmetric };
const char* buffer_registration_name(BufferRegistration registration);   // "none", "local", "symmetric"
BufferRegistration parse_buffer_registration(const std::string& text);  // throws UsageError

}  // namespace sb
