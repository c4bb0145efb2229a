#include "src/comm/process_placement.h"

#include <sched.h>

#include <algorithm>
#include <map>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "kernels/kernels.h"
#include "src/base/errors.h"

#ifdef MLPSCALE_WITH_CUDA
#include "kernels/cuda/device_select.h"
#endif

namespace mlps {

RankPlacement discover_placement(MPI_Comm world) {
  RankPlacement placement;
  MPI_Comm_rank(world, &placement.world_rank);
  MPI_Comm_size(world, &placement.world_size);
  // Ranks that can share memory are the ranks of one node, however they were launched.
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, placement.world_rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &placement.local_rank);
  MPI_Comm_size(node, &placement.local_size);
  // A node is named by its first world rank (local rank 0 of a split keyed by world rank).
  int first = placement.world_rank;
  MPI_Bcast(&first, 1, MPI_INT, 0, node);
  MPI_Comm_free(&node);
  std::vector<int> firsts(static_cast<size_t>(placement.world_size));
  MPI_Allgather(&first, 1, MPI_INT, firsts.data(), 1, MPI_INT, world);
  std::map<int, int> index;
  for (const int f : firsts)
    placement.node_of_rank.push_back(index.emplace(f, static_cast<int>(index.size())).first->second);
  char name[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  MPI_Get_processor_name(name, &length);
  placement.host.assign(name, static_cast<size_t>(length));
  return placement;
}

void check_launch_matches_slurm(int world_size) {
  // The task count Slurm gave this launch: srun sets the step's; inside a batch script without
  // srun only the allocation's is there.
  int tasks = 0;
  for (const char* name : {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"}) {
    const char* value = std::getenv(name);
    if (value && *value) {
      tasks = std::atoi(value);
      break;
    }
  }
  if (tasks > 1 && world_size == 1)
    throw InputError("Slurm started " + std::to_string(tasks) +
                     " tasks but MPI sees 1 rank per process: srun is launching singletons; use "
                     "srun --mpi=pmi2 (MPICH) or the MPI library Slurm was built for");
}

void share_node_cores(const RankPlacement& placement, DeviceKind device) {
  // The CPU backend applies OPENBLAS_NUM_THREADS itself (kernels/cpu/parallel_loops.h).
  if (device != DeviceKind::cpu || std::getenv("OPENBLAS_NUM_THREADS") ||
      std::getenv("OMP_NUM_THREADS"))
    return;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  const int mine = CPU_COUNT(&allowed);
  const int node = static_cast<int>(std::thread::hardware_concurrency());
  const bool bound = node > 0 && mine < node;  // the launcher gave this rank its own cores
  cpu::set_thread_count(bound ? mine : std::max(1, mine / std::max(1, placement.local_size)));
}

int bind_gpu(const RankPlacement& placement, DeviceKind device) {
  if (device != DeviceKind::cuda) return -1;
#ifdef MLPSCALE_WITH_CUDA
  const int count = cuda::device_count();
  // Rank-local, so not an InputError: the whole job must stop, not just this rank.
  if (count == 0)
    throw std::runtime_error("--device cuda: no GPU is visible to rank " +
                     std::to_string(placement.world_rank) + " on host " + placement.host);
  const int gpu = placement.local_rank % count;
  cuda::set_current_device(gpu);
  return gpu;
#else
  (void)placement;
  throw std::logic_error("bind_gpu: the cuda backend in a build without CUDA");
#endif
}

}  // namespace mlps
