#pragma once
// The NCCL backend of the Comm seam (only in builds with NCCL). Bootstrapped over MPI (rank 0's
// unique id by MPI_Bcast); operations run on the communicator's own stream, ordered after the
// work already on the kernel stream, and wait() orders the kernel stream after them.
//
// Sends and receives are held back and launched together in one NCCL group at the next wait()
// or collective, so that the usual exchange (send to one peer, receive from another, wait)
// cannot deadlock the way two separately launched NCCL point-to-point kernels can.
#ifdef MLPSCALE_WITH_NCCL

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <functional>
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

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "nccl"; }

  PendingComm all_reduce_async(const void* send, void* recv, int64_t count,
                               DataType type) override;
  PendingComm all_gather_async(const void* send, void* recv, int64_t count,
                               DataType type) override;
  PendingComm reduce_scatter_async(const void* send, void* recv, int64_t count,
                                   DataType type) override;
  PendingComm broadcast_async(void* buffer, int64_t count, DataType type, int root) override;
  PendingComm send_async(const void* buffer, int64_t count, DataType type, int peer) override;
  PendingComm recv_async(void* buffer, int64_t count, DataType type, int peer) override;

 private:
  class Request;
  friend class Request;
  struct Launch;  // the start and done events of one launch on the stream

  // Launches calls (several: as one NCCL group) on the stream after the kernel stream's work.
  std::shared_ptr<Launch> launch(const std::vector<std::function<ncclResult_t()>>& calls);
  PendingComm collective(CommKind kind, double bytes, std::function<ncclResult_t()> call);
  PendingComm point_to_point(double bytes, std::function<ncclResult_t()> call);
  void flush_point_to_point();

  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  std::vector<Request*> live_;  // requests not yet waited
  std::vector<std::function<ncclResult_t()>> held_calls_;  // sends/receives not yet launched
  std::vector<Request*> held_requests_;
};

}  // namespace mlps

#endif  // MLPSCALE_WITH_NCCL
