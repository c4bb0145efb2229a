#pragma once
// The MPI backend of the Comm seam: non-blocking MPI collectives on a duplicate of the given
// communicator. Debian's MPICH is not CUDA-aware, so device buffers go through host memory:
// copied to the host at the call, back in wait(). MPICH advances a non-blocking collective only
// inside MPI calls, so every new operation and every wait() first tests all outstanding
// requests: earlier collectives (DDP buckets, ZeRO-3 prefetch) keep moving. That work, and
// MPI's own in starting a call (MPICH copies and reduces part of a message there), is time the
// rank spends communicating: the log's blocked time counts the whole call, start and wait. A
// 16-bit wire packs f32 payloads into host 16-bit values, moves MPI_UINT16_T, sums with a
// user-defined MPI_Op that adds in float and rounds back, and unpacks in wait().
#include <mpi.h>

#include "src/comm/communicator.h"
#include "src/device/device.h"

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

  const char* backend() const override { return "mpi"; }

 private:
  class Request;
  PendingComm post(const CommOperation& call) override;
  // True when device buffers must go through host memory.
  bool staged() const { return device_.kind() == DeviceKind::cuda; }
  // MPI_Test on every outstanding request, so that MPICH's progress engine runs; its time is
  // blocked time, as is post()'s.
  void progress() override;
  void test_live();  // the same, untimed: inside post() and wait(), which time themselves
  // True when the call goes through a host buffer: device memory, a 16-bit wire, or a send
  // buffer overlapping the receive buffer (which MPI forbids, but for MPI_IN_PLACE).
  bool through_host(const CommOperation& call) const;
  // The MPI call on the buffers it reads and writes (in place where they are equal).
  void start_mpi(const CommOperation& call, const void* send, void* recv, MPI_Datatype type,
                 MPI_Op sum, MPI_Request* request);
  // The 16-bit wire: count floats of device memory packed in the current wire format, and back.
  void pack_to_wire(uint16_t* wire, const void* src, int64_t count) const;
  void unpack_from_wire(void* dst, const uint16_t* wire, int64_t count,
                        StorageFormat format) const;
  // The sum of 16-bit values of the format (bf16 or fp16), created on first use.
  MPI_Op sum_op(StorageFormat format);

  const Device& device_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Op sum_ops_[2] = {MPI_OP_NULL, MPI_OP_NULL};  // bf16, fp16
};

}  // namespace mlps
