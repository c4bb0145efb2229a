#pragma once
// The NCCL backend of the Comm seam (only in builds with NCCL), bootstrapped over MPI. Operations
// run on the communicator's own stream after the kernel stream's work; wait() orders the kernel
// stream after them without blocking the host (times come from GPU events when the log's totals
// are taken). Sends and receives are held back and launched as one NCCL group at the next wait()
// or collective: two separately launched point-to-point kernels (send to one peer, receive from
// another) can deadlock. A 16-bit wire packs f32 payloads into a device buffer and runs NCCL on
// ncclBfloat16/ncclFloat16, unpacking in wait(); the buffers are kept for the next operation of
// their size, so a steady-state step allocates none.
#ifdef MLPSCALE_WITH_NCCL

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <functional>
#include <map>
#include <vector>

#include "src/comm/communicator.h"

namespace mlps {

class NcclCommunicator : public Communicator {
 public:
  // Collective over comm; the GPU of this rank must be current (bind_gpu).
  NcclCommunicator(MPI_Comm comm, std::string name, std::shared_ptr<CommLog> log);
  // Completes outstanding requests, then destroys the NCCL communicator and the stream.
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  const char* backend() const override { return "nccl"; }

 private:
  class Request;
  PendingComm post(const CommOperation& operation) override;
  struct Launch;  // the events of one launch on the stream
  // The 16-bit device buffer of one operation on a 16-bit wire (count values, one the owner
  // keeps) and its staging, whose output wait() unpacks (none: a send).
  struct Wire {
    Wire(NcclCommunicator& owner, int64_t count, StorageFormat format, const Staging& staging);
    ~Wire();  // gives data back to the owner, after the unpack in stream order; never throws
    Wire(const Wire&) = delete;
    Wire& operator=(const Wire&) = delete;
    NcclCommunicator& owner;
    int64_t count;
    uint16_t* data = nullptr;
    StorageFormat format;
    Staging staging;
  };

  // Launches calls (several: as one NCCL group) on the stream after the kernel stream's work.
  std::shared_ptr<Launch> launch(const std::vector<std::function<ncclResult_t()>>& calls,
                                 double bytes);
  void flush_point_to_point();

  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::vector<std::function<ncclResult_t()>> held_calls_;  // sends/receives not yet launched
  std::vector<Request*> held_requests_;
  double held_bytes_ = 0;
  // Wire buffers between uses, by count: whoever takes one next runs after its last unpack on
  // the kernel stream (the pack kernels, then NCCL after the kernel stream's event).
  std::map<int64_t, std::vector<uint16_t*>> spare_wires_;
};

}  // namespace mlps

#endif  // MLPSCALE_WITH_NCCL
