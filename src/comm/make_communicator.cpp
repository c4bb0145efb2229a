#include "src/comm/make_communicator.h"

#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include "src/comm/mpi_communicator.h"
#include "src/base/errors.h"

#ifdef MLPSCALE_WITH_CUDA
#include "kernels/cuda/device_select.h"
#endif
#ifdef MLPSCALE_WITH_NCCL
#include "src/comm/nccl_communicator.h"
#endif

namespace mlps {
namespace {

constexpr bool kBuiltWithNccl =
#ifdef MLPSCALE_WITH_NCCL
    true;
#else
    false;
#endif

constexpr int kUuidChars = 32;

// The UUID of the GPU bind_gpu gives this rank (local_rank % visible GPUs). UUIDs, not indices:
// with one GPU visible per task (srun --gpus-per-task) every rank sees "GPU 0", yet they differ.
std::string bound_gpu_uuid([[maybe_unused]] const RankPlacement& placement) {
#ifdef MLPSCALE_WITH_CUDA
  const int count = cuda::device_count();
  if (count > 0) return cuda::device_uuid(placement.local_rank % count);
#endif
  return std::string(kUuidChars, '-');
}

// A node on which fewer distinct GPUs than ranks are bound.
struct SharedGpus {
  int ranks = 0;
  int gpus = 0;
  char host[MPI_MAX_PROCESSOR_NAME] = {};
};

// The first such node in world rank order, the same on every rank. Collective over world.
std::optional<SharedGpus> find_shared_gpus(const RankPlacement& placement, MPI_Comm world) {
  MPI_Comm node = MPI_COMM_NULL;  // this node's placement.local_size ranks
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, placement.world_rank, MPI_INFO_NULL, &node);
  std::string uuid = bound_gpu_uuid(placement);
  uuid.resize(kUuidChars, '-');
  std::vector<char> all(static_cast<size_t>(kUuidChars) * placement.local_size);
  MPI_Allgather(uuid.data(), kUuidChars, MPI_CHAR, all.data(), kUuidChars, MPI_CHAR, node);
  MPI_Comm_free(&node);
  std::set<std::string> distinct;
  for (int r = 0; r < placement.local_size; ++r)
    distinct.emplace(all.data() + static_cast<size_t>(r) * kUuidChars, kUuidChars);

  SharedGpus mine{placement.local_size, static_cast<int>(distinct.size())};
  placement.host.copy(mine.host, sizeof mine.host - 1);
  std::vector<SharedGpus> nodes(static_cast<size_t>(placement.world_size));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, nodes.data(), sizeof mine, MPI_BYTE, world);
  for (const SharedGpus& n : nodes)
    if (n.gpus < n.ranks) return n;
  return std::nullopt;
}

}  // namespace

const char* to_string(CommBackend backend) {
  return backend == CommBackend::nccl ? "nccl" : "mpi";
}

CommBackend resolve_comm_backend(const std::string& requested, DeviceKind device,
                                 const RankPlacement& placement, MPI_Comm world) {
  if (requested != "auto" && requested != "mpi" && requested != "nccl")
    throw InputError("--comm must be auto, mpi or nccl, not '" + requested + "'");
  if (requested == "mpi") return CommBackend::mpi;
  const bool nccl_asked = requested == "nccl";

  // Every decision below rests on values all ranks share, so all ranks take the same branch.
  int any_cpu = device == DeviceKind::cpu ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &any_cpu, 1, MPI_INT, MPI_MAX, world);
  if (any_cpu) {
    if (nccl_asked) throw AgreedError("--comm nccl needs the cuda backend (--device cpu in use)");
    return CommBackend::mpi;
  }
  if (!kBuiltWithNccl) {
    if (nccl_asked)
      throw AgreedError("--comm nccl: this build has no NCCL (rebuild with NCCL_HOME set)");
    return CommBackend::mpi;
  }
  if (const auto shared = find_shared_gpus(placement, world)) {
    if (nccl_asked)
      throw AgreedError("--comm nccl: " + std::to_string(shared->ranks) + " ranks share " +
                       std::to_string(shared->gpus) + " GPUs on host " + shared->host +
                       "; NCCL needs one GPU per rank (use --comm mpi)");
    return CommBackend::mpi;
  }
  return CommBackend::nccl;
}

std::unique_ptr<Communicator> make_communicator(CommBackend backend, const Device& device,
                                                MPI_Comm comm, const std::string& name,
                                                std::shared_ptr<CommLog> log, CommRole role) {
  std::unique_ptr<Communicator> communicator;
  if (backend == CommBackend::mpi) {
    communicator = std::make_unique<MpiCommunicator>(device, comm, name, std::move(log));
  } else {
#ifdef MLPSCALE_WITH_NCCL
    if (device.kind() != DeviceKind::cuda)
      throw std::logic_error("make_communicator: NCCL needs the cuda backend");
    communicator = std::make_unique<NcclCommunicator>(comm, name, std::move(log));
#else
    throw std::logic_error("make_communicator: NCCL asked for in a build without NCCL");
#endif
  }
  communicator->set_wire_format(device.wire_format(role));
  return communicator;
}

}  // namespace mlps
