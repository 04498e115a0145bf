// A one-process ProcessGroup for unit tests: every collective is the identity (a job of one rank).
#pragma once

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "scalebench/process_group.h"

namespace sb {

class OneRankGroup final : public ProcessGroup {
 public:
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
    return color < 0 ? nullptr : std::make_unique<OneRankGroup>();
  }
  [[noreturn]] void abort(int) override { std::abort(); }
  void finalize() override {}

 private:
  std::string host_ = "test-host";
};

}  // namespace sb
