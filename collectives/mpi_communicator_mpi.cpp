// The mpi backend: collectives through MPI on a duplicate of the process group's communicator, so that benchmark traffic
// never matches the process group's control-plane messages. MPI reads host memory here: buffers of a
// host-accessible device are used as they are, others are staged through host copies. bf16 and fp16 have
// no MPI type, so they travel as 2-byte elements reduced by user-defined operations (sum, prod, max, min;
// avg is a sum divided afterwards, as for every type). Every collective is
// MPI's non-blocking form polled against --timeout (src/bootstrap/mpi_wait.h): a rank that never joins
// ends the job with a message naming it instead of a hang.
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/backends.h"
#include "scalebench/error.h"
#include "scalebench/fault.h"
#include "scalebench/half_precision.h"
#include "src/bootstrap/mpi_check.h"
#include "src/bootstrap/mpi_group.h"
#include "src/bootstrap/mpi_wait.h"

namespace sb {
namespace {

struct Add {
  static float apply(float a, float b) { return a + b; }
};
struct Multiply {
  static float apply(float a, float b) { return a * b; }
};
struct Larger {
  static float apply(float a, float b) { return a > b ? a : b; }
};
struct Smaller {
  static float apply(float a, float b) { return a < b ? a : b; }
};

// MPI_User_function for 16-bit floats: each pair is widened to float, combined and rounded back to nearest
// even, which is exact for the verification data and one rounding per step otherwise.
template <uint16_t (*kNarrow)(float), float (*kWiden)(uint16_t), typename Combine>
void reduce_16bit(void* in, void* inout, int* length, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *length; ++i) b[i] = kNarrow(Combine::apply(kWiden(a[i]), kWiden(b[i])));
}

template <uint16_t (*kNarrow)(float), float (*kWiden)(uint16_t)>
void create_16bit_ops(MPI_Op (&ops)[4]) {
  SB_MPI_CHECK(MPI_Op_create(&reduce_16bit<kNarrow, kWiden, Add>, 1, &ops[0]));
  SB_MPI_CHECK(MPI_Op_create(&reduce_16bit<kNarrow, kWiden, Multiply>, 1, &ops[1]));
  SB_MPI_CHECK(MPI_Op_create(&reduce_16bit<kNarrow, kWiden, Larger>, 1, &ops[2]));
  SB_MPI_CHECK(MPI_Op_create(&reduce_16bit<kNarrow, kWiden, Smaller>, 1, &ops[3]));
}

// Index into a row of four 16-bit operations (sum, prod, max, min); avg reduces with sum.
int op_index(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return 0;
    case ReduceOp::kProd: return 1;
    case ReduceOp::kMax: return 2;
    case ReduceOp::kMin: return 3;
  }
  SB_FATAL("op_index: unknown reduce op");
}

// Averages are sums divided on each rank afterwards: one rounding at the type's precision; integers are
// truncated toward zero, as NCCL's integer average divides.
void divide_in_place(void* data, size_t count, DType type, int divisor) {
  switch (type) {
    case DType::kFloat32: {
      auto* values = static_cast<float*>(data);
      for (size_t i = 0; i < count; ++i) values[i] /= static_cast<float>(divisor);
      return;
    }
    case DType::kFloat64: {
      auto* values = static_cast<double*>(data);
      for (size_t i = 0; i < count; ++i) values[i] /= divisor;
      return;
    }
    case DType::kBFloat16: {
      auto* values = static_cast<uint16_t*>(data);
      for (size_t i = 0; i < count; ++i)
        values[i] = float_to_bf16_bits(bf16_bits_to_float(values[i]) / divisor);
      return;
    }
    case DType::kFloat16: {
      auto* values = static_cast<uint16_t*>(data);
      for (size_t i = 0; i < count; ++i)
        values[i] = float_to_fp16_bits(fp16_bits_to_float(values[i]) / divisor);
      return;
    }
    case DType::kInt32: {
      auto* values = static_cast<int32_t*>(data);
      for (size_t i = 0; i < count; ++i) values[i] /= divisor;
      return;
    }
    case DType::kUInt8: break;  // not a collective type
  }
  SB_FATAL("divide_in_place: no average for this dtype");
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(ProcessGroup& group, Device& device, double timeout_seconds)
      : group_(group), device_(device), timeout_(timeout_seconds) {
    SB_MPI_CHECK(MPI_Comm_dup(detail::mpi_comm_of(group), &comm_));
    SB_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    SB_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    SB_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    SB_CHECK(group.rank() == rank_ && group.size() == size_,
             "the mpi backend's communicator and its process group disagree on rank or size");
    SB_MPI_CHECK(MPI_Type_contiguous(2, MPI_BYTE, &half_type_));
    SB_MPI_CHECK(MPI_Type_commit(&half_type_));
    create_16bit_ops<float_to_bf16_bits, bf16_bits_to_float>(bf16_ops_);
    create_16bit_ops<float_to_fp16_bits, fp16_bits_to_float>(fp16_ops_);
  }

  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;  // MPI_Finalize already released everything; freeing now would be an error
    if (communication_abandoned()) return;  // collectives with a dead peer may still be pending
    for (MPI_Op& op : fp16_ops_) SB_MPI_CHECK(MPI_Op_free(&op));
    for (MPI_Op& op : bf16_ops_) SB_MPI_CHECK(MPI_Op_free(&op));
    SB_MPI_CHECK(MPI_Type_free(&half_type_));
    SB_MPI_CHECK(MPI_Comm_free(&comm_));
  }

  Backend backend() const override { return Backend::kMpi; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::string library_version() const override {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    SB_MPI_CHECK(MPI_Get_library_version(text, &length));
    std::string version(text, static_cast<size_t>(length));
    return version.substr(0, version.find_first_of(",\n"));
  }

  void all_reduce(const void* send, void* recv, size_t count, DType type, ReduceOp op,
                  StreamHandle stream) override {
    check_count("all_reduce", count);
    if (count == 0) return;
    const size_t bytes = count * dtype_size(type);
    device_.synchronize(stream);
    const bool in_place = send == recv;
    const void* host_send = in_place ? MPI_IN_PLACE : host_input(send, bytes, send_staging_, stream);
    void* host_recv = in_place ? host_input_output(recv, bytes, stream) : host_output(recv, bytes);
    MPI_Request request;
    SB_MPI_CHECK(MPI_Iallreduce(host_send, host_recv, static_cast<int>(count), mpi_type(type), mpi_op(type, op), comm_,
                                &request));
    complete(&request, "all_reduce", count, type);
    if (op == ReduceOp::kAvg) divide_in_place(host_recv, count, type, size_);
    finish(recv, host_recv, bytes, stream);
  }

  void reduce_scatter(const void* send, void* recv, size_t recv_count, DType type, ReduceOp op,
                      StreamHandle stream) override {
    check_count("reduce_scatter", recv_count);
    if (recv_count == 0) return;
    const size_t block_bytes = recv_count * dtype_size(type);
    const size_t total_bytes = block_bytes * static_cast<size_t>(size_);
    device_.synchronize(stream);
    const bool in_place = recv == static_cast<const char*>(send) + static_cast<size_t>(rank_) * block_bytes;
    void* result = nullptr;
    if (in_place) {
      // MPI's in-place form reads every block from the receive buffer and leaves the result at its front,
      // where NCCL's leaves it at this rank's block: reduce in the whole buffer, then move the front block.
      // The buffer is the caller's writable recv buffer seen through `send`, hence the const_cast.
      result = host_input_output(const_cast<void*>(send), total_bytes, stream);
      MPI_Request request;
      SB_MPI_CHECK(MPI_Ireduce_scatter_block(MPI_IN_PLACE, result, static_cast<int>(recv_count), mpi_type(type),
                                             mpi_op(type, op), comm_, &request));
      complete(&request, "reduce_scatter", recv_count, type);
    } else {
      const void* host_send = host_input(send, total_bytes, send_staging_, stream);
      result = host_output(recv, block_bytes);
      MPI_Request request;
      SB_MPI_CHECK(MPI_Ireduce_scatter_block(host_send, result, static_cast<int>(recv_count), mpi_type(type),
                                             mpi_op(type, op), comm_, &request));
      complete(&request, "reduce_scatter", recv_count, type);
    }
    if (op == ReduceOp::kAvg) divide_in_place(result, recv_count, type, size_);
    finish(recv, result, block_bytes, stream);
  }

  void all_gather(const void* send, void* recv, size_t send_count, DType type, StreamHandle stream) override {
    check_count("all_gather", send_count);
    if (send_count == 0) return;
    const size_t block_bytes = send_count * dtype_size(type);
    const size_t total_bytes = block_bytes * static_cast<size_t>(size_);
    const size_t own_offset = static_cast<size_t>(rank_) * block_bytes;
    device_.synchronize(stream);
    const int count = static_cast<int>(send_count);
    void* host_recv = host_output(recv, total_bytes);
    if (send == static_cast<const char*>(recv) + own_offset) {
      if (!device_.host_accessible()) {
        device_.copy_to_host(static_cast<char*>(host_recv) + own_offset, send, block_bytes, stream);
        device_.synchronize(stream);
      }
      // The send arguments are ignored with MPI_IN_PLACE; they repeat the receive ones for strict checkers.
      MPI_Request request;
      SB_MPI_CHECK(MPI_Iallgather(MPI_IN_PLACE, count, mpi_type(type), host_recv, count, mpi_type(type), comm_,
                                  &request));
      complete(&request, "all_gather", send_count, type);
    } else {
      const void* host_send = host_input(send, block_bytes, send_staging_, stream);
      MPI_Request request;
      SB_MPI_CHECK(MPI_Iallgather(host_send, count, mpi_type(type), host_recv, count, mpi_type(type), comm_, &request));
      complete(&request, "all_gather", send_count, type);
    }
    finish(recv, host_recv, total_bytes, stream);
  }

  // NCCL reads `send` on the root only and writes `recv` everywhere; MPI_Bcast has one buffer, so the root
  // first copies its input into the buffer that is broadcast.
  void broadcast(const void* send, void* recv, size_t count, DType type, int root,
                 StreamHandle stream) override {
    check_count("broadcast", count);
    if (root < 0 || root >= size_) {
      throw UsageError("broadcast root " + std::to_string(root) + " is not a rank of a " +
                       std::to_string(size_) + "-rank world");
    }
    if (count == 0) return;
    const size_t bytes = count * dtype_size(type);
    device_.synchronize(stream);
    void* host_recv = host_output(recv, bytes);
    if (rank_ == root) {
      if (!device_.host_accessible()) {
        device_.copy_to_host(host_recv, send, bytes, stream);
        device_.synchronize(stream);
      } else if (send != recv) {
        std::memmove(recv, send, bytes);
      }
    }
    MPI_Request request;
    SB_MPI_CHECK(MPI_Ibcast(host_recv, static_cast<int>(count), mpi_type(type), root, comm_, &request));
    complete(&request, "broadcast", count, type);
    finish(recv, host_recv, bytes, stream);
  }

  void all_to_all(const void* send, void* recv, size_t count_per_peer, DType type,
                  StreamHandle stream) override {
    check_count("all_to_all", count_per_peer);
    if (count_per_peer == 0) return;
    const size_t total_bytes = count_per_peer * dtype_size(type) * static_cast<size_t>(size_);
    const int count = static_cast<int>(count_per_peer);
    device_.synchronize(stream);
    void* host_recv = nullptr;
    if (send == recv) {  // MPI-3 in-place all-to-all
      host_recv = host_input_output(recv, total_bytes, stream);
      MPI_Request request;
      SB_MPI_CHECK(MPI_Ialltoall(MPI_IN_PLACE, count, mpi_type(type), host_recv, count, mpi_type(type), comm_,
                                 &request));
      complete(&request, "all_to_all", count_per_peer, type);
    } else {
      const void* host_send = host_input(send, total_bytes, send_staging_, stream);
      host_recv = host_output(recv, total_bytes);
      MPI_Request request;
      SB_MPI_CHECK(MPI_Ialltoall(host_send, count, mpi_type(type), host_recv, count, mpi_type(type), comm_, &request));
      complete(&request, "all_to_all", count_per_peer, type);
    }
    finish(recv, host_recv, total_bytes, stream);
  }

  void barrier(StreamHandle stream) override {
    device_.synchronize(stream);
    MPI_Request request;
    SB_MPI_CHECK(MPI_Ibarrier(comm_, &request));
    detail::wait_for_request(&request, "barrier (MPI)", timeout_, group_);
  }

  // Collectives have completed when they return (their deadline is inside them, in complete()), and what
  // is left on the stream is local device work, so waiting needs no timeout.
  void wait(StreamHandle stream, const std::string&) override { device_.synchronize(stream); }

  bool supports_graph_capture() const override { return false; }
  std::string transport() const override { return "MPI"; }

 private:
  static void check_count(const char* operation, size_t count) {
    if (count > static_cast<size_t>(INT_MAX)) {
      throw UsageError(std::string(operation) + " of " + std::to_string(count) +
                       " elements exceeds the mpi backend's limit of INT_MAX (" + std::to_string(INT_MAX) +
                       ") elements per block, the largest count an MPI call takes");
    }
  }

  void complete(MPI_Request* request, const char* operation, size_t count, DType type) {
    const std::string what = std::string(operation) + " of " + std::to_string(count) + " " + dtype_name(type);
    detail::wait_for_request(request, what + " (MPI)", timeout_, group_);
  }

  MPI_Datatype mpi_type(DType type) const {
    switch (type) {
      case DType::kFloat32: return MPI_FLOAT;
      case DType::kFloat64: return MPI_DOUBLE;
      case DType::kInt32: return MPI_INT32_T;
      case DType::kUInt8: return MPI_UINT8_T;
      case DType::kBFloat16:
      case DType::kFloat16: return half_type_;
    }
    SB_FATAL("mpi_type: unknown dtype");
  }

  MPI_Op mpi_op(DType type, ReduceOp op) const {
    if (type == DType::kBFloat16) return bf16_ops_[op_index(op)];
    if (type == DType::kFloat16) return fp16_ops_[op_index(op)];
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: return MPI_SUM;
      case ReduceOp::kProd: return MPI_PROD;
      case ReduceOp::kMax: return MPI_MAX;
      case ReduceOp::kMin: return MPI_MIN;
    }
    SB_FATAL("mpi_op: unknown reduce op");
  }

  // Host views of device buffers. The stream has been synchronized before any of these is called.
  const void* host_input(const void* device_buffer, size_t bytes, std::vector<unsigned char>& staging,
                         StreamHandle stream) {
    if (device_.host_accessible()) return device_buffer;
    staging.resize(bytes);
    device_.copy_to_host(staging.data(), device_buffer, bytes, stream);
    device_.synchronize(stream);
    return staging.data();
  }
  void* host_output(void* device_buffer, size_t bytes) {
    if (device_.host_accessible()) return device_buffer;
    recv_staging_.resize(bytes);
    return recv_staging_.data();
  }
  void* host_input_output(void* device_buffer, size_t bytes, StreamHandle stream) {
    if (device_.host_accessible()) return device_buffer;
    return const_cast<void*>(host_input(device_buffer, bytes, recv_staging_, stream));
  }

  // Puts `bytes` of result at `recv`. Synchronizes after staging so that the staging buffer may be reused
  // and the collective is complete on return, as MPI's are.
  void finish(void* recv, const void* host_result, size_t bytes, StreamHandle stream) {
    if (device_.host_accessible()) {
      if (host_result != recv) std::memmove(recv, host_result, bytes);
      return;
    }
    device_.copy_from_host(recv, host_result, bytes, stream);
    device_.synchronize(stream);
  }

  ProcessGroup& group_;  // for the roll call after a timeout
  Device& device_;
  double timeout_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  MPI_Datatype half_type_ = MPI_DATATYPE_NULL;
  MPI_Op bf16_ops_[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};  // sum, prod, max, min
  MPI_Op fp16_ops_[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  std::vector<unsigned char> send_staging_;
  std::vector<unsigned char> recv_staging_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(ProcessGroup& group, Device& device,
                                                    const CommunicatorOptions& options) {
  return std::make_unique<MpiCommunicator>(group, device, options.timeout_seconds);
}

}  // namespace sb
