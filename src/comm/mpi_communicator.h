#pragma once
// The MPI backend of the Comm seam: non-blocking MPI collectives on a duplicate of the given
// communicator. On the cuda backend device buffers are staged through host memory (Debian's
// MPICH is not CUDA-aware): copied to the host at the call, back to the device in wait().
//
// MPICH advances a non-blocking collective only inside MPI calls, so every new operation and
// every wait() first tests all of this communicator's outstanding requests: collectives posted
// earlier keep moving while the caller posts the next one (DDP buckets, ZeRO-3 prefetch).
//
// A 16-bit wire (set_wire_format) packs f32 payloads into a host buffer of 16-bit values at the
// call (from device memory: through a host copy), moves MPI_UINT16_T, reduces with a
// user-defined MPI_Op that adds in float and rounds back, and unpacks in wait(). The ops are
// created on first use and freed by the destructor.
#include <mpi.h>

#include <vector>

#include "src/comm/communicator.h"
#include "src/device.h"

namespace mlps {

class MpiCommunicator : public Communicator {
 public:
  // Collective over comm (MPI_Comm_dup); the caller may free comm afterwards. device (whose
  // memory the buffers are) must outlive the communicator.
  MpiCommunicator(const Device& device, MPI_Comm comm, std::string name,
                  std::shared_ptr<CommLog> log);
  // Completes any request still outstanding (MPI forbids abandoning a collective), then frees
  // the duplicate and the 16-bit sum ops. Must run before MPI_Finalize.
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "mpi"; }

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

  // MPI_Test on every outstanding request, so that MPICH's progress engine runs.
  void progress() override;
  std::unique_ptr<Request> start(CommKind kind, double bytes);
  // True when device buffers must go through host memory.
  bool staged() const { return device_.kind() == DeviceKind::cuda; }
  // The 16-bit wire: count floats of device memory packed in the current wire format, and back.
  void pack_to_wire(uint16_t* wire, const void* src, int64_t count) const;
  void unpack_from_wire(void* dst, const uint16_t* wire, int64_t count,
                        StorageFormat format) const;
  // The sum of 16-bit values of the format (bf16 or fp16), created on first use.
  MPI_Op sum_op(StorageFormat format);

  const Device& device_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<Request*> live_;  // requests not yet waited, in posting order
  MPI_Op sum_ops_[2] = {MPI_OP_NULL, MPI_OP_NULL};  // bf16, fp16
};

}  // namespace mlps
