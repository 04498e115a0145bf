// The host-side control plane every rank shares: who am I, who else is here, and a few small host
// collectives for agreement (configuration hashes, NCCL unique ids, per-iteration maxima). Implemented over
// MPI when scalebench is built with it, and as a one-process group otherwise. Data-plane collectives on
// device buffers are the Communicator's job (communicator.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sb {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;  // rank among the processes of this node
  virtual int local_size() const = 0;
  virtual int node_index() const = 0;  // 0..node_count-1, ordered by the lowest world rank on each node
  virtual int node_count() const = 0;
  virtual const std::string& host() const = 0;
  virtual std::string library_version() const = 0;  // "Open MPI v4.1.6", or "none"
  virtual bool is_mpi() const = 0;

  // Every rank contributes `bytes_per_rank` bytes; `recv` holds size() * bytes_per_rank bytes in rank order.
  virtual void allgather(const void* send, void* recv, size_t bytes_per_rank) = 0;
  virtual void broadcast(void* buffer, size_t bytes, int root) = 0;
  // Element-wise maximum / sum across ranks, in place.
  virtual void allreduce_max(double* values, size_t count) = 0;
  virtual void allreduce_max(int64_t* values, size_t count) = 0;
  virtual void allreduce_sum(int64_t* values, size_t count) = 0;
  virtual void barrier() = 0;
  // After a collective timed out on this rank: which other ranks do not answer within `window_seconds`.
  // Every rank that timed out calls it (each sends to all and listens to all, point-to-point on a
  // communicator of its own), so the healthy ranks hear each other and a stalled or dead rank stays silent.
  // Called once per process (later calls return the first answer); afterwards the job must end. A group
  // without point-to-point messages (one process, test fakes) has nobody to hear: none silent.
  virtual std::vector<int> roll_call(double /*window_seconds*/) { return {}; }
  // Host collectives give up after this many seconds (--timeout): a roll call names the silent ranks and
  // CommunicationFault is thrown (include/scalebench/fault.h).
  void set_timeout(double seconds) { timeout_seconds_ = seconds; }
  double timeout() const { return timeout_seconds_; }
  // Collective over this group: the ranks passing the same `color` (≥ 0) form a new group, ordered by `key`
  // (ties by rank here), as MPI_Comm_split does; a rank passing a negative color joins none and gets nullptr.
  // The new group's collectives never match this one's. `--gpus-sweep` trains its k-rank groups on them.
  virtual std::unique_ptr<ProcessGroup> split(int color, int key) = 0;
  // Ends every rank of the job with `exit_code` (MPI_Abort when MPI is up).
  [[noreturn]] virtual void abort(int exit_code) = 0;
  // Orderly shutdown; called once at the end of main.
  virtual void finalize() = 0;

  // Convenience built on the primitives above.
  std::vector<std::string> allgather_strings(const std::string& mine);
  int64_t max_across_ranks(int64_t value);

 private:
  double timeout_seconds_ = 300;  // CommonOptions' default, until the command line is agreed on
};

// Starts MPI when built with it (a single process without mpirun becomes a one-rank job) and returns the
// world group; installs the abort handler used by fatal().
std::unique_ptr<ProcessGroup> start_process_group(int* argc, char*** argv);

}  // namespace sb
