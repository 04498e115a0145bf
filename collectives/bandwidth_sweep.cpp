// The bandwidth sweep (nccl-tests' method on scalebench's Communicator): for each collective and size,
// warm up, time every iteration between device events (optionally replayed from a captured graph), take
// each iteration's maximum across ranks (the slowest rank gates a collective), then optionally re-run once
// on exact data and count wrong elements on every rank.
#include <algorithm>
#include <memory>

#include "collectives/collective_placement.h"
#include "scalebench/bandwidth.h"
#include "scalebench/error.h"
#include "scalebench/fault.h"

namespace sb {
namespace {

uint64_t largest_size(const BandwidthOptions& options, int nranks) {
  uint64_t largest = 0;
  for (CollectiveOp op : options.ops) {
    for (DType dtype : options.dtypes) {
      for (uint64_t size : sweep_sizes(options, op, dtype, nranks)) largest = std::max(largest, size);
    }
  }
  return largest;
}

// A buffer from the communicator's allocator, released through it (deregistering first where needed).
class CollectiveBuffer {
 public:
  CollectiveBuffer(Communicator& communicator, Device& device, size_t bytes)
      : communicator_(communicator), device_(device), data_(communicator.allocate_buffer(device, bytes)) {}
  ~CollectiveBuffer() { communicator_.release_buffer(device_, data_); }
  CollectiveBuffer(const CollectiveBuffer&) = delete;
  CollectiveBuffer& operator=(const CollectiveBuffer&) = delete;
  void* data() const { return data_; }

 private:
  Communicator& communicator_;
  Device& device_;
  void* data_;
};

struct SweepBuffers {
  std::unique_ptr<CollectiveBuffer> first, second;
  RangeRegistrations registered;  // destroyed first: before the buffers they cover
};

// Allocation is the one place a rank alone can fail before the collectives start: agree on it.
SweepBuffers allocate_agreed(ProcessGroup& group, Device& device, Communicator& communicator, uint64_t bytes,
                             BufferRegistration registration) {
  SweepBuffers buffers;
  buffers.registered = RangeRegistrations(registration);
  std::string error;
  try {
    buffers.first = std::make_unique<CollectiveBuffer>(communicator, device, bytes);
    buffers.second = std::make_unique<CollectiveBuffer>(communicator, device, bytes);
  } catch (const RuntimeFailure& e) {
    error = e.what();
  }
  int64_t failed_rank = error.empty() ? -1 : group.rank();
  group.allreduce_max(&failed_rank, 1);
  if (failed_rank >= 0) {
    throw RuntimeFailure(!error.empty() ? error
                                        : "rank " + std::to_string(failed_rank) + " could not allocate " +
                                              std::to_string(bytes) + " bytes twice");
  }
  // Registration is collective in NCCL: every rank registers the same buffers in the same order.
  buffers.registered.add(communicator, {{buffers.first->data(), bytes}, {buffers.second->data(), bytes}});
  if (!buffers.registered.supported()) {
    throw UsageError(std::string("--register needs the nccl backend (have ") + backend_name(communicator.backend()) +
                     ")");
  }
  return buffers;
}

constexpr int kGraphReplays = 5;  // timed replays per size with --graph; each gives one sample

class SizeRunner {
 public:
  SizeRunner(const BandwidthOptions& options, ProcessGroup& group, Device& device, Communicator& communicator,
             StreamHandle stream)
      : options_(options), group_(group), device_(device), communicator_(communicator), stream_(stream) {}

  PlacementResult run(const Placement& placement, CollectiveOp op, uint64_t size_bytes) {
    dtype_ = placement.dtype;
    PlacementResult result;
    result.measured = true;
    fill_inputs(placement, /*poison_output=*/false);
    device_.synchronize(stream_);
    // At least one untimed run even with --warmup 0: connections and scratch buffers are created on first
    // use, and neither may happen inside a graph capture.
    for (int i = 0; i < std::max(1, options_.warmup_iters); ++i) issue(placement);
    communicator_.wait(stream_, std::string("warming up ") + collective_name(op));

    std::vector<double> samples_ms = options_.graph ? time_with_graph(placement, op) : time_eagerly(placement, op);
    group_.allreduce_max(samples_ms.data(), samples_ms.size());
    for (double ms : samples_ms) result.samples_us.push_back(ms * 1000.0);
    result.time_us = summarize(result.samples_us);
    const double seconds = result.time_us.p50 * 1e-6;
    result.algbw_gbps = seconds > 0 ? static_cast<double>(size_bytes) / seconds / 1e9 : 0;
    result.busbw_gbps = result.algbw_gbps * bus_bandwidth_factor(op, group_.size());
    if (options_.check) result.wrong = count_wrong(placement, op);
    return result;
  }

 private:
  void issue(const Placement& p) { issue_collective(communicator_, p, stream_); }

  void fill_inputs(const Placement& p, bool poison_output) {
    if (poison_output && p.poison_before_input) {
      device_.fill_pattern(p.output, p.output_count, dtype_, poison_spec(), stream_);
    }
    device_.fill_pattern(p.input, p.input_count, dtype_, p.input_spec, stream_);
    if (poison_output && p.poison_after_input) {
      device_.fill_pattern(p.output, p.output_count, dtype_, poison_spec(), stream_);
    }
  }

  static PatternSpec poison_spec() {
    PatternSpec spec;
    spec.role = PatternRole::kPoison;
    return spec;
  }

  std::vector<double> time_eagerly(const Placement& p, CollectiveOp op) {
    std::vector<std::unique_ptr<DeviceEvent>> events = make_events();
    // One untimed lead-in keeps the device busy while the timed ones are queued: otherwise the first
    // sample measures the host's launch latency from an idle stream (seen: +12 us at 8 MiB on H200).
    issue(p);
    events[0]->record(stream_);
    for (int i = 0; i < options_.iters; ++i) {
      issue(p);
      if (!options_.aggregate_timing) events[static_cast<size_t>(i) + 1]->record(stream_);
    }
    if (options_.aggregate_timing) events[1]->record(stream_);
    communicator_.wait(stream_, std::string("timing ") + collective_name(op));
    if (options_.aggregate_timing) return {events[1]->milliseconds_since(*events[0]) / options_.iters};
    return intervals(events);
  }

  // The graph holds `iters` collectives back to back with no event nodes between them (nodes between
  // kernels add latency the eager path does not have); each replay is timed as a whole and yields one
  // sample, its time divided by `iters`, as nccl-tests times graph replays.
  std::vector<double> time_with_graph(const Placement& p, CollectiveOp op) {
    device_.begin_capture(stream_);
    for (int i = 0; i < options_.iters; ++i) issue(p);
    std::unique_ptr<DeviceGraph> graph = device_.end_capture(stream_);
    graph->launch(stream_);  // the first replay uploads the graph: not timed
    communicator_.wait(stream_, std::string("replaying ") + collective_name(op));
    std::vector<std::unique_ptr<DeviceEvent>> events;
    for (int i = 0; i <= kGraphReplays; ++i) events.push_back(device_.create_event());
    events[0]->record(stream_);
    for (int r = 0; r < kGraphReplays; ++r) {
      graph->launch(stream_);
      events[static_cast<size_t>(r) + 1]->record(stream_);
    }
    communicator_.wait(stream_, std::string("timing ") + collective_name(op));
    std::vector<double> per_iteration = intervals(events);
    for (double& ms : per_iteration) ms /= options_.iters;
    return per_iteration;
  }

  std::vector<std::unique_ptr<DeviceEvent>> make_events() {
    std::vector<std::unique_ptr<DeviceEvent>> events;
    for (int i = 0; i <= options_.iters; ++i) events.push_back(device_.create_event());
    return events;
  }

  static std::vector<double> intervals(const std::vector<std::unique_ptr<DeviceEvent>>& events) {
    std::vector<double> ms;
    for (size_t i = 1; i < events.size(); ++i) ms.push_back(events[i]->milliseconds_since(*events[i - 1]));
    return ms;
  }

  int64_t count_wrong(const Placement& p, CollectiveOp op) {
    fill_inputs(p, /*poison_output=*/true);
    issue(p);
    communicator_.wait(stream_, std::string("checking ") + collective_name(op));
    int64_t wrong = static_cast<int64_t>(
        device_.count_mismatches(p.output, p.output_count, dtype_, p.expected_spec, stream_));
    group_.allreduce_sum(&wrong, 1);
    return wrong;
  }

  const BandwidthOptions& options_;
  ProcessGroup& group_;
  Device& device_;
  Communicator& communicator_;
  StreamHandle stream_;
  DType dtype_ = DType::kFloat32;  // of the placement being run
};

}  // namespace

void run_bandwidth_sweep(const BandwidthOptions& options, ProcessGroup& group, Device& device,
                         Communicator& communicator, BandwidthReport& report, const SweepCallbacks& callbacks) {
  const int nranks = group.size();
  if (options.root < 0 || options.root >= nranks) {
    throw UsageError("--root " + std::to_string(options.root) + " is not a rank of this " +
                     std::to_string(nranks) + "-rank job");
  }
  if (options.graph && !(device.supports_graphs() && communicator.supports_graph_capture())) {
    throw UsageError(std::string("--graph needs the cuda device and the nccl backend (have ") +
                     device_kind_name(device.kind()) + ", " + backend_name(communicator.backend()) + ")");
  }
  SweepBuffers buffers = allocate_agreed(group, device, communicator, largest_size(options, nranks),
                                         options.registration);
  report.registration_granted = buffers.registered.granted();
  report.registration_why_less = buffers.registered.why_less();
  void* first = buffers.first->data();
  void* second = buffers.second->data();
  StreamHandle stream = device.create_stream();
  SizeRunner runner(options, group, device, communicator, stream);
  // Collective, then element type, then reduce op, then size: nccl-tests' order within one collective.
  for (CollectiveOp op : options.ops) {
    for (DType dtype : options.dtypes) {
      const int amplitude = pattern_amplitude(nranks, dtype_exact_integer_limit(dtype));
      for (ReduceOp reduce : sweep_reduce_ops(options, op)) {
        for (uint64_t size : sweep_sizes(options, op, dtype, nranks)) {
          SizeResult result;
          result.op = op;
          result.dtype = dtype;
          result.reduce = reduce;
          result.size_bytes = size;
          result.count = size / dtype_size(dtype);
          std::string what = std::string(collective_name(op)) + " " + dtype_name(dtype);
          if (pattern_reduces(op)) what += std::string(" ") + reduce_op_name(reduce);
          what += " of " + std::to_string(size) + " bytes";
          set_progress(what);
          PlacementRequest request{op, dtype, reduce, group.rank(), nranks, options.root, result.count, amplitude};
          if (options.run_out_of_place) {
            result.out_of_place = runner.run(place_collective(request, false, first, second), op, size);
          }
          if (options.run_in_place) {
            result.in_place = runner.run(place_collective(request, true, first, second), op, size);
          }
          report.results.push_back(result);
          if (callbacks.on_size_done) callbacks.on_size_done(result);
          // A stop signal on any rank ends the sweep here on every rank, the sizes measured so far kept.
          if (const int64_t signal = group.max_across_ranks(stop_signal()); signal != 0) {
            throw RuntimeFailure("stopped by " + signal_name(static_cast<int>(signal)) + " after " + what +
                                 " (the sizes measured so far kept)");
          }
        }
      }
    }
    if (callbacks.on_op_done) callbacks.on_op_done(op);
  }
  device.destroy_stream(stream);
}

}  // namespace sb
