#include "src/comm/mpi_communicator.h"

#include <climits>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/aliasing.h"
#include "kernels/cpu/float16_bits.h"

namespace mlps {
namespace {

// One fixed tag: MPI delivers the messages between a pair of ranks in posting order.
constexpr int kTag = 7;

// 16-bit payloads go as MPI_UINT16_T, summed by sum_op's user-defined MPI_Op.
MPI_Datatype mpi_type(DataType type) {
  if (format_of(type) != StorageFormat::full) return MPI_UINT16_T;
  return type == DataType::f64 ? MPI_DOUBLE : MPI_FLOAT;
}

int mpi_count(int64_t count, const char* operation) {
  if (count < 0 || count > INT_MAX)
    throw std::length_error(std::string("MPI ") + operation + ": count " +
                            std::to_string(count) + " does not fit MPI's int counts");
  return static_cast<int>(count);
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

}  // namespace

// One posted MPI operation, its host staging buffer (if any) and the copy back (or, from a
// 16-bit wire, the conversion back to float) that wait() does after MPI completes.
class MpiCommunicator::Request : public LoggedRequest<MpiCommunicator> {
 public:
  // Times on CommLog::steady_seconds(), the clock of the phases and of the timeline.
  // `called`: when post() was entered (its progress of earlier requests is this call's too).
  Request(MpiCommunicator& owner, const CommOperation& call, double called)
      : LoggedRequest(owner, call), start_seconds_(called) {}
  // A request dropped without wait() still has MPI working on its buffers: complete it.
  ~Request() override {
    try {
      wait();
    } catch (...) {
      // Destructors must not throw; MPI's own error handler has reported the failure.
    }
  }

  bool ready() override {
    test();
    return request_ == MPI_REQUEST_NULL;
  }
  void wait() override {
    if (!owner_) return;
    MpiCommunicator& owner = release();
    const double wait_start = CommLog::steady_seconds();
    owner.test_live();
    check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
    owner.log().finished(call_);
    const Staging& s = staging_;
    const std::byte* from = host_.get() + static_cast<size_t>(s.out_at) * element_size_;
    if (s.out && s.out_count > 0 && wire_ != StorageFormat::full)
      owner.unpack_from_wire(s.out, reinterpret_cast<const uint16_t*>(from), s.out_count, wire_);
    else if (s.out && s.out_count > 0)
      owner.device_.to_device(s.out, from, static_cast<size_t>(s.out_count) * element_size_);
    host_.reset();
    const double end = CommLog::steady_seconds();
    owner.log().add_blocked(end - wait_start);
    owner.log().record(kind_, owner.name(), owner.size(), bytes_, end - start_seconds_);
    if (CommEventSink* sink = owner.log().event_sink(); sink && traced_) {
      traced_->start = start_seconds_;
      traced_->end = end;
      traced_->blocked = posting_seconds_ + (end - wait_start);
      traced_->started = posting_seconds_;
      sink->comm_event(*traced_);
    }
  }

  // Lets MPI progress (and possibly finish) the operation; the copy back and the record are
  // left to wait().
  void test() {
    if (request_ == MPI_REQUEST_NULL) return;
    int done = 0;
    check(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
  }

  MPI_Request* handle() { return &request_; }
  // post() is done: the time it took (progress, staging, MPI's start) is blocked time.
  void posted() {
    posting_seconds_ = CommLog::steady_seconds() - start_seconds_;
    owner_->log().add_blocked(posting_seconds_);
  }
  // The host buffer of count elements (16-bit wire values in `wire` format, else element_size
  // bytes each), filled with the staging's input; wait() copies (or unpacks) its output back.
  std::byte* stage(int64_t count, size_t element_size, StorageFormat wire, const Staging& s) {
    element_size_ = element_size;
    wire_ = wire;
    staging_ = s;
    host_ = std::make_unique_for_overwrite<std::byte[]>(static_cast<size_t>(count) * element_size);
    std::byte* at = host_.get() + static_cast<size_t>(s.in_at) * element_size;
    if (s.in && wire != StorageFormat::full)
      owner_->pack_to_wire(reinterpret_cast<uint16_t*>(at), s.in, s.in_count);
    else if (s.in)
      owner_->device_.to_host(at, s.in, static_cast<size_t>(s.in_count) * element_size);
    return host_.get();
  }

 private:
  double start_seconds_;
  double posting_seconds_ = 0;  // inside post(), already counted as blocked
  MPI_Request request_ = MPI_REQUEST_NULL;
  std::unique_ptr<std::byte[]> host_;  // the stage, when the call goes through host memory
  size_t element_size_ = 0;
  StorageFormat wire_ = StorageFormat::full;
  Staging staging_;  // what the stage holds and returns
};

MpiCommunicator::MpiCommunicator(const Device& device, MPI_Comm comm, std::string name,
                                 std::shared_ptr<CommLog> log)
    : Communicator(std::move(name), std::move(log)), device_(device) {
  check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiCommunicator::~MpiCommunicator() {
  complete_live();
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
  std::vector<float> host(staged() ? static_cast<size_t>(count) : 0);  // device memory's copy
  if (staged()) device_.to_host(host.data(), src, host.size() * sizeof(float));
  cpu::pack_16bit(wire, staged() ? host.data() : static_cast<const float*>(src), count,
                  wire_format());
}

void MpiCommunicator::unpack_from_wire(void* dst, const uint16_t* wire, int64_t count,
                                       StorageFormat format) const {
  std::vector<float> host(staged() ? static_cast<size_t>(count) : 0);
  cpu::unpack_16bit(staged() ? host.data() : static_cast<float*>(dst), wire, count, format);
  if (staged()) device_.to_device(dst, host.data(), host.size() * sizeof(float));
}

void MpiCommunicator::test_live() {
  for (CommRequest* request : live_) static_cast<Request*>(request)->test();
}

void MpiCommunicator::progress() {
  const double start = CommLog::steady_seconds();
  test_live();
  log().add_blocked(CommLog::steady_seconds() - start);
}

bool MpiCommunicator::through_host(const CommOperation& c) const {
  if (staged() || on_16bit_wire(c.type)) return true;
  const size_t part = static_cast<size_t>(c.count) * size_of(c.type);
  const size_t whole = part * static_cast<size_t>(size_);
  switch (c.op) {
    case CommOp::all_gather: {  // in place when send is this rank's slot of recv
      const void* slot = static_cast<std::byte*>(c.recv) + part * static_cast<size_t>(rank_);
      return c.send != slot && detail::ranges_overlap(c.send, part, c.recv, whole);
    }
    case CommOp::reduce_scatter:  // MPI's in-place result lands at the start, not at the slot
      return detail::ranges_overlap(c.send, whole, c.recv, part);
    default:
      return false;
  }
}

void MpiCommunicator::start_mpi(const CommOperation& c, const void* send, void* recv,
                                MPI_Datatype type, MPI_Op sum, MPI_Request* request) {
  const int n = mpi_count(c.count, to_string(kind_of(c.op)));
  const size_t element = wire_size_of(c.type);  // type's size: MPI_UINT16_T on a 16-bit wire
  const void* in = send == recv ? MPI_IN_PLACE : send;
  switch (c.op) {
    case CommOp::all_reduce:
      return check(MPI_Iallreduce(in, recv, n, type, sum, comm_, request), "MPI_Iallreduce");
    case CommOp::all_gather:
      if (send == static_cast<std::byte*>(recv) + static_cast<size_t>(n) * element * rank_)
        return check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, type, comm_,
                                    request),
                     "MPI_Iallgather");
      return check(MPI_Iallgather(send, n, type, recv, n, type, comm_, request), "MPI_Iallgather");
    case CommOp::reduce_scatter:
      return check(MPI_Ireduce_scatter_block(in, recv, n, type, sum, comm_, request),
                   "MPI_Ireduce_scatter_block");
    case CommOp::broadcast:
      return check(MPI_Ibcast(recv, n, type, c.peer, comm_, request), "MPI_Ibcast");
    case CommOp::send:
      return check(MPI_Isend(send, n, type, c.peer, kTag + c.tag, comm_, request), "MPI_Isend");
    case CommOp::recv:
      return check(MPI_Irecv(recv, n, type, c.peer, kTag + c.tag, comm_, request), "MPI_Irecv");
  }
}

PendingComm MpiCommunicator::post(const CommOperation& c) {
  const double called = CommLog::steady_seconds();
  test_live();
  auto request = std::make_unique<Request>(*this, c, called);
  const bool wire = on_16bit_wire(c.type);
  const MPI_Datatype type = wire ? MPI_UINT16_T : mpi_type(c.type);
  const StorageFormat sixteen = wire ? wire_format() : format_of(c.type);
  const MPI_Op sum = sixteen != StorageFormat::full ? sum_op(sixteen) : MPI_SUM;
  if (!through_host(c)) {
    start_mpi(c, c.send, c.recv, type, sum, request->handle());
    request->posted();
    return request;
  }
  // One host buffer, used in place; MPI's in-place reduce-scatter leaves the part at the start.
  const size_t element = wire ? sizeof(uint16_t) : size_of(c.type);
  std::byte* host = request->stage(buffer_count(c), element,
                                   wire ? wire_format() : StorageFormat::full, staging(c, 0));
  const size_t slot = static_cast<size_t>(c.count * rank_) * element;
  start_mpi(c, c.op == CommOp::all_gather ? host + slot : host, host, type, sum, request->handle());
  request->posted();
  return request;
}

}  // namespace mlps
