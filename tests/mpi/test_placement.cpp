// Where ranks run and which backend they agree on: the node-local ranks from the shared-memory
// split, the Slurm launch check, GPU binding on the cpu backend, and --comm resolution.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "src/comm/make_communicator.h"
#include "src/comm/process_placement.h"
#include "src/base/errors.h"
#include "tests/mpi/mpi_test.h"

namespace mlps {
namespace {

using testing::MpiTest;
using testing::world_rank;
using testing::world_size;

TEST_F(MpiTest, PlacementCountsTheRanksOfEachHost) {
  const RankPlacement placement = discover_placement(MPI_COMM_WORLD);
  EXPECT_EQ(placement.world_rank, world_rank());
  EXPECT_EQ(placement.world_size, world_size());
  EXPECT_FALSE(placement.host.empty());
  // The local rank and size are those of the ranks on the same host (all of them when
  // mpiexec runs on one machine).
  std::vector<char> mine(MPI_MAX_PROCESSOR_NAME, '\0');
  placement.host.copy(mine.data(), mine.size() - 1);
  std::vector<char> all(mine.size() * static_cast<size_t>(world_size()));
  MPI_Allgather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  int same_host = 0;
  int same_host_below = 0;
  for (int r = 0; r < world_size(); ++r) {
    if (std::string(all.data() + r * MPI_MAX_PROCESSOR_NAME) != placement.host) continue;
    ++same_host;
    if (r < world_rank()) ++same_host_below;
  }
  EXPECT_EQ(placement.local_size, same_host);
  EXPECT_EQ(placement.local_rank, same_host_below);
}

TEST_F(MpiTest, PlacementNumbersEveryRanksNodeByItsHost) {
  const RankPlacement placement = discover_placement(MPI_COMM_WORLD);
  const std::vector<int>& nodes = placement.node_of_rank;
  ASSERT_EQ(nodes.size(), static_cast<size_t>(world_size()));
  std::vector<char> mine(MPI_MAX_PROCESSOR_NAME, '\0');
  placement.host.copy(mine.data(), mine.size() - 1);
  std::vector<char> all(mine.size() * static_cast<size_t>(world_size()));
  MPI_Allgather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  auto host = [&](int r) { return std::string(all.data() + r * MPI_MAX_PROCESSOR_NAME); };
  int next = 0;  // nodes are numbered in the order of their first rank
  for (int r = 0; r < world_size(); ++r) {
    if (nodes[r] == next) ++next;
    EXPECT_LT(nodes[r], next) << "rank " << r;
    for (int q = 0; q < r; ++q)
      EXPECT_EQ(nodes[q] == nodes[r], host(q) == host(r)) << "ranks " << q << " and " << r;
  }
  EXPECT_EQ(std::count(nodes.begin(), nodes.end(), nodes[world_rank()]), placement.local_size);
}

TEST_F(MpiTest, PlacementOnOneHostHasLocalRanksEqualToWorldRanks) {
  const RankPlacement placement = discover_placement(MPI_COMM_WORLD);
  const bool one_host = testing::on_all_ranks(placement.local_size == world_size());
  if (!one_host) GTEST_SKIP() << "ranks on several hosts";
  EXPECT_EQ(placement.local_rank, world_rank());
  EXPECT_EQ(placement.local_size, world_size());
}

// Sets Slurm's task variables for one test and restores them afterwards.
class SlurmEnvironmentTest : public MpiTest {
 protected:
  void SetUp() override {
    for (const char* name : kNames) {
      const char* value = std::getenv(name);
      saved_.push_back(value ? std::optional<std::string>(value) : std::nullopt);
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (size_t i = 0; i < std::size(kNames); ++i) {
      if (saved_[i]) setenv(kNames[i], saved_[i]->c_str(), 1);
      else unsetenv(kNames[i]);
    }
    MpiTest::TearDown();
  }
  static constexpr const char* kNames[] = {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS",
                                           "SLURM_NPROCS"};

 private:
  std::vector<std::optional<std::string>> saved_;
};

TEST_F(SlurmEnvironmentTest, SingletonsUnderSeveralSlurmTasksAreRefused) {
  EXPECT_NO_THROW(check_launch_matches_slurm(1)) << "outside Slurm";
  setenv("SLURM_NTASKS", "4", 1);
  try {
    check_launch_matches_slurm(1);
    ADD_FAILURE() << "4 Slurm tasks but a world of 1 rank was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "Slurm started 4 tasks but MPI sees 1 rank per process: srun is launching "
              "singletons; use srun --mpi=pmi2 (MPICH) or the MPI library Slurm was built for");
  }
  EXPECT_NO_THROW(check_launch_matches_slurm(4));
  setenv("SLURM_NTASKS", "1", 1);
  EXPECT_NO_THROW(check_launch_matches_slurm(1));
  unsetenv("SLURM_NTASKS");
  setenv("SLURM_NPROCS", "3", 1);
  EXPECT_THROW(check_launch_matches_slurm(1), InputError) << "SLURM_NPROCS alone";
  // srun's own step count wins over the allocation's: srun -n 1 inside a 4-task job is fine.
  setenv("SLURM_NTASKS", "4", 1);
  setenv("SLURM_STEP_NUM_TASKS", "1", 1);
  EXPECT_NO_THROW(check_launch_matches_slurm(1));
}

TEST_F(MpiTest, BindGpuOnTheCpuBackendBindsNothing) {
  const RankPlacement placement = discover_placement(MPI_COMM_WORLD);
  EXPECT_EQ(bind_gpu(placement, DeviceKind::cpu), -1);
}

TEST_F(MpiTest, CommBackendResolvesToMpiOnTheCpuBackend) {
  const RankPlacement placement = discover_placement(MPI_COMM_WORLD);
  EXPECT_EQ(resolve_comm_backend("auto", DeviceKind::cpu, placement, MPI_COMM_WORLD),
            CommBackend::mpi);
  EXPECT_EQ(resolve_comm_backend("mpi", DeviceKind::cpu, placement, MPI_COMM_WORLD),
            CommBackend::mpi);
  EXPECT_STREQ(to_string(CommBackend::mpi), "mpi");
  EXPECT_STREQ(to_string(CommBackend::nccl), "nccl");
}

TEST_F(MpiTest, CommBackendRefusesNcclOnTheCpuBackend) {
  const RankPlacement placement = discover_placement(MPI_COMM_WORLD);
  try {
    resolve_comm_backend("nccl", DeviceKind::cpu, placement, MPI_COMM_WORLD);
    ADD_FAILURE() << "--comm nccl accepted on the cpu backend";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--comm nccl needs the cuda backend (--device cpu in use)");
  }
  try {
    resolve_comm_backend("gloo", DeviceKind::cpu, placement, MPI_COMM_WORLD);
    ADD_FAILURE() << "--comm gloo accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--comm must be auto, mpi or nccl, not 'gloo'");
  }
}

}  // namespace
}  // namespace mlps
