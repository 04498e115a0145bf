// The one-process group used when scalebench is built without MPI.
#include <cstdlib>
#include <cstring>
#include <memory>

#include "scalebench/error.h"
#include "scalebench/process_group.h"
#include "src/bootstrap/host_name.h"

namespace sb {
namespace {

class SingleProcessGroup final : public ProcessGroup {
 public:
  SingleProcessGroup() : host_(short_host_name()) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  int node_index() const override { return 0; }
  int node_count() const override { return 1; }
  const std::string& host() const override { return host_; }
  std::string library_version() const override { return "none"; }
  bool is_mpi() const override { return false; }
  void allgather(const void* send, void* recv, size_t bytes) override { std::memmove(recv, send, bytes); }
  void broadcast(void*, size_t, int) override {}
  void allreduce_max(double*, size_t) override {}
  void allreduce_max(int64_t*, size_t) override {}
  void allreduce_sum(int64_t*, size_t) override {}
  void barrier() override {}
  std::unique_ptr<ProcessGroup> split(int color, int) override {
    if (color < 0) return nullptr;
    return std::make_unique<SingleProcessGroup>();
  }
  [[noreturn]] void abort(int exit_code) override { std::_Exit(exit_code); }
  void finalize() override {}

 private:
  std::string host_;
};

}  // namespace

std::unique_ptr<ProcessGroup> start_process_group(int*, char***) {
  auto group = std::make_unique<SingleProcessGroup>();
  set_diagnostic_identity(0, group->host());
  return group;
}

}  // namespace sb
