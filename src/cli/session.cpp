// Agreement, launcher cross-checks, device and communicator set-up (src/cli/session.h).
#include "src/cli/session.h"

#include <cstdio>
#include <functional>

#include "scalebench/error.h"
#include "scalebench/launch.h"

namespace sb {

void agree_or_throw(ProcessGroup& group, const std::optional<std::string>& my_error) {
  // Each rank contributes (rank + 1) when it failed, so the maximum names the last failing rank and the
  // minimum over failures is found with one more max of negated values.
  int64_t failed[2] = {my_error ? group.rank() + 1 : 0, my_error ? -(group.rank() + 1) : INT64_MIN};
  group.allreduce_max(failed, 2);
  if (failed[0] == 0) return;
  if (my_error) throw AgreedUsageError(*my_error);
  const int64_t first_failed = -failed[1] - 1;
  throw AgreedUsageError("rank " + std::to_string(first_failed) + " reported a usage error (see its message)");
}

void agree_on_configuration(ProcessGroup& group, const std::string& canonical) {
  const uint64_t mine = std::hash<std::string>{}(canonical);
  std::vector<uint64_t> all(static_cast<size_t>(group.size()));
  group.allgather(&mine, all.data(), sizeof mine);
  std::string differing;
  for (int r = 0; r < group.size(); ++r) {
    if (all[static_cast<size_t>(r)] != all[0]) differing += (differing.empty() ? "" : ",") + std::to_string(r);
  }
  if (!differing.empty()) {
    throw AgreedUsageError("configuration differs between ranks: rank(s) " + differing +
                           " got other arguments than rank 0; every rank must run the same command");
  }
}

namespace {

std::unique_ptr<Device> choose_device(ProcessGroup& group, const CommonOptions& options) {
  const int visible = visible_cuda_device_count();
  if (options.device == "cpu" || (options.device == "auto" && visible == 0)) {
    if (options.device == "auto" && group.rank() == 0) {
      std::fprintf(stderr, "scalebench: notice: no CUDA GPU visible; running on the CPU device\n");
    }
    return make_cpu_device();
  }
  const int gpu = select_gpu(group.local_rank(), group.local_size(), visible, options.allow_gpu_sharing);
  return make_cuda_device(gpu);
}

}  // namespace

Session open_session(ProcessGroup& group, const CommonOptions& options) {
  const LaunchCheck launch = cross_check_launch(
      read_launcher(current_environment()),
      LaunchFacts{group.rank(), group.size(), group.local_rank(), group.local_size()});
  for (const std::string& warning : launch.warnings) {
    std::fprintf(stderr, "%s warning: %s\n", diagnostic_prefix().c_str(), warning.c_str());
  }
  Session session;
  std::optional<std::string> error;
  if (!launch.errors.empty()) error = launch.errors.front();
  if (!error) {
    try {
      session.device = choose_device(group, options);
    } catch (const UsageError& e) {
      error = e.what();
    }
  }
  agree_or_throw(group, error);
  // Communicator creation is collective (the NCCL id is broadcast), so every rank must take the same
  // path into it: same device kind everywhere, and a backend that fits that device.
  const int64_t kind = static_cast<int64_t>(session.device->kind());
  int64_t kinds[2] = {kind, -kind};
  group.allreduce_max(kinds, 2);
  if (kinds[0] != -kinds[1]) {
    error = "ranks disagree on the device (some see a GPU, some do not); pass --device cpu or cuda";
  } else if (options.backend == Backend::kNccl && session.device->kind() != DeviceKind::kCuda) {
    error = "the nccl backend needs the cuda device";
  }
  agree_or_throw(group, error);
  try {
    session.communicator = make_communicator(options.backend, group, *session.device,
                                             CommunicatorOptions{options.timeout_seconds});
  } catch (const UsageError& e) {
    error = e.what();
  }
  agree_or_throw(group, error);
  return session;
}

}  // namespace sb
