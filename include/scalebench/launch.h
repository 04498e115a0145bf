// How this process was launched: the launcher's environment (Open MPI, Slurm srun, torchrun) read and
// cross-checked against what MPI says, and the GPU this rank uses. Pure functions over an environment map
// so tests can simulate any launcher.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scalebench/communicator.h"

namespace sb {

using Environment = std::map<std::string, std::string>;
Environment current_environment();

struct LauncherView {
  std::string launcher = "none";  // "openmpi", "slurm", "torchrun", "pmi", "none"
  int rank = -1, size = -1, local_rank = -1, local_size = -1;  // -1: the launcher did not say
};

// The launcher that started this process, by the variables only it sets. Open MPI's variables win over
// Slurm's: under `mpirun` inside an allocation the SLURM_* values describe the batch step, not the ranks.
LauncherView read_launcher(const Environment& env);

struct LaunchFacts {
  int rank = 0, size = 1, local_rank = 0, local_size = 1;  // from MPI (authoritative)
};

struct LaunchCheck {
  std::vector<std::string> errors;    // usage errors: the job cannot work as launched
  std::vector<std::string> warnings;  // suspicious but workable
};

// A world-size disagreement is an error (typically torchrun or srun without MPI support starting
// independent one-rank jobs); rank or local-rank disagreements are warnings.
LaunchCheck cross_check_launch(const LauncherView& launcher, const LaunchFacts& mpi);

// GPU = local_rank % visible_gpus; no visible GPU is a usage error. Whether ranks end up sharing a GPU is
// decided by bus id (shared_gpu_error), not by counting: under `srun --gpus-per-task=1` every rank sees one
// GPU, a different one each.
int select_gpu(int local_rank, int visible_gpus);

// The PCI bus id of visible CUDA device `ordinal` ("0000:19:00.0"), without opening it; "" without CUDA.
std::string gpu_bus_id(int ordinal);

// Every rank's "host bus_id" (bus_id "" for a rank without a GPU), in rank order: the first two ranks of one
// host on one GPU ("ranks 0 and 2 on a would share GPU 0000:19:00.0"), or nullopt.
std::optional<std::string> shared_gpu(const std::vector<std::string>& host_and_bus);

// A usage error naming shared_gpu's pair, unless sharing is allowed (NCCL does not support two ranks of one
// communicator on one GPU).
std::optional<std::string> shared_gpu_error(const std::vector<std::string>& host_and_bus, bool allow_gpu_sharing);

// The backend of a job whose ranks share a GPU (`shared`: shared_gpu's text, sharing allowed). NCCL refuses two
// ranks of one communicator on one GPU ("Duplicate GPU detected"), so auto becomes mpi, with a notice saying
// so, and an explicit nccl is a usage error; without sharing the requested backend stands.
struct SharedGpuBackend {
  Backend backend;
  std::optional<std::string> notice, error;
};
SharedGpuBackend backend_for_shared_gpu(Backend requested, const std::optional<std::string>& shared);

// Environment variables worth recording with every result (NCCL_*, CUDA_VISIBLE_DEVICES, SLURM job ids…).
std::vector<std::pair<std::string, std::string>> recorded_environment(const Environment& env);

}  // namespace sb
