// The NCCL backend: one communicator per process, its unique id broadcast over the control plane, created
// non-blocking so that a hung peer can be aborted after the timeout instead of hanging the job
// (NCCL docs: communicators.rst, "Fault tolerance"). Waiting polls the stream and NCCL's async error; past
// the deadline the ranks hold a roll call over MPI (the main thread is free while it polls) so the message
// names the rank that did not arrive, then the communicator is aborted (include/scalebench/fault.h).
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "collectives/backends.h"
#include "collectives/nccl_transport_log.h"
#include "scalebench/error.h"
#include "scalebench/fault.h"
#include "src/cuda/cuda_check.h"

namespace sb {
namespace {

std::string nccl_error_text(ncclResult_t status) { return ncclGetErrorString(status); }

ncclDataType_t to_nccl(DType type) {
  switch (type) {
    case DType::kFloat32: return ncclFloat32;
    case DType::kBFloat16: return ncclBfloat16;
    case DType::kFloat16: return ncclFloat16;
    case DType::kFloat64: return ncclFloat64;
    case DType::kInt32: return ncclInt32;
    case DType::kUInt8: return ncclUint8;
  }
  return ncclFloat32;
}

ncclRedOp_t to_nccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kProd: return ncclProd;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kAvg: return ncclAvg;  // NCCL 2.10+; integers: sum then divide, floats: premultiplied by 1/n
  }
  return ncclSum;
}

// At most `max_ctas` thread blocks per collective (0: NCCL's own choice); minCTAs follows, as NCCL requires
// minCTAs <= maxCTAs.
void limit_ctas(ncclConfig_t& config, int max_ctas) {
  if (max_ctas <= 0) return;
  config.maxCTAs = max_ctas;
  config.minCTAs = 1;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ProcessGroup& group, Device& device, const CommunicatorOptions& options)
      : group_(group), device_(device), timeout_(options.timeout_seconds) {
    if (device.kind() != DeviceKind::kCuda) throw UsageError("the nccl backend needs the cuda device");
    log_path_ = capture_nccl_log(current_environment(), static_cast<int>(getpid()));
    ncclUniqueId id{};
    if (group.rank() == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    group.broadcast(&id, sizeof id, 0);
    // Creation is non-blocking so that a rank that never joins costs a timeout, not a hung job.
    ncclConfig_t nonblocking = NCCL_CONFIG_INITIALIZER;
    nonblocking.blocking = 0;
    limit_ctas(nonblocking, options.max_ctas);
    ncclComm_t bootstrap = nullptr;
    ncclResult_t status = ncclCommInitRankConfig(&bootstrap, group.size(), id, group.rank(), &nonblocking);
    if (status != ncclSuccess && status != ncclInProgress) check(status, "ncclCommInitRankConfig");
    comm_ = bootstrap;
    settle("creating the NCCL communicator");
    // Operations on a non-blocking communicator are handed to a helper thread inside NCCL, which cost
    // about 40 us per collective on H200 (measured: a 45 us floor up to 8 MiB). The communicator that
    // runs the collectives is therefore a blocking split of the first one; a hang inside it is still
    // caught by wait(), which polls and aborts.
    ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
    blocking.blocking = 1;
    limit_ctas(blocking, options.max_ctas);
    ncclComm_t working = nullptr;
    status = ncclCommSplit(bootstrap, 0, group.rank(), &working, &blocking);
    if (status != ncclSuccess && status != ncclInProgress) check(status, "ncclCommSplit");
    settle("splitting the NCCL communicator");
    if (working != nullptr) {
      comm_ = working;
      settle("creating the blocking NCCL communicator");
      ncclCommFinalize(bootstrap);
      settle_quietly(bootstrap);
      ncclCommDestroy(bootstrap);
    }
    int version = 0;
    ncclGetVersion(&version);
    version_ = "NCCL " + std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) +
               "." + std::to_string(version % 100);
  }

  ~NcclCommunicator() override {
    if (comm_ != nullptr) {
      if (aborted_) {
        ncclCommAbort(comm_);
      } else {
        ncclCommFinalize(comm_);
        settle_quietly(comm_);
        ncclCommDestroy(comm_);
      }
    }
    if (!log_path_.empty()) std::remove(log_path_.c_str());
  }

  Backend backend() const override { return Backend::kNccl; }
  int rank() const override { return group_.rank(); }
  int size() const override { return group_.size(); }
  std::string library_version() const override { return version_; }
  bool supports_graph_capture() const override { return true; }

  void all_reduce(const void* send, void* recv, size_t count, DType type, ReduceOp op,
                  StreamHandle stream) override {
    enqueue(ncclAllReduce(send, recv, count, to_nccl(type), to_nccl(op), comm_, as_cuda(stream)), "ncclAllReduce");
  }
  void reduce_scatter(const void* send, void* recv, size_t recv_count, DType type, ReduceOp op,
                      StreamHandle stream) override {
    enqueue(ncclReduceScatter(send, recv, recv_count, to_nccl(type), to_nccl(op), comm_, as_cuda(stream)),
            "ncclReduceScatter");
  }
  void all_gather(const void* send, void* recv, size_t send_count, DType type, StreamHandle stream) override {
    enqueue(ncclAllGather(send, recv, send_count, to_nccl(type), comm_, as_cuda(stream)), "ncclAllGather");
  }
  void broadcast(const void* send, void* recv, size_t count, DType type, int root,
                 StreamHandle stream) override {
    enqueue(ncclBroadcast(send, recv, count, to_nccl(type), root, comm_, as_cuda(stream)), "ncclBroadcast");
  }
  // NCCL's own all-to-all from 2.28 on; before, point-to-point pairs in one group (nccl-tests' way).
  void all_to_all(const void* send, void* recv, size_t count_per_peer, DType type, StreamHandle stream) override {
    const size_t block = count_per_peer * dtype_size(type);
    if (send == recv) {
      // Point-to-point pairs would overwrite a block while it is still being sent: stage the input first
      // (the copy is part of the in-place time, which the report shows separately).
      const size_t bytes = block * static_cast<size_t>(size());
      if (staging_ == nullptr || staging_->bytes() < bytes) {
        device_.synchronize(stream);
        staging_ = std::make_unique<DeviceBuffer>(device_, bytes);
      }
      device_.copy_on_device(staging_->data(), send, bytes, stream);
      send = staging_->data();
    }
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    enqueue(ncclAlltoAll(send, recv, count_per_peer, to_nccl(type), comm_, as_cuda(stream)), "ncclAlltoAll");
#else
    check(ncclGroupStart(), "ncclGroupStart");
    for (int peer = 0; peer < size(); ++peer) {
      check(ncclSend(static_cast<const char*>(send) + peer * block, count_per_peer, to_nccl(type), peer, comm_,
                     as_cuda(stream)), "ncclSend");
      check(ncclRecv(static_cast<char*>(recv) + peer * block, count_per_peer, to_nccl(type), peer, comm_,
                     as_cuda(stream)), "ncclRecv");
    }
    enqueue(ncclGroupEnd(), "ncclGroupEnd");
#endif
  }

  void barrier(StreamHandle stream) override {
    // A one-element all-reduce orders the ranks on the stream; scratch lives as long as the communicator.
    if (barrier_scratch_ == nullptr) barrier_scratch_ = std::make_unique<DeviceBuffer>(device_, sizeof(float));
    all_reduce(barrier_scratch_->data(), barrier_scratch_->data(), 1, DType::kFloat32, ReduceOp::kSum, stream);
  }

  void wait(StreamHandle stream, const std::string& what) override {
    const auto start = std::chrono::steady_clock::now();
    while (!device_.stream_idle(stream)) {
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        const std::string detail = std::string(nccl_error_text(async)) + " (" + ncclGetLastError(comm_) + ")";
        fail("[" + progress_text() + "] NCCL error while " + what + ": " + detail, roll_call_seconds(timeout_));
      }
      check_deadline(start, what);
      std::this_thread::yield();
    }
  }

  void* allocate_buffer(Device&, size_t bytes) override {
    void* pointer = nullptr;
    const ncclResult_t status = ncclMemAlloc(&pointer, bytes == 0 ? 1 : bytes);
    if (status != ncclSuccess) {
      cudaGetLastError();
      throw OutOfMemory("out of GPU memory: ncclMemAlloc of " + std::to_string(bytes) + " bytes failed (" +
                           nccl_error_text(status) + ")");
    }
    return pointer;
  }

  void release_buffer(Device&, void* pointer) override { ncclMemFree(pointer); }

  std::unique_ptr<RegisteredRange> register_range(void* pointer, size_t bytes, BufferRegistration wanted) override {
    if (wanted == BufferRegistration::kNone) return nullptr;
    auto range = std::make_unique<Registration>(*this);
    if (wanted == BufferRegistration::kSymmetric) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
      ncclWindow_t window = nullptr;
      check(ncclCommWindowRegister(comm_, pointer, bytes, &window, NCCL_WIN_COLL_SYMMETRIC), "ncclCommWindowRegister");
      if (window != nullptr) {
        range->window = window;
        range->granted = BufferRegistration::kSymmetric;
        return range;
      }
      // NCCL decides at creation whether the communicator has symmetric memory, alike on every rank, and then
      // registers nothing: every rank falls back alike.
      range->why = version_ + " has no symmetric memory on this path (it needs every rank to reach every other "
                   "over direct NVLink, and cuMem); local registration instead";
#else
      range->why = version_ + " predates symmetric windows (NCCL 2.27); local registration instead";
#endif
    }
    check(ncclCommRegister(comm_, pointer, bytes, &range->handle), "ncclCommRegister");
    range->granted = BufferRegistration::kLocal;
    return range;
  }

  // A registration of register_range, undone when it is destroyed, unless the communicator was aborted (then
  // NCCL has dropped it already).
  struct Registration final : RegisteredRange {
    explicit Registration(NcclCommunicator& owner) : owner(owner) {}
    ~Registration() override {
      if (owner.comm_ == nullptr) return;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
      if (window != nullptr) ncclCommWindowDeregister(owner.comm_, window);
#endif
      if (handle != nullptr) ncclCommDeregister(owner.comm_, handle);
    }
    BufferRegistration kind() const override { return granted; }
    const std::string& why_less() const override { return why; }

    NcclCommunicator& owner;
    BufferRegistration granted = BufferRegistration::kNone;
    std::string why;
    void* handle = nullptr;  // ncclCommRegister's
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
    ncclWindow_t window = nullptr;
#endif
  };

  std::string transport() const override {
    if (log_path_.empty()) return "unknown (NCCL_DEBUG set by the user)";
    std::ifstream log(log_path_);
    std::stringstream text;
    text << log.rdbuf();
    std::vector<std::string> found = parse_nccl_transports(text.str());
    return found.empty() ? "unknown" : join_transports(found);
  }

 private:
  static cudaStream_t as_cuda(StreamHandle stream) { return static_cast<cudaStream_t>(stream); }

  static double elapsed_seconds(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  void check(ncclResult_t status, const char* call) {
    if (status == ncclSuccess) return;
    std::string detail = comm_ != nullptr ? std::string(" (") + ncclGetLastError(comm_) + ")" : "";
    SB_FATAL(std::string(call) + " -> " + nccl_error_text(status) + detail);
  }

  // In non-blocking mode a call may return ncclInProgress while NCCL finishes it in the background.
  void enqueue(ncclResult_t status, const char* call) {
    if (status == ncclInProgress) {
      settle(call);
      return;
    }
    check(status, call);
  }

  void settle(const std::string& what) {
    const auto start = std::chrono::steady_clock::now();
    ncclResult_t state = ncclInProgress;
    while (true) {
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclInProgress) break;
      check_deadline(start, what);
      std::this_thread::yield();
    }
    check(state, what.c_str());
  }

  // Past --timeout, or a stop signal's grace period: roll call, abort, CommunicationFault.
  void check_deadline(std::chrono::steady_clock::time_point start, const std::string& what) {
    if (elapsed_seconds(start) > timeout_) {
      const std::vector<int> silent = group_.roll_call(roll_call_seconds(timeout_));
      abort_communicator();
      throw_communication_fault(timeout_message(what + " (NCCL)", timeout_, silent));
    }
    if (stop_signal() != 0 && seconds_since_stop_signal() > stop_grace_seconds(timeout_)) {
      fail("[" + progress_text() + "] stopped by " + signal_name(stop_signal()) + ": " + what +
               " (NCCL) did not finish within " + std::to_string(static_cast<int>(stop_grace_seconds(timeout_))) +
               " s of it",
           1.0);
    }
  }

  // A broken peer seen by NCCL itself: name the silent ranks when there are any, abort, throw.
  [[noreturn]] void fail(const std::string& message, double roll_call_window) {
    const std::vector<int> silent = group_.roll_call(roll_call_window);
    abort_communicator();
    throw_communication_fault(message + (silent.empty() ? std::string() : "; suspect: " + rank_list(silent)));
  }

  void settle_quietly(ncclComm_t comm) {
    ncclResult_t state = ncclInProgress;
    const auto start = std::chrono::steady_clock::now();
    while (state == ncclInProgress && elapsed_seconds(start) < timeout_) ncclCommGetAsyncError(comm, &state);
  }

  void abort_communicator() {
    if (!aborted_) {
      aborted_ = true;
      ncclCommAbort(comm_);
      comm_ = nullptr;
    }
  }

  ProcessGroup& group_;
  Device& device_;
  double timeout_;
  ncclComm_t comm_ = nullptr;
  bool aborted_ = false;
  std::string version_;
  std::string log_path_;
  std::unique_ptr<DeviceBuffer> barrier_scratch_;
  std::unique_ptr<DeviceBuffer> staging_;  // input copy for in-place all_to_all
};

}  // namespace

bool nccl_built_in() { return true; }

std::unique_ptr<Communicator> make_nccl_communicator(ProcessGroup& group, Device& device,
                                                     const CommunicatorOptions& options) {
  return std::make_unique<NcclCommunicator>(group, device, options);
}

}  // namespace sb
