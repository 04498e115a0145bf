// `scalebench bandwidth`: nccl-tests semantics on scalebench's Communicator. Options, the per-size result
// model, the bus-bandwidth factors, and the sweep entry point. Printers live in src/report.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "scalebench/communicator.h"
#include "scalebench/device.h"
#include "scalebench/dtype.h"
#include "scalebench/pattern.h"
#include "scalebench/process_group.h"
#include "scalebench/stats.h"

namespace sb {

const char* collective_name(CollectiveOp op);  // "all_reduce", ...
CollectiveOp parse_collective(const std::string& text);  // throws UsageError
std::vector<CollectiveOp> all_collectives();
const char* reduce_op_name(ReduceOp op);  // "sum", "prod", "max", "min", "avg"
ReduceOp parse_reduce_op(const std::string& text);  // throws UsageError
std::vector<ReduceOp> all_reduce_ops();   // nccl-tests' `-o all`: sum, prod, max, min, avg
std::vector<DType> collective_dtypes();   // `-d all`: fp32, bf16, fp16, fp64, int32

// nccl-tests doc/PERFORMANCE.md: all_reduce 2(n-1)/n; reduce_scatter, all_gather, all_to_all (n-1)/n;
// broadcast 1; the same for every reduce op and element type, as nccl-tests has it. With one rank the ring factors are 0, as nccl-tests computes them: no byte crosses a link,
// so a one-rank run reports busbw 0 (broadcast excepted) rather than a memory-copy rate dressed as a link.
double bus_bandwidth_factor(CollectiveOp op, int nranks);

struct BandwidthOptions {
  std::vector<CollectiveOp> ops;  // in the order they run
  uint64_t min_bytes = 1024;
  uint64_t max_bytes = 0;         // 0: the device's default (1 GiB on CUDA, 16 MiB on the CPU)
  double factor = 2.0;            // geometric step between sizes
  // Each collective runs once per element type and, if it reduces (all_reduce, reduce_scatter), once per
  // reduce op, in these orders (nccl-tests' -d all / -o all); a collective that does not reduce runs once
  // per type whatever the reduce ops.
  std::vector<DType> dtypes{DType::kFloat32};
  std::vector<ReduceOp> reduces{ReduceOp::kSum};
  int root = 0;
  int warmup_iters = 5;
  int iters = 20;
  bool run_out_of_place = true;
  bool run_in_place = true;
  bool graph = false;  // capture the timed iterations in a device graph and replay it
  bool check = false;  // exact data; count wrong elements per size
  // The two buffers registered with NCCL before the sweep: local user-buffer registration (zero-copy) or a
  // symmetric window (NCCL's symmetric kernels), nccl-tests' -R 1 and -R 2.
  BufferRegistration registration = BufferRegistration::kNone;
  // Per-iteration events give every sample (p50/p99), but an event between two collectives keeps the
  // second from overlapping the first one's tail; aggregate timing is nccl-tests' method: one event pair
  // around all timed iterations, one sample (total / iters).
  bool aggregate_timing = false;
};

// The sizes the sweep visits: min, min*factor, ... up to max, each rounded down to a whole number of
// elements of `dtype` per rank block (nccl-tests rounds the same way); duplicates after rounding are dropped.
std::vector<uint64_t> sweep_sizes(const BandwidthOptions& options, CollectiveOp op, DType dtype, int nranks);

// The reduce ops `op` runs with: options.reduces for a reducing collective, else only the first (unused).
std::vector<ReduceOp> sweep_reduce_ops(const BandwidthOptions& options, CollectiveOp op);

struct PlacementResult {
  bool measured = false;
  SampleStats time_us;        // per-iteration time, each the max across ranks
  std::vector<double> samples_us;
  double algbw_gbps = 0;      // from time_us.p50, GB = 1e9 bytes
  double busbw_gbps = 0;
  int64_t wrong = -1;         // -1: not checked
};

struct SizeResult {
  CollectiveOp op = CollectiveOp::kAllReduce;
  DType dtype = DType::kFloat32;
  ReduceOp reduce = ReduceOp::kSum;  // meaningless (printed "none") where op does not reduce
  uint64_t size_bytes = 0;    // the full buffer, as nccl-tests counts it
  uint64_t count = 0;         // elements in that buffer
  PlacementResult out_of_place;
  PlacementResult in_place;
};

struct RankDevice {
  int rank = 0;
  std::string host;
  int pid = 0;
  DeviceDescription device;
};

struct BandwidthReport {
  BandwidthOptions options;
  int nranks = 1;
  std::string backend;             // "nccl", "mpi", "local"
  std::string library_version;     // of the communicator's library
  std::string transport;           // as the library reported it
  std::string emulate = "none";    // --emulate: none, host, socket (the path forced on NCCL)
  std::string mpi_version;
  std::string cuda_runtime_version;  // empty on the CPU device
  std::string cuda_driver_version;
  std::vector<RankDevice> devices;
  std::vector<SizeResult> results;
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> environment;  // NCCL_*, CUDA_VISIBLE_DEVICES, ...
  std::string started_at;          // ISO 8601, UTC
  // What NCCL granted for options.registration (kNone when nothing was asked), and why less ("" when not).
  BufferRegistration registration_granted = BufferRegistration::kNone;
  std::string registration_why_less;
  std::string status = "ok";       // "ok", or "failed" when the sweep stopped early
  std::string error;               // why it stopped, when it did

  int64_t total_wrong() const;     // -1 when nothing was checked
  double peak_busbw_gbps(CollectiveOp op) const;
};

}  // namespace sb

namespace sb {

// Called on rank 0 as results arrive, so a long sweep prints each row when it is measured.
struct SweepCallbacks {
  std::function<void(const SizeResult&)> on_size_done;
  std::function<void(CollectiveOp)> on_op_done;
};

// Collective: every rank runs the same sweep. Results are appended to report.results as they are
// measured (identical on every rank), so whatever was measured survives a later failure. Throws
// UsageError for options that cannot run (same on every rank) and RuntimeFailure for out-of-memory
// (agreed across ranks) or a timeout.
void run_bandwidth_sweep(const BandwidthOptions& options, ProcessGroup& group, Device& device,
                         Communicator& communicator, BandwidthReport& report, const SweepCallbacks& callbacks);

}  // namespace sb
