#pragma once
// Choosing and creating the communicator backend of --comm auto|mpi|nccl.
#include <mpi.h>

#include <memory>
#include <string>

#include "src/comm/communicator.h"
#include "src/comm/process_placement.h"

namespace mlps {

enum class CommBackend { mpi, nccl };
const char* to_string(CommBackend backend);

// auto: NCCL on the cuda backend when built with NCCL and every rank has a GPU of its own
// (local_size <= GPUs on the node), MPI otherwise. An explicit nccl on the cpu backend, without
// NCCL in the build, or with ranks sharing a GPU is an InputError that says which. Collective
// over world (ranks agree on one answer); placement is discover_placement(world)'s.
CommBackend resolve_comm_backend(const std::string& requested, DeviceKind device,
                                 const RankPlacement& placement, MPI_Comm world);

// A communicator over the ranks of `comm` (the caller may free its own afterwards), carrying
// float payloads in the Device's wire format for `role`, named for logs and results ("world":
// stored under the bare kind, others as "kind:name"). Collective over comm.
std::unique_ptr<Communicator> make_communicator(CommBackend backend, const Device& device,
                                                MPI_Comm comm, const std::string& name,
                                                std::shared_ptr<CommLog> log,
                                                CommRole role = CommRole::activations);

}  // namespace mlps
