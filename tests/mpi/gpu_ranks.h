#pragma once
// Support for the multi-rank tests on device memory: each rank binds its own GPU, all ranks skip
// together when some rank has none, and a world communicator is built on the bound GPU.
#include <mpi.h>

#include <memory>

#include "kernels/kernels.h"
#include "src/comm/comm_log.h"
#include "src/comm/make_communicator.h"
#include "src/comm/process_placement.h"
#include "tests/mpi/mpi_test.h"

namespace mlps::testing {

#ifdef MLPSCALE_WITH_CUDA
inline bool gpu_here() { return cuda::gpu_available(); }
#else
inline bool gpu_here() { return false; }
#endif

class GpuRanksTest : public MpiTest {
 protected:
  // Binds each rank's GPU; false (on every rank) when some rank has none.
  bool bind_gpus() {
    if (!on_all_ranks(gpu_here())) return false;
    placement = discover_placement(MPI_COMM_WORLD);
    bind_gpu(placement, DeviceKind::cuda);
    return true;
  }
  // Whether "auto" picks NCCL: it does only with one GPU per rank.
  bool nccl_chosen() const {
    return resolve_comm_backend("auto", DeviceKind::cuda, placement, MPI_COMM_WORLD) ==
           CommBackend::nccl;
  }
  RankPlacement placement;
};

// A communicator of one backend over the world on this rank's GPU, with the log it records to.
struct GpuWorld {
  explicit GpuWorld(CommBackend backend)
      : comm(make_communicator(backend, device, MPI_COMM_WORLD, "world", log)) {}
  Device device{DeviceKind::cuda};
  std::shared_ptr<CommLog> log = std::make_shared<CommLog>();
  std::unique_ptr<Communicator> comm;
};

}  // namespace mlps::testing
