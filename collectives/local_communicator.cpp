// The local backend: a world of one rank, where every collective reduces to copying the caller's input to
// its output on the device stream (nothing when in place). It lets single-process runs and CI exercise the
// same code paths as multi-rank runs, and it can be captured into a graph whenever the device can.
#include <string>

#include "collectives/backends.h"
#include "scalebench/error.h"

namespace sb {
namespace {

class LocalCommunicator final : public Communicator {
 public:
  explicit LocalCommunicator(Device& device) : device_(device) {}

  Backend backend() const override { return Backend::kLocal; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string library_version() const override { return "local"; }

  // Every reduce op (sum, prod, max, min, avg) of a single contribution is the contribution itself.
  void all_reduce(const void* send, void* recv, size_t count, DType type, ReduceOp,
                  StreamHandle stream) override {
    copy(send, recv, count, type, stream);
  }
  void reduce_scatter(const void* send, void* recv, size_t recv_count, DType type, ReduceOp,
                      StreamHandle stream) override {
    copy(send, recv, recv_count, type, stream);
  }
  void all_gather(const void* send, void* recv, size_t send_count, DType type, StreamHandle stream) override {
    copy(send, recv, send_count, type, stream);
  }
  void broadcast(const void* send, void* recv, size_t count, DType type, int root,
                 StreamHandle stream) override {
    if (root != 0) {
      throw UsageError("broadcast root " + std::to_string(root) + " is not a rank of a 1-rank world");
    }
    copy(send, recv, count, type, stream);
  }
  void all_to_all(const void* send, void* recv, size_t count_per_peer, DType type,
                  StreamHandle stream) override {
    copy(send, recv, count_per_peer, type, stream);
  }
  void barrier(StreamHandle) override {}

  // Only local copies are pending on the stream, and they cannot hang on a peer, so no timeout is needed.
  void wait(StreamHandle stream, const std::string&) override { device_.synchronize(stream); }

  bool supports_graph_capture() const override { return device_.supports_graphs(); }
  std::string transport() const override { return "none"; }

 private:
  // With one rank, rank * count is 0, so every in-place form of NCCL's pointer rules is send == recv.
  void copy(const void* send, void* recv, size_t count, DType type, StreamHandle stream) {
    if (send == recv || count == 0) return;
    device_.copy_on_device(recv, send, count * dtype_size(type), stream);
  }

  Device& device_;
};

}  // namespace

std::unique_ptr<Communicator> make_local_communicator(Device& device) {
  return std::make_unique<LocalCommunicator>(device);
}

}  // namespace sb
