#include "src/train/bucket_auto.h"

#include <algorithm>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "src/train/bucket_choice.h"
#include "src/train/phase_steps.h"
#include "src/train/sub_steps.h"

namespace sb {
namespace {

constexpr uint64_t kSweepLargestBytes = 64ull << 20;
constexpr int kSweepWarmup = 3, kSweepTimed = 7;

// Collective: the median device time of one in-place average of each size, the largest across ranks.
std::vector<std::pair<uint64_t, double>> sweep_all_reduce(ProcessGroup& group, Device& device,
                                                          Communicator& communicator, DType wire,
                                                          uint64_t gradient_bytes) {
  const uint64_t element = wire == DType::kBFloat16 ? 2 : 4;
  const uint64_t largest = std::max<uint64_t>(element, std::min(kSweepLargestBytes, gradient_bytes * element / 4));
  std::vector<uint64_t> sizes;
  for (uint64_t bytes = 256ull << 10; bytes < largest; bytes *= 4) sizes.push_back(bytes);
  sizes.push_back(largest);
  void* buffer = nullptr;
  std::optional<std::string> error;
  try {
    buffer = communicator.allocate_buffer(device, largest);
  } catch (const RuntimeFailure& e) {
    error = std::string("--bucket-mb auto: the all-reduce sweep's buffer: ") + e.what();
  }
  try {
    agree_or_fail(group, error);
  } catch (const RuntimeFailure&) {  // another rank's allocation failed: this one's buffer is not kept
    if (buffer != nullptr) communicator.release_buffer(device, buffer);
    throw;
  }
  StreamHandle stream = device.create_stream();
  const std::vector<unsigned char> zeros(largest, 0);  // defined values: nothing reads what was there before
  device.copy_from_host(buffer, zeros.data(), largest, stream);
  auto start = device.create_event(), end = device.create_event();
  std::vector<double> ms_by_size;
  for (uint64_t bytes : sizes) {
    std::vector<double> ms;
    for (int call = 0; call < kSweepWarmup + kSweepTimed; ++call) {
      start->record(stream);
      communicator.all_reduce(buffer, buffer, bytes / element, wire, ReduceOp::kAvg, stream);
      end->record(stream);
      communicator.wait(stream, "the --bucket-mb auto all-reduce sweep");
      if (call >= kSweepWarmup) ms.push_back(end->milliseconds_since(*start));
    }
    std::nth_element(ms.begin(), ms.begin() + long(ms.size() / 2), ms.end());
    ms_by_size.push_back(ms[ms.size() / 2]);
  }
  device.destroy_stream(stream);
  communicator.release_buffer(device, buffer);
  group.allreduce_max(ms_by_size.data(), ms_by_size.size());
  std::vector<std::pair<uint64_t, double>> measured;
  // Sizes on the wire, as the buckets are counted in fp32 gradient bytes: the cost of a bucket of B fp32 bytes
  // is the cost of B · element / 4 wire bytes.
  for (size_t i = 0; i < sizes.size(); ++i) measured.emplace_back(sizes[i] * 4 / element, ms_by_size[i]);
  return measured;
}

}  // namespace

BucketAuto choose_buckets_by_measurement(ProcessGroup& group, Device& device, Communicator& communicator,
                                         Replica& replica, const TrainOptions& options, uint64_t default_bytes) {
  BucketAuto kept;
  kept.chosen_bytes = default_bytes;
  if (replica.graph.sub_step_count() > 1) {
    kept.kept_default_because = "this step has " + std::to_string(replica.graph.sub_step_count()) +
                                " sub-steps, each its own reduction; the tail model covers one training pass";
    return kept;
  }
  const SubStepProfile profile = profile_sub_steps(replica, options.optimizer, 1);
  std::vector<double> node_done_ms(profile.node_ms.size(), 0.0);
  double clock = 0;
  for (size_t node = replica.graph.training_begin(); node < node_done_ms.size(); ++node) {
    clock += profile.node_ms[node];
    node_done_ms[node] = clock;
  }
  group.allreduce_max(node_done_ms.data(), node_done_ms.size());
  const MemoryPlan& plan = replica.executor->plan();
  const AllReduceCost cost(sweep_all_reduce(group, device, communicator, options.grad_dtype, plan.gradient_bytes));
  return choose_bucket_bytes(
      bucket_candidates_bytes(plan.gradient_bytes),
      [&](uint64_t bytes) { return cut_gradient_buckets(replica.graph, plan, bytes); },
      node_done_ms, cost);
}

}  // namespace sb
