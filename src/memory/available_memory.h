#pragma once
// The memory a rank may use: on the CPU the host memory available on its node (the kernel's
// MemAvailable, lowered to the cgroup's limit in a container or a Slurm job) shared by the
// node's ranks; on the GPU the free memory of its GPU shared by the ranks bound to that GPU.
// check_memory_fits refuses, before any large allocation, a run whose accounting
// (src/schemes/<scheme>/<scheme>_memory.h, or a benchmark's buffers) does not fit in it.
#include <mpi.h>

#include <string>

#include "src/comm/process_placement.h"
#include "src/device/device.h"

namespace mlps {

struct AvailableMemory {
  double bytes = 0;   // this rank's share
  std::string where;  // e.g. "of host memory (22.1 GiB available on node-3, shared by 2 ranks)"
};

AvailableMemory available_memory_per_rank(DeviceKind device, const RankPlacement& placement);

// Collective over comm: when `need` bytes (described by `what`) exceed some rank's share,
// every rank throws the same InputError naming the rank that fits worst and both figures.
void check_memory_fits(MPI_Comm comm, double need, const std::string& what,
                       const AvailableMemory& available);

// Collective over comm: --verify's serial replay (`replay_bytes`, model_memory.h) runs on rank
// 0's host beside what the ranks sharing that memory hold (`rank_need` each, counted on CPUs
// only). Every rank throws the same AgreedError when the host does not have it available.
void check_verify_memory_fits(MPI_Comm comm, double rank_need, DeviceKind device,
                              double replay_bytes);

}  // namespace mlps
