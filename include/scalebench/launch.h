// How this process was launched: the launcher's environment (Open MPI, Slurm srun, torchrun) read and
// cross-checked against what MPI says, and the GPU this rank uses. Pure functions over an environment map
// so tests can simulate any launcher.
#pragma once

#include <map>
#include <string>
#include <vector>

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

// GPU = local_rank % visible_gpus. More ranks on a node than visible GPUs is a usage error unless sharing
// is allowed (NCCL does not support two ranks of one communicator on one GPU). Throws UsageError.
int select_gpu(int local_rank, int local_size, int visible_gpus, bool allow_gpu_sharing);

// Environment variables worth recording with every result (NCCL_*, CUDA_VISIBLE_DEVICES, SLURM job ids…).
std::vector<std::pair<std::string, std::string>> recorded_environment(const Environment& env);

}  // namespace sb
