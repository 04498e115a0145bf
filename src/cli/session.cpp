// Agreement, launcher cross-checks, device and communicator set-up (src/cli/session.h).
#include "src/cli/session.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "collectives/backends.h"
#include "scalebench/emulation.h"
#include "scalebench/error.h"
#include "scalebench/launch.h"
#include "src/core/fault_injection.h"

namespace sb {

void agree_or_throw(ProcessGroup& group, const std::optional<std::string>& my_error) {
  // Every rank's message travels, so a healthy rank can say what the first failing one found (only rank 0
  // checks the output files, for instance) and the user reads the reason on every rank.
  const std::vector<std::string> errors = group.allgather_strings(my_error ? "!" + *my_error : "");
  for (size_t rank = 0; rank < errors.size(); ++rank) {
    if (errors[rank].empty()) continue;
    if (my_error) throw AgreedUsageError(*my_error);
    throw AgreedUsageError("rank " + std::to_string(rank) + " reported a usage error: " + errors[rank].substr(1));
  }
}

namespace {

// The canonical form's key as the flag a user typed ("min_time" -> "--min-time"); keys that are not a flag's
// name are mapped here.
std::string flag_of(const std::string& key) {
  static const std::vector<std::pair<std::string, std::string>> renamed = {
      {"command", "the subcommand"}, {"sharing", "--allow-gpu-sharing"}, {"bucket", "--bucket-mb"},
      {"min", "--min-bytes"},        {"max", "--max-bytes"},             {"oop", "--out-of-place"},
      {"ip", "--in-place"},          {"ops", "--op"},                    {"aggregate", "--aggregate-timing"},
      {"register", "--register"},    {"clip", "--clip-norm"},            {"out", "--out"}};
  for (const auto& [from, to] : renamed) {
    if (key == from) return to;
  }
  std::string flag = "--" + key;
  for (char& c : flag) c = c == '_' ? '-' : c;
  return flag;
}

// "key=value" pairs of a canonical form, in order.
std::vector<std::pair<std::string, std::string>> settings(const std::string& canonical) {
  std::vector<std::pair<std::string, std::string>> pairs;
  size_t start = 0;
  while (start <= canonical.size()) {
    size_t end = canonical.find(';', start);
    if (end == std::string::npos) end = canonical.size();
    const std::string item = canonical.substr(start, end - start);
    const size_t equals = item.find('=');
    if (equals != std::string::npos) pairs.emplace_back(item.substr(0, equals), item.substr(equals + 1));
    start = end + 1;
  }
  return pairs;
}

// The first setting that differs, as "--steps is 5 on rank 1 but 4 on rank 0".
std::string first_difference(const std::string& mine, const std::string& rank0, int rank) {
  const auto a = settings(mine), b = settings(rank0);
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string key = i < a.size() ? a[i].first : b[i].first;
    const std::string here = i < a.size() ? a[i].second : "(absent)";
    const std::string there = i < b.size() && b[i].first == key ? b[i].second : "(absent)";
    if (here != there) {
      return flag_of(key) + " is '" + here + "' on rank " + std::to_string(rank) + " but '" + there + "' on rank 0";
    }
  }
  return "";
}

}  // namespace

void agree_on_configuration(ProcessGroup& group, const std::string& canonical) {
  // The whole forms travel (a few hundred bytes), so the refusal can name the flag that differs.
  const std::vector<std::string> all = group.allgather_strings(canonical);
  std::string differing, detail;
  for (int r = 0; r < group.size(); ++r) {
    if (all[static_cast<size_t>(r)] == all[0]) continue;
    differing += (differing.empty() ? "" : ",") + std::to_string(r);
    if (detail.empty()) detail = first_difference(all[static_cast<size_t>(r)], all[0], r);
  }
  if (!differing.empty()) {
    throw AgreedUsageError("configuration differs between ranks: rank(s) " + differing +
                           " got other arguments than rank 0 (" + detail + "); every rank must run the same command");
  }
}

namespace {

// The GPU this rank will drive, or nullopt for the CPU device (auto: CUDA when a GPU is visible).
std::optional<int> choose_gpu(ProcessGroup& group, const CommonOptions& options) {
  const int visible = visible_cuda_device_count();
  if (options.device == "cpu" || (options.device == "auto" && visible == 0)) {
    if (options.device == "auto" && group.rank() == 0) {
      std::fprintf(stderr, "scalebench: notice: no CUDA GPU visible; running on the CPU device\n");
    }
    return std::nullopt;
  }
  return select_gpu(group.local_rank(), visible);
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
  const Environment env = current_environment();
  if (!error) {
    try {
      auto fault = env.find(kFaultVariable);
      arm_fault_injection(fault == env.end() ? std::nullopt : std::optional<std::string>(fault->second), group.rank());
    } catch (const UsageError& e) {
      error = e.what();
    }
  }
  const Emulation emulation = parse_emulation(options.emulate);
  if (!error) error = emulation_conflict(emulation, env);
  if (!error && options.backend == Backend::kNccl && !nccl_built_in()) {
    error = "the nccl backend needs scalebench built with NCCL (set NCCL_HOME, or -DSB_REQUIRE_NCCL=ON)";
  }
  std::optional<int> gpu;
  if (!error) {
    try {
      gpu = choose_gpu(group, options);
    } catch (const UsageError& e) {
      error = e.what();
    }
  }
  agree_or_throw(group, error);
  // Two ranks of a node on one GPU, found by bus id before any device is opened; allowed, they cannot use NCCL.
  const std::vector<std::string> host_and_bus =
      group.allgather_strings(group.host() + " " + (gpu ? gpu_bus_id(*gpu) : ""));
  agree_or_throw(group, shared_gpu_error(host_and_bus, options.allow_gpu_sharing));
  const SharedGpuBackend shared = backend_for_shared_gpu(options.backend, shared_gpu(host_and_bus));
  agree_or_throw(group, shared.error);  // the same on every rank: decided from the gathered bus ids
  const Backend backend = shared.backend;
  if (shared.notice && group.rank() == 0) std::fprintf(stderr, "scalebench: notice: %s\n", shared.notice->c_str());
  try {
    session.device = gpu ? make_cuda_device(*gpu) : make_cpu_device();
  } catch (const UsageError& e) {
    error = e.what();
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
  } else if (emulation != Emulation::kNone &&
             (session.device->kind() != DeviceKind::kCuda || backend == Backend::kMpi ||
              backend == Backend::kLocal)) {
    // The CPU device's collectives go through MPI, which has no P2P or SHM switch to emulate with.
    error = std::string("--emulate ") + emulation_name(emulation) +
            " shapes NCCL's transports: it needs the cuda device and the nccl backend";
  }
  agree_or_throw(group, error);
  // Every rank sets the variables before NCCL first reads its environment (the communicator's creation).
  apply_emulation(emulation);
  try {
    session.communicator = make_communicator(backend, group, *session.device,
                                             CommunicatorOptions{options.timeout_seconds});
  } catch (const UsageError& e) {
    error = e.what();
  }
  agree_or_throw(group, error);
  return session;
}

}  // namespace sb
