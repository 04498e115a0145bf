// Launcher environments (Open MPI, Slurm, torchrun, PMI) read and cross-checked against MPI's view, and
// GPU selection, with simulated environments.
#include <gtest/gtest.h>

#include "scalebench/error.h"
#include "scalebench/launch.h"

namespace sb {
namespace {

TEST(Launch, ReadsOpenMpiEvenInsideASlurmAllocation) {
  Environment env = {{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "2"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                     {"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "batch"}, {"SLURM_NTASKS", "16"}};
  LauncherView view = read_launcher(env);
  EXPECT_EQ(view.launcher, "openmpi");
  EXPECT_EQ(view.rank, 2);
  EXPECT_EQ(view.size, 4);
  EXPECT_EQ(view.local_rank, 0);
  EXPECT_EQ(view.local_size, 2);
}

TEST(Launch, ReadsSrunTasksByStepSize) {
  Environment env = {{"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "1"}, {"SLURM_STEP_ID", "0"},
                     {"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_NTASKS", "32"}};
  LauncherView view = read_launcher(env);
  EXPECT_EQ(view.launcher, "slurm");
  EXPECT_EQ(view.rank, 5);
  EXPECT_EQ(view.size, 8);
  EXPECT_EQ(view.local_rank, 1);
}

TEST(Launch, ReadsTorchrunAndPmi) {
  LauncherView torch = read_launcher({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"},
                                      {"LOCAL_WORLD_SIZE", "2"}});
  EXPECT_EQ(torch.launcher, "torchrun");
  EXPECT_EQ(torch.size, 4);
  EXPECT_EQ(torch.local_size, 2);
  LauncherView pmi = read_launcher({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "1"}});
  EXPECT_EQ(pmi.launcher, "pmi");
  EXPECT_EQ(pmi.local_rank, 1);
  EXPECT_EQ(read_launcher({{"HOME", "/root"}}).launcher, "none");
}

TEST(Launch, WorldSizeDisagreementIsAnError) {
  LauncherView torch = read_launcher({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}});
  LaunchCheck check = cross_check_launch(torch, LaunchFacts{0, 1, 0, 1});
  ASSERT_EQ(check.errors.size(), 1u);
  EXPECT_NE(check.errors[0].find("torchrun started 4 ranks but MPI sees 1"), std::string::npos);
  EXPECT_NE(check.errors[0].find("mpirun"), std::string::npos);
}

TEST(Launch, RankDisagreementIsAWarning) {
  LauncherView slurm = read_launcher({{"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "1"}, {"SLURM_STEP_ID", "0"},
                                      {"SLURM_STEP_NUM_TASKS", "2"}});
  LaunchCheck check = cross_check_launch(slurm, LaunchFacts{0, 2, 0, 2});
  EXPECT_TRUE(check.errors.empty());
  EXPECT_EQ(check.warnings.size(), 2u);  // rank and local rank
  EXPECT_TRUE(cross_check_launch(slurm, LaunchFacts{1, 2, 1, 2}).warnings.empty());
}

TEST(Launch, NoLauncherNothingToCheck) {
  LaunchCheck check = cross_check_launch(LauncherView{}, LaunchFacts{0, 1, 0, 1});
  EXPECT_TRUE(check.errors.empty());
  EXPECT_TRUE(check.warnings.empty());
}

TEST(Launch, GpuIsLocalRankModuloVisible) {
  EXPECT_EQ(select_gpu(0, 8), 0);
  EXPECT_EQ(select_gpu(7, 8), 7);
  EXPECT_EQ(select_gpu(3, 1), 0);  // Slurm --gpus-per-task=1: each task sees one device 0
  EXPECT_EQ(select_gpu(3, 2), 1);
  EXPECT_THROW(select_gpu(0, 0), UsageError);
}

TEST(Launch, RanksSharingAGpuAreFoundByBusId) {
  // mpirun -np 3 on a node with 2 visible GPUs: ranks 0 and 2 land on the same bus id.
  const auto shared = shared_gpu_error({"a 0000:19:00.0", "a 0000:3b:00.0", "a 0000:19:00.0"}, false);
  ASSERT_TRUE(shared);
  EXPECT_NE(shared->find("ranks 0 and 2 on a would share GPU 0000:19:00.0"), std::string::npos) << *shared;
  EXPECT_NE(shared->find("--allow-gpu-sharing"), std::string::npos);
  EXPECT_FALSE(shared_gpu_error({"a 0000:19:00.0", "a 0000:3b:00.0", "a 0000:19:00.0"}, true));
  // srun --gpus-per-task=1: every task sees "GPU 0", each a different bus; two nodes may repeat bus ids.
  EXPECT_FALSE(shared_gpu_error({"a 0000:19:00.0", "a 0000:3b:00.0", "b 0000:19:00.0", "b 0000:3b:00.0"}, false));
  // The CPU device: no bus ids, nothing shared.
  EXPECT_FALSE(shared_gpu_error({"a ", "a "}, false));
}

TEST(Launch, RanksSharingAGpuCannotUseNccl) {
  // mpirun -np 2 --allow-gpu-sharing on one GPU: NCCL would refuse ("Duplicate GPU detected").
  const std::optional<std::string> shared = shared_gpu({"a 0000:19:00.0", "a 0000:19:00.0"});
  ASSERT_TRUE(shared);
  EXPECT_EQ(*shared, "ranks 0 and 1 on a would share GPU 0000:19:00.0");
  const SharedGpuBackend automatic = backend_for_shared_gpu(Backend::kAuto, shared);
  EXPECT_EQ(automatic.backend, Backend::kMpi);
  ASSERT_TRUE(automatic.notice);
  EXPECT_NE(automatic.notice->find("through MPI (--backend mpi)"), std::string::npos) << *automatic.notice;
  EXPECT_NE(automatic.notice->find("counts every rank's allocations on the GPU"), std::string::npos)
      << *automatic.notice;
  EXPECT_FALSE(automatic.error);
  const SharedGpuBackend nccl = backend_for_shared_gpu(Backend::kNccl, shared);
  ASSERT_TRUE(nccl.error);
  EXPECT_NE(nccl.error->find("ranks 0 and 1 on a would share GPU 0000:19:00.0: NCCL refuses two ranks on one GPU"),
            std::string::npos)
      << *nccl.error;
  const SharedGpuBackend mpi = backend_for_shared_gpu(Backend::kMpi, shared);
  EXPECT_EQ(mpi.backend, Backend::kMpi);
  EXPECT_FALSE(mpi.error);
  ASSERT_TRUE(mpi.notice) << "the memory measured is the GPU's, whatever the backend";
  EXPECT_NE(mpi.notice->find("counts every rank's allocations on the GPU"), std::string::npos) << *mpi.notice;
  // One GPU per rank: whatever was asked for stands, silently.
  const SharedGpuBackend alone = backend_for_shared_gpu(Backend::kAuto, shared_gpu({"a 0000:19:00.0", "a 0000:3b:00.0"}));
  EXPECT_EQ(alone.backend, Backend::kAuto);
  EXPECT_FALSE(alone.notice || alone.error);
}

TEST(Launch, RecordsOnlyRelevantEnvironment) {
  auto recorded = recorded_environment({{"NCCL_P2P_DISABLE", "1"}, {"HOME", "/root"},
                                        {"CUDA_VISIBLE_DEVICES", "0,1"}, {"SLURM_JOB_ID", "42"},
                                        {"SECRET_TOKEN", "x"}});
  ASSERT_EQ(recorded.size(), 3u);
  EXPECT_EQ(recorded[0].first, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(recorded[1].first, "NCCL_P2P_DISABLE");
  EXPECT_EQ(recorded[2].first, "SLURM_JOB_ID");
}

}  // namespace
}  // namespace sb
