// Data-plane collectives on device buffers, shaped like NCCL's calls (STYLE.md rule 9). Pointer semantics
// follow NCCL: an operation is in place when recv == send (all_reduce, broadcast, all_to_all), when
// send == recv + rank * send_count (all_gather), or when recv == send + rank * recv_count (reduce_scatter).
// Operations are enqueued on `stream`; wait() blocks until the stream is idle or the timeout passes.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "scalebench/buffer_registration.h"
#include "scalebench/device.h"
#include "scalebench/dtype.h"
#include "scalebench/pattern.h"
#include "scalebench/process_group.h"

namespace sb {

enum class Backend { kAuto, kNccl, kMpi, kLocal };
const char* backend_name(Backend backend);
Backend parse_backend(const std::string& text);  // throws UsageError

// One registration, held until this object is destroyed (before its memory is released and before its
// communicator). kind() is what the library granted, at most what was asked for; why_less() says why it is less.
class RegisteredRange {
 public:
  virtual ~RegisteredRange() = default;
  virtual BufferRegistration kind() const = 0;
  virtual const std::string& why_less() const = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual Backend backend() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string library_version() const = 0;  // "NCCL 2.28.3", "Open MPI v4.1.6", "local"

  virtual void all_reduce(const void* send, void* recv, size_t count, DType type, ReduceOp op,
                          StreamHandle stream) = 0;
  virtual void reduce_scatter(const void* send, void* recv, size_t recv_count, DType type, ReduceOp op,
                              StreamHandle stream) = 0;
  virtual void all_gather(const void* send, void* recv, size_t send_count, DType type,
                          StreamHandle stream) = 0;
  virtual void broadcast(const void* send, void* recv, size_t count, DType type, int root,
                         StreamHandle stream) = 0;
  virtual void all_to_all(const void* send, void* recv, size_t count_per_peer, DType type,
                          StreamHandle stream) = 0;
  virtual void barrier(StreamHandle stream) = 0;

  // Blocks until all work on `stream` is done. On timeout it aborts the communicator and throws
  // RuntimeFailure naming what was waited for.
  virtual void wait(StreamHandle stream, const std::string& what) = 0;

  // Whether the operations can be captured into a device graph (NCCL on CUDA: yes; MPI: no).
  virtual bool supports_graph_capture() const = 0;

  // Memory for collective buffers. NCCL allocates through ncclMemAlloc (cuMem, as nccl-tests does since
  // NCCL 2.19), which its transports and buffer registration prefer; other backends use the device.
  virtual void* allocate_buffer(Device& device, size_t bytes) { return device.allocate(bytes); }
  virtual void release_buffer(Device& device, void* pointer) { device.release(pointer); }
  // Registers [pointer, pointer + bytes), inside memory from allocate_buffer, as `wanted` for the collectives
  // that follow (and the CUDA graphs that capture them). Collective: every rank calls it in the same order, with
  // the same bytes and the same offset into its allocation. nullptr where the backend registers nothing (the
  // caller says so). A symmetric window starts at a multiple of kRegistrationAlignment from the allocation's
  // start. Throws RuntimeFailure when the library fails.
  virtual std::unique_ptr<RegisteredRange> register_range(void* /*pointer*/, size_t /*bytes*/,
                                                          BufferRegistration /*wanted*/) {
    return nullptr;
  }

  // How bytes travel between ranks, as the library reported it: "P2P/CUMEM", "SHM", "NET/Socket",
  // "MPI", "none". Known once a collective has run (NCCL connects lazily).
  virtual std::string transport() const = 0;
};

// Ranges registered as one `wanted` kind, on one or more communicators, held together until destroyed (before the
// memory they cover). What the library granted for all of them is the weakest grant, and why_less that grant's
// reason; `supported` turns false, and nothing is held, when a backend registers nothing.
class RangeRegistrations {
 public:
  explicit RangeRegistrations(BufferRegistration wanted = BufferRegistration::kNone) : granted_(wanted) {}
  // Registers each range with `communicator`: collective, every rank the same ranges in the same order.
  void add(Communicator& communicator, const std::vector<std::pair<void*, size_t>>& ranges);
  BufferRegistration granted() const { return granted_; }
  const std::string& why_less() const { return why_less_; }
  bool supported() const { return supported_; }
  void release() { held_.clear(); }

 private:
  std::vector<std::unique_ptr<RegisteredRange>> held_;
  BufferRegistration granted_;
  std::string why_less_;
  bool supported_ = true;
};

// NCCL_WIN_REQUIRED_ALIGNMENT: a window's offset from the start of its allocation is a multiple of this.
constexpr size_t kRegistrationAlignment = 4096;

struct CommunicatorOptions {
  double timeout_seconds = 300;
  // NCCL's ncclConfig_t.maxCTAs: at most this many thread blocks per collective (0: the library's choice). Other
  // backends have no such limit and ignore it (the caller says so).
  int max_ctas = 0;
};

// Chooses and builds a backend. kAuto picks nccl on the CUDA device, mpi on the CPU device, local for one
// rank without MPI. Throws UsageError when the backend was not built in or does not fit the device.
std::unique_ptr<Communicator> make_communicator(Backend backend, ProcessGroup& group, Device& device,
                                                const CommunicatorOptions& options);

}  // namespace sb
