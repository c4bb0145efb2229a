#pragma once
// Where this rank runs: its node-local rank (from a shared-memory split of the world, so it
// works under srun and mpiexec alike), the GPU it binds to, and the launch sanity check.
#include <mpi.h>

#include <string>
#include <vector>

#include "src/device/device.h"

namespace mlps {

struct RankPlacement {
  int world_rank = 0;
  int world_size = 1;
  int local_rank = 0;  // among the ranks on this node
  int local_size = 1;
  std::string host;
  // Every world rank's node, numbered in the order of each node's first rank: where the run's
  // groups really sit (block, cyclic or any other placement), for its own prediction.
  std::vector<int> node_of_rank;
};

// Collective over world.
RankPlacement discover_placement(MPI_Comm world);

// Slurm says several tasks but the MPI world has one rank: srun started N singletons (MPI built
// without Slurm's PMI, or --mpi missing). Throws InputError naming the likely cause.
void check_launch_matches_slurm(int world_size);

// On the cpu backend: OPENBLAS_NUM_THREADS threads per rank, else OMP_NUM_THREADS, else the
// rank's share of the cores it may run on (all of them when the launcher bound it to its own,
// else the node's divided among its ranks), so that ranks do not crowd each other's cores.
void share_node_cores(const RankPlacement& placement, DeviceKind device);

// On the cuda backend, makes GPU local_rank % device_count current (before any allocation);
// returns the GPU index, or -1 on the cpu backend.
int bind_gpu(const RankPlacement& placement, DeviceKind device);

}  // namespace mlps
