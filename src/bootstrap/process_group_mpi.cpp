// The MPI control plane: MPI_Init, local rank from MPI_Comm_split_type(SHARED) (the portable way, what
// NCCL's own MPI example does), node numbering, and MPI_Abort as the fatal path.
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/process_group.h"
#include "src/bootstrap/host_name.h"

#include "src/bootstrap/mpi_check.h"

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
  MpiProcessGroup() : host_(short_host_name()) {
    SB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
    SB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
    SB_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm_));
    SB_MPI_CHECK(MPI_Comm_rank(node_comm_, &local_rank_));
    SB_MPI_CHECK(MPI_Comm_size(node_comm_, &local_size_));
    // A node is named by its lowest world rank; nodes are numbered in that order.
    int leader = rank_;
    SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node_comm_));
    std::vector<int> leaders(static_cast<size_t>(size_));
    SB_MPI_CHECK(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD));
    std::sort(leaders.begin(), leaders.end());
    leaders.erase(std::unique(leaders.begin(), leaders.end()), leaders.end());
    node_count_ = static_cast<int>(leaders.size());
    node_index_ = static_cast<int>(std::lower_bound(leaders.begin(), leaders.end(), leader) - leaders.begin());
  }

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
    SB_MPI_CHECK(MPI_Allgather(send, static_cast<int>(bytes), MPI_BYTE, recv, static_cast<int>(bytes),
                               MPI_BYTE, MPI_COMM_WORLD));
  }
  void broadcast(void* buffer, size_t bytes, int root) override {
    SB_MPI_CHECK(MPI_Bcast(buffer, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD));
  }
  void allreduce_max(double* values, size_t count) override {
    SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(count), MPI_DOUBLE, MPI_MAX,
                               MPI_COMM_WORLD));
  }
  void allreduce_max(int64_t* values, size_t count) override {
    SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(count), MPI_INT64_T, MPI_MAX,
                               MPI_COMM_WORLD));
  }
  void allreduce_sum(int64_t* values, size_t count) override {
    SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(count), MPI_INT64_T, MPI_SUM,
                               MPI_COMM_WORLD));
  }
  void barrier() override { SB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); }
  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);
  }
  void finalize() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      MPI_Comm_free(&node_comm_);
      MPI_Finalize();
    }
  }

 private:
  std::string host_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, node_index_ = 0, node_count_ = 1;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
};

}  // namespace

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
  auto group = std::make_unique<MpiProcessGroup>();
  set_diagnostic_identity(group->rank(), group->host());
  set_abort_handler([](int exit_code) { MPI_Abort(MPI_COMM_WORLD, exit_code); });
  return group;
}

}  // namespace sb
