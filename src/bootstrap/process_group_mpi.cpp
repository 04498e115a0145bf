// The MPI control plane: MPI_Init, local rank from MPI_Comm_split_type(SHARED) (the portable way, what
// NCCL's own MPI example does), node numbering, and MPI_Abort as the fatal path. Host collectives are
// non-blocking calls polled with the --timeout deadline (src/bootstrap/mpi_wait.h), so a peer that never
// arrives ends the job with a message instead of a hang.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/fault.h"
#include "scalebench/process_group.h"
#include "src/bootstrap/host_name.h"
#include "src/bootstrap/mpi_check.h"
#include "src/bootstrap/mpi_group.h"
#include "src/bootstrap/mpi_wait.h"

namespace sb {
namespace detail {
std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}
}  // namespace detail

namespace {

class MpiProcessGroup final : public ProcessGroup {
 public:
  // The group of `comm`'s ranks; it owns `comm` unless it is MPI_COMM_WORLD. Node numbers are this group's own.
  explicit MpiProcessGroup(MPI_Comm comm) : host_(short_host_name()), comm_(comm) {
    SB_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    SB_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    SB_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    SB_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm_));
    SB_MPI_CHECK(MPI_Comm_rank(node_comm_, &local_rank_));
    SB_MPI_CHECK(MPI_Comm_size(node_comm_, &local_size_));
    // A node is named by its lowest rank; nodes are numbered in that order.
    int leader = rank_;
    SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node_comm_));
    std::vector<int> leaders(static_cast<size_t>(size_));
    SB_MPI_CHECK(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm_));
    std::sort(leaders.begin(), leaders.end());
    leaders.erase(std::unique(leaders.begin(), leaders.end()), leaders.end());
    node_count_ = static_cast<int>(leaders.size());
    node_index_ = static_cast<int>(std::lower_bound(leaders.begin(), leaders.end(), leader) - leaders.begin());
    // The roll call's messages travel apart from every other message, so they can never match a
    // collective's that is still pending when the roll call is held. Only the world holds roll calls.
    if (comm_ == MPI_COMM_WORLD) {
      SB_MPI_CHECK(MPI_Comm_dup(comm_, &roll_call_comm_));
      SB_MPI_CHECK(MPI_Comm_set_errhandler(roll_call_comm_, MPI_ERRORS_RETURN));
    }
  }
  ~MpiProcessGroup() override {
    // The world group is finalized in finalize(); a split group frees its communicators here, unless a fault
    // left operations pending on them or MPI has already ended.
    if (comm_ == MPI_COMM_WORLD) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized || communication_abandoned()) return;
    MPI_Comm_free(&node_comm_);
    MPI_Comm_free(&comm_);
  }

  MPI_Comm comm() const { return comm_; }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  int node_index() const override { return node_index_; }
  int node_count() const override { return node_count_; }
  const std::string& host() const override { return host_; }
  bool is_mpi() const override { return true; }

  std::string library_version() const override {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(text, &length);
    std::string version(text, static_cast<size_t>(length));
    version = version.substr(0, version.find_first_of(",\n"));
    return version;
  }

  void allgather(const void* send, void* recv, size_t bytes) override {
    MPI_Request request;
    SB_MPI_CHECK(MPI_Iallgather(send, static_cast<int>(bytes), MPI_BYTE, recv, static_cast<int>(bytes), MPI_BYTE,
                                comm_, &request));
    detail::wait_for_request(&request, "a host all-gather between ranks", timeout(), *this);
  }
  void broadcast(void* buffer, size_t bytes, int root) override {
    MPI_Request request;
    SB_MPI_CHECK(MPI_Ibcast(buffer, static_cast<int>(bytes), MPI_BYTE, root, comm_, &request));
    detail::wait_for_request(&request, "a host broadcast from rank " + std::to_string(root), timeout(), *this);
  }
  void allreduce_max(double* values, size_t count) override {
    allreduce(values, count, MPI_DOUBLE, MPI_MAX);
  }
  void allreduce_max(int64_t* values, size_t count) override {
    allreduce(values, count, MPI_INT64_T, MPI_MAX);
  }
  void allreduce_sum(int64_t* values, size_t count) override {
    allreduce(values, count, MPI_INT64_T, MPI_SUM);
  }
  void barrier() override {
    MPI_Request request;
    SB_MPI_CHECK(MPI_Ibarrier(comm_, &request));
    detail::wait_for_request(&request, "a host barrier", timeout(), *this);
  }

  // A split group's roll call is the world's: every rank that timed out, in a team or idle beside it, calls the
  // same one, so the healthy ranks hear each other whichever collective each was waiting in, and the silent ranks
  // are named by their world rank.
  std::vector<int> roll_call(double window_seconds) override {
    if (world_ != nullptr) return world_->roll_call(window_seconds);
    if (!roll_call_held_) {
      roll_call_held_ = true;
      silent_ = hold_roll_call(window_seconds);
    }
    return silent_;
  }

  std::unique_ptr<ProcessGroup> split(int color, int key) override {
    MPI_Comm part = MPI_COMM_NULL;
    // MPI_Comm_split has no non-blocking form: the ranks agree first, with the deadline, that all are here.
    barrier();
    SB_MPI_CHECK(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &part));
    if (part == MPI_COMM_NULL) return nullptr;
    auto team = std::make_unique<MpiProcessGroup>(part);
    team->world_ = world_ != nullptr ? world_ : this;
    team->set_timeout(timeout());
    return team;
  }
  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);
  }
  void finalize() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    // After a communication fault, operations with a dead or stalled peer are still pending, and
    // MPI_Finalize would wait for them: the process ends without it (mpirun then reports the exit code).
    if (!finalized && !communication_abandoned()) {
      SB_CHECK(comm_ == MPI_COMM_WORLD, "finalize() is the world group's");
      MPI_Comm_free(&roll_call_comm_);
      MPI_Comm_free(&node_comm_);
      MPI_Finalize();
    }
  }

 private:
  std::string host_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, node_index_ = 0, node_count_ = 1;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  MPI_Comm roll_call_comm_ = MPI_COMM_NULL;  // the world's only: a split group's roll call is the world's
  MpiProcessGroup* world_ = nullptr;          // the world group, for a split group; nullptr for the world's own
  bool roll_call_held_ = false;
  std::vector<int> silent_;

  std::vector<int> hold_roll_call(double window_seconds) {
    std::vector<int> silent;
    // Requests to silent ranks never complete; their buffers are left to the process's end on purpose.
    auto* answers = new std::vector<int>(static_cast<size_t>(size_), -1);
    auto* receives = new std::vector<MPI_Request>(static_cast<size_t>(size_), MPI_REQUEST_NULL);
    auto* sends = new std::vector<MPI_Request>(static_cast<size_t>(size_), MPI_REQUEST_NULL);
    auto* me = new int(rank_);
    constexpr int kTag = 7;
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      MPI_Irecv(&(*answers)[static_cast<size_t>(peer)], 1, MPI_INT, peer, kTag, roll_call_comm_,
                &(*receives)[static_cast<size_t>(peer)]);
      MPI_Isend(me, 1, MPI_INT, peer, kTag, roll_call_comm_, &(*sends)[static_cast<size_t>(peer)]);
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<bool> heard(static_cast<size_t>(size_), false);
    heard[static_cast<size_t>(rank_)] = true;
    int missing = size_ - 1;
    while (missing > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < window_seconds) {
      for (int peer = 0; peer < size_; ++peer) {
        if (heard[static_cast<size_t>(peer)]) continue;
        int done = 0;
        // An error here (a broken connection to a dead peer) leaves the peer silent.
        if (MPI_Test(&(*receives)[static_cast<size_t>(peer)], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) {
          heard[static_cast<size_t>(peer)] = true;
          --missing;
        }
      }
      std::this_thread::yield();
    }
    for (int peer = 0; peer < size_; ++peer) {
      if (!heard[static_cast<size_t>(peer)]) silent.push_back(peer);
    }
    return silent;
  }

  void allreduce(void* values, size_t count, MPI_Datatype type, MPI_Op op) {
    MPI_Request request;
    SB_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values, static_cast<int>(count), type, op, comm_, &request));
    detail::wait_for_request(&request, "a host all-reduce between ranks", timeout(), *this);
  }
};

}  // namespace

namespace detail {
MPI_Comm mpi_comm_of(const ProcessGroup& group) {
  const auto* mpi = dynamic_cast<const MpiProcessGroup*>(&group);
  SB_CHECK(mpi != nullptr, "the mpi backend needs an MPI process group");
  return mpi->comm();
}
}  // namespace detail

std::unique_ptr<ProcessGroup> start_process_group(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    // FUNNELED: only the main thread calls MPI; the NCCL watchdog never does.
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      throw RuntimeFailure("MPI_Init_thread failed");
    }
  }
  // Library errors come back as codes so that SB_MPI_CHECK can name the call.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  auto group = std::make_unique<MpiProcessGroup>(MPI_COMM_WORLD);
  set_diagnostic_identity(group->rank(), group->host());
  set_abort_handler([](int exit_code) { MPI_Abort(MPI_COMM_WORLD, exit_code); });
  return group;
}

}  // namespace sb
