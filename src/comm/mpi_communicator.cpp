#include "src/comm/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/aliasing.h"
#include "kernels/cpu/float16_bits.h"

namespace mlps {
namespace {

// One fixed tag: MPI delivers the messages between a pair of ranks in posting order.
constexpr int kTag = 7;

MPI_Datatype mpi_type(DataType type) { return type == DataType::f64 ? MPI_DOUBLE : MPI_FLOAT; }

int mpi_count(int64_t count, const char* operation) {
  if (count < 0 || count > INT_MAX)
    throw std::length_error(std::string("MPI ") + operation + ": count " +
                            std::to_string(count) + " does not fit MPI's int counts");
  return static_cast<int>(count);
}

void check_rank(int rank, int size, const char* what) {
  if (rank < 0 || rank >= size)
    throw std::invalid_argument(std::string("MPI ") + what + " " + std::to_string(rank) +
                                " is not a rank of a communicator of " + std::to_string(size));
}

// With MPI's default error handler a failure aborts before returning; this covers a handler
// that returns errors instead.
void check(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw std::runtime_error(std::string(call) + " failed: " + std::string(text, length));
}

// The user-defined MPI_Op of a 16-bit wire: adds in float and rounds back to the format. Float's
// 24 significand bits are at least 2p+2 for both formats (p = 8, 11), so rounding the float sum
// gives the correctly rounded exact sum (double rounding is innocuous). Float addition is
// commutative, as the op is declared.
template <uint16_t (*ToBits)(float), float (*FromBits)(uint16_t)>
void sum_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = ToBits(FromBits(a[i]) + FromBits(b[i]));
}

// MPI forbids a send buffer that overlaps the receive buffer (other than MPI_IN_PLACE).
using detail::ranges_overlap;

}  // namespace

// One posted MPI operation, its host staging buffer (if any) and the copy back (or, from a
// 16-bit wire, the conversion back to float) that wait() does after MPI completes.
class MpiCommunicator::Request : public CommRequest {
 public:
  Request(MpiCommunicator& owner, CommKind kind, double bytes)
      : owner_(&owner), kind_(kind), bytes_(bytes), start_seconds_(MPI_Wtime()),
        call_(owner.log().posted(kind, owner.name(), bytes)) {
    owner.live_.push_back(this);
  }
  // A request dropped without wait() still has MPI working on its buffers: complete it.
  ~Request() override {
    if (!owner_) return;
    try {
      complete();
    } catch (...) {
      // Destructors must not throw; MPI's own error handler has reported the failure.
    }
  }
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  void wait() override {
    if (owner_) complete();
  }

  // Lets MPI progress (and possibly finish) the operation; the copy back and the record are
  // left to wait().
  void test() {
    if (request_ == MPI_REQUEST_NULL) return;
    int done = 0;
    check(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
  }

  MPI_Request* handle() { return &request_; }
  std::byte* stage(size_t bytes) {
    host_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
    return host_.get();
  }
  void copy_back_to(void* dst, size_t bytes) {
    copy_dst_ = dst;
    copy_bytes_ = bytes;
  }
  // The staging buffer as count 16-bit wire values.
  uint16_t* stage_wire(int64_t count) {
    return reinterpret_cast<uint16_t*>(stage(static_cast<size_t>(count) * sizeof(uint16_t)));
  }
  // wait() converts the first count wire values to floats at dst.
  void unpack_to(void* dst, int64_t count, StorageFormat format) {
    copy_dst_ = dst;
    unpack_count_ = count;
    unpack_format_ = format;
  }

 private:
  void complete() {
    MpiCommunicator& owner = *owner_;
    owner_ = nullptr;
    std::erase(owner.live_, this);
    const double wait_start = MPI_Wtime();
    owner.progress();
    check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
    owner.log().finished(call_);
    if (unpack_count_ > 0)
      owner.unpack_from_wire(copy_dst_, reinterpret_cast<const uint16_t*>(host_.get()),
                             unpack_count_, unpack_format_);
    else if (copy_bytes_ > 0)
      owner.device_.to_device(copy_dst_, host_.get(), copy_bytes_);
    host_.reset();
    const double end = MPI_Wtime();
    owner.log().add_blocked(end - wait_start);
    owner.log().record(kind_, owner.name(), owner.size(), bytes_, end - start_seconds_);
  }

  MpiCommunicator* owner_;  // null once completed
  CommKind kind_;
  double bytes_;
  double start_seconds_;
  int64_t call_;  // in the log's recent calls
  MPI_Request request_ = MPI_REQUEST_NULL;
  std::unique_ptr<std::byte[]> host_;
  void* copy_dst_ = nullptr;
  size_t copy_bytes_ = 0;
  int64_t unpack_count_ = 0;
  StorageFormat unpack_format_ = StorageFormat::full;
};

MpiCommunicator::MpiCommunicator(const Device& device, MPI_Comm comm, std::string name,
                                 std::shared_ptr<CommLog> log)
    : Communicator(std::move(name), std::move(log)), device_(device) {
  check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiCommunicator::~MpiCommunicator() {
  while (!live_.empty()) {
    Request* request = live_.front();
    try {
      request->wait();  // removes it from live_
    } catch (...) {
      std::erase(live_, request);
    }
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  MPI_Comm_free(&comm_);
  for (MPI_Op& op : sum_ops_)
    if (op != MPI_OP_NULL) MPI_Op_free(&op);
}

MPI_Op MpiCommunicator::sum_op(StorageFormat format) {
  const bool bf16 = format == StorageFormat::bf16;
  MPI_Op& op = sum_ops_[bf16 ? 0 : 1];
  if (op == MPI_OP_NULL)  // created on first use: MPI_Op_create is local, not collective
    check(MPI_Op_create(bf16 ? &sum_16bit<cpu::float_to_bf16_bits, cpu::bf16_bits_to_float>
                             : &sum_16bit<cpu::float_to_fp16_bits, cpu::fp16_bits_to_float>,
                        1, &op),
          "MPI_Op_create");
  return op;
}

void MpiCommunicator::pack_to_wire(uint16_t* wire, const void* src, int64_t count) const {
  if (staged()) {
    std::vector<float> host(static_cast<size_t>(count));
    device_.to_host(host.data(), src, host.size() * sizeof(float));
    cpu::pack_16bit(wire, host.data(), count, wire_format());
  } else {
    cpu::pack_16bit(wire, static_cast<const float*>(src), count, wire_format());
  }
}

void MpiCommunicator::unpack_from_wire(void* dst, const uint16_t* wire, int64_t count,
                                       StorageFormat format) const {
  if (staged()) {
    std::vector<float> host(static_cast<size_t>(count));
    cpu::unpack_16bit(host.data(), wire, count, format);
    device_.to_device(dst, host.data(), host.size() * sizeof(float));
  } else {
    cpu::unpack_16bit(static_cast<float*>(dst), wire, count, format);
  }
}

void MpiCommunicator::progress() {
  for (Request* request : live_) request->test();
}

std::unique_ptr<MpiCommunicator::Request> MpiCommunicator::start(CommKind kind, double bytes) {
  progress();
  return std::make_unique<Request>(*this, kind, bytes);
}

PendingComm MpiCommunicator::all_reduce_async(const void* send, void* recv, int64_t count,
                                              DataType type) {
  const int n = mpi_count(count, "all-reduce");
  const size_t bytes = static_cast<size_t>(count) * size_of(type);
  auto request = start(CommKind::all_reduce, static_cast<double>(count * wire_size_of(type)));
  if (on_16bit_wire(type)) {
    uint16_t* wire = request->stage_wire(count);
    pack_to_wire(wire, send, count);
    check(MPI_Iallreduce(MPI_IN_PLACE, wire, n, MPI_UINT16_T, sum_op(wire_format()), comm_,
                         request->handle()),
          "MPI_Iallreduce");
    request->unpack_to(recv, count, wire_format());
  } else if (staged()) {
    std::byte* host = request->stage(bytes);
    device_.to_host(host, send, bytes);
    check(MPI_Iallreduce(MPI_IN_PLACE, host, n, mpi_type(type), MPI_SUM, comm_,
                         request->handle()),
          "MPI_Iallreduce");
    request->copy_back_to(recv, bytes);
  } else {
    check(MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, n, mpi_type(type), MPI_SUM,
                         comm_, request->handle()),
          "MPI_Iallreduce");
  }
  return request;
}

PendingComm MpiCommunicator::all_gather_async(const void* send, void* recv, int64_t count,
                                              DataType type) {
  const int n = mpi_count(count, "all-gather");
  const size_t in_bytes = static_cast<size_t>(count) * size_of(type);
  const size_t out_bytes = in_bytes * static_cast<size_t>(size_);
  const size_t slot_offset = in_bytes * static_cast<size_t>(rank_);
  const void* slot = static_cast<std::byte*>(recv) + slot_offset;
  auto request = start(CommKind::all_gather,
                       static_cast<double>(count * size_ * wire_size_of(type)));
  if (on_16bit_wire(type)) {
    // This rank's own part comes back rounded too, so every rank holds the same values.
    uint16_t* wire = request->stage_wire(count * size_);
    pack_to_wire(wire + count * rank_, send, count);
    check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, wire, n, MPI_UINT16_T, comm_,
                         request->handle()),
          "MPI_Iallgather");
    request->unpack_to(recv, count * size_, wire_format());
  } else if (staged() || (send != slot && ranges_overlap(send, in_bytes, recv, out_bytes))) {
    std::byte* host = request->stage(out_bytes);
    device_.to_host(host + slot_offset, send, in_bytes);
    check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, host, n, mpi_type(type), comm_,
                         request->handle()),
          "MPI_Iallgather");
    request->copy_back_to(recv, out_bytes);
  } else if (send == slot) {
    check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, mpi_type(type), comm_,
                         request->handle()),
          "MPI_Iallgather");
  } else {
    check(MPI_Iallgather(send, n, mpi_type(type), recv, n, mpi_type(type), comm_,
                         request->handle()),
          "MPI_Iallgather");
  }
  return request;
}

PendingComm MpiCommunicator::reduce_scatter_async(const void* send, void* recv, int64_t count,
                                                  DataType type) {
  const int n = mpi_count(count, "reduce-scatter");
  const size_t out_bytes = static_cast<size_t>(count) * size_of(type);
  const size_t in_bytes = out_bytes * static_cast<size_t>(size_);
  auto request = start(CommKind::reduce_scatter,
                       static_cast<double>(count * size_ * wire_size_of(type)));
  // In place (recv inside send, NCCL's convention) goes through a copy: MPI's in-place
  // reduce-scatter puts the result at the start of the buffer, not at the rank's slot.
  if (on_16bit_wire(type)) {
    uint16_t* wire = request->stage_wire(count * size_);
    pack_to_wire(wire, send, count * size_);
    check(MPI_Ireduce_scatter_block(MPI_IN_PLACE, wire, n, MPI_UINT16_T, sum_op(wire_format()),
                                    comm_, request->handle()),
          "MPI_Ireduce_scatter_block");
    request->unpack_to(recv, count, wire_format());
  } else if (staged() || ranges_overlap(send, in_bytes, recv, out_bytes)) {
    std::byte* host = request->stage(in_bytes);
    device_.to_host(host, send, in_bytes);
    check(MPI_Ireduce_scatter_block(MPI_IN_PLACE, host, n, mpi_type(type), MPI_SUM, comm_,
                                    request->handle()),
          "MPI_Ireduce_scatter_block");
    request->copy_back_to(recv, out_bytes);
  } else {
    check(MPI_Ireduce_scatter_block(send, recv, n, mpi_type(type), MPI_SUM, comm_,
                                    request->handle()),
          "MPI_Ireduce_scatter_block");
  }
  return request;
}

PendingComm MpiCommunicator::broadcast_async(void* buffer, int64_t count, DataType type,
                                             int root) {
  check_rank(root, size_, "broadcast root");
  const int n = mpi_count(count, "broadcast");
  const size_t bytes = static_cast<size_t>(count) * size_of(type);
  auto request = start(CommKind::broadcast, static_cast<double>(count * wire_size_of(type)));
  if (on_16bit_wire(type)) {
    // The root's buffer is rounded too, so every rank holds the same values.
    uint16_t* wire = request->stage_wire(count);
    if (rank_ == root) pack_to_wire(wire, buffer, count);
    check(MPI_Ibcast(wire, n, MPI_UINT16_T, root, comm_, request->handle()), "MPI_Ibcast");
    request->unpack_to(buffer, count, wire_format());
    return request;
  }
  void* target = buffer;
  if (staged()) {
    std::byte* host = request->stage(bytes);
    if (rank_ == root) device_.to_host(host, buffer, bytes);
    else request->copy_back_to(buffer, bytes);
    target = host;
  }
  check(MPI_Ibcast(target, n, mpi_type(type), root, comm_, request->handle()), "MPI_Ibcast");
  return request;
}

PendingComm MpiCommunicator::send_async(const void* buffer, int64_t count, DataType type,
                                        int peer) {
  check_rank(peer, size_, "send peer");
  const int n = mpi_count(count, "send");
  const size_t bytes = static_cast<size_t>(count) * size_of(type);
  auto request = start(CommKind::send_recv, static_cast<double>(count * wire_size_of(type)));
  if (on_16bit_wire(type)) {
    uint16_t* wire = request->stage_wire(count);
    pack_to_wire(wire, buffer, count);
    check(MPI_Isend(wire, n, MPI_UINT16_T, peer, kTag, comm_, request->handle()), "MPI_Isend");
    return request;
  }
  const void* source = buffer;
  if (staged()) {
    std::byte* host = request->stage(bytes);
    device_.to_host(host, buffer, bytes);
    source = host;
  }
  check(MPI_Isend(source, n, mpi_type(type), peer, kTag, comm_, request->handle()), "MPI_Isend");
  return request;
}

PendingComm MpiCommunicator::recv_async(void* buffer, int64_t count, DataType type, int peer) {
  check_rank(peer, size_, "recv peer");
  const int n = mpi_count(count, "recv");
  const size_t bytes = static_cast<size_t>(count) * size_of(type);
  auto request = start(CommKind::send_recv, static_cast<double>(count * wire_size_of(type)));
  if (on_16bit_wire(type)) {
    uint16_t* wire = request->stage_wire(count);
    check(MPI_Irecv(wire, n, MPI_UINT16_T, peer, kTag, comm_, request->handle()), "MPI_Irecv");
    request->unpack_to(buffer, count, wire_format());
    return request;
  }
  void* target = buffer;
  if (staged()) {
    target = request->stage(bytes);
    request->copy_back_to(buffer, bytes);
  }
  check(MPI_Irecv(target, n, mpi_type(type), peer, kTag, comm_, request->handle()), "MPI_Irecv");
  return request;
}

}  // namespace mlps
