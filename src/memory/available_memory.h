#pragma once
// The memory a rank may use: on the CPU the host memory available on its node (the kernel's
// MemAvailable, lowered to the cgroup's limit in a container or a Slurm job) shared by the
// node's ranks; on the GPU the free memory of its GPU shared by the ranks bound to that GPU.
#include <string>

#include "src/comm/process_placement.h"
#include "src/device.h"

namespace mlps {

struct AvailableMemory {
  double bytes = 0;   // this rank's share
  std::string where;  // e.g. "of host memory (22.1 GiB available on node-3, shared by 2 ranks)"
};

AvailableMemory available_memory_per_rank(DeviceKind device, const RankPlacement& placement);

}  // namespace mlps
