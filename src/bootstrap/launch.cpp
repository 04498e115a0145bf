// Launcher environment, cross-checks and GPU selection (include/scalebench/launch.h).
#include "scalebench/launch.h"

#include <cstdlib>

#include "scalebench/error.h"

extern char** environ;

namespace sb {
namespace {

int integer_or(const Environment& env, const char* key, int fallback) {
  auto it = env.find(key);
  if (it == env.end() || it->second.empty()) return fallback;
  char* end = nullptr;
  long value = std::strtol(it->second.c_str(), &end, 10);
  return (end != nullptr && *end == '\0') ? static_cast<int>(value) : fallback;
}

bool has(const Environment& env, const char* key) { return env.count(key) != 0; }

}  // namespace

Environment current_environment() {
  Environment env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string text(*entry);
    auto equals = text.find('=');
    if (equals != std::string::npos) env[text.substr(0, equals)] = text.substr(equals + 1);
  }
  return env;
}

LauncherView read_launcher(const Environment& env) {
  LauncherView view;
  if (has(env, "OMPI_COMM_WORLD_SIZE")) {
    view.launcher = "openmpi";
    view.rank = integer_or(env, "OMPI_COMM_WORLD_RANK", -1);
    view.size = integer_or(env, "OMPI_COMM_WORLD_SIZE", -1);
    view.local_rank = integer_or(env, "OMPI_COMM_WORLD_LOCAL_RANK", -1);
    view.local_size = integer_or(env, "OMPI_COMM_WORLD_LOCAL_SIZE", -1);
  } else if (has(env, "SLURM_PROCID") && has(env, "SLURM_STEP_ID")) {
    // A task of an srun step. SLURM_STEP_NUM_TASKS is the step's size; SLURM_NTASKS may describe the job.
    view.launcher = "slurm";
    view.rank = integer_or(env, "SLURM_PROCID", -1);
    view.size = integer_or(env, "SLURM_STEP_NUM_TASKS", integer_or(env, "SLURM_NTASKS", -1));
    view.local_rank = integer_or(env, "SLURM_LOCALID", -1);
  } else if (has(env, "WORLD_SIZE") && has(env, "RANK")) {
    view.launcher = "torchrun";
    view.rank = integer_or(env, "RANK", -1);
    view.size = integer_or(env, "WORLD_SIZE", -1);
    view.local_rank = integer_or(env, "LOCAL_RANK", -1);
    view.local_size = integer_or(env, "LOCAL_WORLD_SIZE", -1);
  } else if (has(env, "PMI_SIZE") && has(env, "PMI_RANK")) {
    view.launcher = "pmi";  // MPICH / Intel MPI hydra
    view.rank = integer_or(env, "PMI_RANK", -1);
    view.size = integer_or(env, "PMI_SIZE", -1);
    view.local_rank = integer_or(env, "MPI_LOCALRANKID", -1);
  }
  return view;
}

LaunchCheck cross_check_launch(const LauncherView& launcher, const LaunchFacts& mpi) {
  LaunchCheck check;
  if (launcher.launcher == "none") return check;
  const std::string who = launcher.launcher;
  if (launcher.size > 0 && launcher.size != mpi.size) {
    std::string hint = who == "torchrun"
                           ? "; scalebench bootstraps through MPI: launch it with mpirun or srun --mpi=pmix"
                           : "; is scalebench built against the MPI that launched it (srun needs --mpi=pmix)?";
    check.errors.push_back(who + " started " + std::to_string(launcher.size) + " ranks but MPI sees " +
                           std::to_string(mpi.size) + hint);
    return check;
  }
  if (launcher.rank >= 0 && launcher.rank != mpi.rank) {
    check.warnings.push_back(who + " rank " + std::to_string(launcher.rank) + " differs from MPI rank " +
                             std::to_string(mpi.rank) + "; using MPI's");
  }
  if (launcher.local_rank >= 0 && launcher.local_rank != mpi.local_rank) {
    check.warnings.push_back(who + " local rank " + std::to_string(launcher.local_rank) +
                             " differs from the node-local MPI rank " + std::to_string(mpi.local_rank) +
                             "; using MPI's");
  }
  if (launcher.local_size > 0 && launcher.local_size != mpi.local_size) {
    check.warnings.push_back(who + " local size " + std::to_string(launcher.local_size) +
                             " differs from MPI's " + std::to_string(mpi.local_size));
  }
  return check;
}

int select_gpu(int local_rank, int visible_gpus) {
  if (visible_gpus <= 0) throw UsageError("no CUDA device is visible to this rank");
  return local_rank % visible_gpus;
}

std::optional<std::string> shared_gpu(const std::vector<std::string>& host_and_bus) {
  std::map<std::string, size_t> first_rank;  // "host bus" -> the first rank on it
  for (size_t rank = 0; rank < host_and_bus.size(); ++rank) {
    const std::string& key = host_and_bus[rank];
    const size_t space = key.find(' ');
    if (space == std::string::npos || space + 1 == key.size()) continue;  // no GPU
    auto [it, inserted] = first_rank.emplace(key, rank);
    if (inserted) continue;
    return "ranks " + std::to_string(it->second) + " and " + std::to_string(rank) + " on " + key.substr(0, space) +
           " would share GPU " + key.substr(space + 1);
  }
  return std::nullopt;
}

std::optional<std::string> shared_gpu_error(const std::vector<std::string>& host_and_bus, bool allow_gpu_sharing) {
  if (allow_gpu_sharing) return std::nullopt;
  const std::optional<std::string> shared = shared_gpu(host_and_bus);
  if (!shared) return std::nullopt;
  return *shared +
         ": more ranks on this node than GPUs; start one rank per GPU (srun --gpus-per-task=1, or mpirun -np "
         "<GPUs per node> per node) or pass --allow-gpu-sharing";
}

SharedGpuBackend backend_for_shared_gpu(Backend requested, const std::optional<std::string>& shared) {
  SharedGpuBackend choice{requested, std::nullopt, std::nullopt};
  if (!shared) return choice;
  // The device's free memory is the GPU's, not the rank's (cudaMemGetInfo): maxbatch's budgets and the memory in
  // use that run reports count the other ranks' allocations too (PERFORMANCE.md, 2026-12-05: up to 2 GiB off).
  const std::string memory = "; the memory measured on it (maxbatch's budget, run's memory in use) counts every "
                             "rank's allocations on the GPU";
  if (requested == Backend::kNccl) {
    choice.error = *shared + ": NCCL refuses two ranks on one GPU; use --backend mpi, or one rank per GPU";
  } else if (requested == Backend::kAuto) {
    choice.backend = Backend::kMpi;
    choice.notice = *shared + " (--allow-gpu-sharing); NCCL refuses two ranks on one GPU, so the all-reduces go "
                    "through MPI (--backend mpi), whose dp steps are not captured into CUDA graphs" + memory;
  } else {
    choice.notice = *shared + " (--allow-gpu-sharing)" + memory;
  }
  return choice;
}

std::vector<std::pair<std::string, std::string>> recorded_environment(const Environment& env) {
  static const char* kPrefixes[] = {"NCCL_", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "UCX_",
                                    "OMPI_COMM_WORLD_SIZE", "SLURM_JOB_ID", "SLURM_NNODES",
                                    "SLURM_STEP_NUM_TASKS", "SLURM_JOB_PARTITION",
                                    "SCALEBENCH_FAULT"};  // an injected fault marks the result as a test
  std::vector<std::pair<std::string, std::string>> recorded;
  for (const auto& [key, value] : env) {
    for (const char* prefix : kPrefixes) {
      if (key.rfind(prefix, 0) == 0) {
        recorded.emplace_back(key, value);
        break;
      }
    }
  }
  return recorded;
}

}  // namespace sb
