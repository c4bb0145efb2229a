#include "src/comm/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

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

// MPI forbids a send buffer that overlaps the receive buffer (other than MPI_IN_PLACE).
bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto pa = reinterpret_cast<std::uintptr_t>(a);
  const auto pb = reinterpret_cast<std::uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && pa < pb + b_bytes && pb < pa + a_bytes;
}

}  // namespace

// One posted MPI operation, its host staging buffer (if any) and the copy back that wait()
// does after MPI completes.
class MpiCommunicator::Request : public CommRequest {
 public:
  Request(MpiCommunicator& owner, CommKind kind, double bytes)
      : owner_(&owner), kind_(kind), bytes_(bytes), start_seconds_(MPI_Wtime()) {
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

 private:
  void complete() {
    MpiCommunicator& owner = *owner_;
    owner_ = nullptr;
    std::erase(owner.live_, this);
    const double wait_start = MPI_Wtime();
    owner.progress();
    check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
    if (copy_bytes_ > 0) owner.device_.to_device(copy_dst_, host_.get(), copy_bytes_);
    host_.reset();
    const double end = MPI_Wtime();
    owner.log().add_blocked(end - wait_start);
    owner.log().record(kind_, owner.name(), owner.size(), bytes_, end - start_seconds_);
  }

  MpiCommunicator* owner_;  // null once completed
  CommKind kind_;
  double bytes_;
  double start_seconds_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  std::unique_ptr<std::byte[]> host_;
  void* copy_dst_ = nullptr;
  size_t copy_bytes_ = 0;
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
  if (!finalized) MPI_Comm_free(&comm_);
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
  auto request = start(CommKind::all_reduce, static_cast<double>(bytes));
  if (staged()) {
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
  auto request = start(CommKind::all_gather, static_cast<double>(out_bytes));
  if (staged() || (send != slot && overlaps(send, in_bytes, recv, out_bytes))) {
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
  auto request = start(CommKind::reduce_scatter, static_cast<double>(in_bytes));
  // In place (recv inside send, NCCL's convention) goes through a copy: MPI's in-place
  // reduce-scatter puts the result at the start of the buffer, not at the rank's slot.
  if (staged() || overlaps(send, in_bytes, recv, out_bytes)) {
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
  auto request = start(CommKind::broadcast, static_cast<double>(bytes));
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
  auto request = start(CommKind::send_recv, static_cast<double>(bytes));
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
  auto request = start(CommKind::send_recv, static_cast<double>(bytes));
  void* target = buffer;
  if (staged()) {
    target = request->stage(bytes);
    request->copy_back_to(buffer, bytes);
  }
  check(MPI_Irecv(target, n, mpi_type(type), peer, kTag, comm_, request->handle()), "MPI_Irecv");
  return request;
}

}  // namespace mlps
