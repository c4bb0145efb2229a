#ifdef MLPSCALE_WITH_NCCL

#include "src/comm/nccl_communicator.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_context.h"

#define MLPS_NCCL_CHECK(expr)                                                          \
  do {                                                                                 \
    const ncclResult_t mlps_nccl_status_ = (expr);                                     \
    if (mlps_nccl_status_ != ncclSuccess)                                              \
      ::mlps::throw_nccl_error(mlps_nccl_status_, comm_, #expr, __FILE__, __LINE__); \
  } while (0)

namespace mlps {
namespace {

[[noreturn]] void throw_nccl_error(ncclResult_t status, ncclComm_t comm, const char* expr,
                                   const char* file, int line) {
  std::string text = std::string("NCCL error at ") + file + ":" + std::to_string(line) + ": " +
                     expr + ": " + ncclGetErrorString(status);
  const char* detail = comm ? ncclGetLastError(comm) : nullptr;
  if (detail && *detail) text += std::string(" (") + detail + ")";
  throw std::runtime_error(text);
}

ncclDataType_t nccl_type(DataType type) { return type == DataType::f64 ? ncclDouble : ncclFloat; }
ncclDataType_t nccl_type(StorageFormat wire) {
  return wire == StorageFormat::bf16 ? ncclBfloat16 : ncclFloat16;
}

void check_rank(int rank, int size, const char* what) {
  if (rank < 0 || rank >= size)
    throw std::invalid_argument(std::string("NCCL ") + what + " " + std::to_string(rank) +
                                " is not a rank of a communicator of " + std::to_string(size));
}

cudaEvent_t new_event() {
  cudaEvent_t event = nullptr;
  MLPS_CUDA_CHECK(cudaEventCreate(&event));
  return event;
}

// Never throws: it runs from destructors.
void destroy_event(cudaEvent_t event) {
  if (event && cudaEventDestroy(event) != cudaSuccess) (void)cudaGetLastError();
}

double elapsed_seconds(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0.0f;
  MLPS_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace

struct NcclCommunicator::Launch {
  cudaEvent_t start = nullptr;  // on the kernel stream: the data is ready
  cudaEvent_t done = nullptr;   // on the communicator's stream
  Launch() : start(new_event()), done(new_event()) {}
  ~Launch() {
    destroy_event(start);
    destroy_event(done);
  }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;
};

NcclCommunicator::Wire::~Wire() {
  if (data && cudaFreeAsync(data, cuda::detail::stream()) != cudaSuccess) (void)cudaGetLastError();
}

std::unique_ptr<NcclCommunicator::Wire> NcclCommunicator::stage_wire(int64_t count) const {
  auto wire = std::make_unique<Wire>();
  wire->format = wire_format();
  // Stream-ordered on the kernel stream: the pack kernels that follow, the NCCL call (ordered
  // after the kernel stream by its start event) and the free after the unpack all see it.
  MLPS_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&wire->data),
                                  static_cast<size_t>(count) * sizeof(uint16_t),
                                  cuda::detail::stream()));
  return wire;
}

class NcclCommunicator::Request : public CommRequest {
 public:
  Request(NcclCommunicator& owner, CommKind kind, double bytes, std::unique_ptr<Wire> wire)
      : owner_(&owner), kind_(kind), bytes_(bytes), wire_(std::move(wire)) {
    owner.live_.push_back(this);
  }
  ~Request() override {
    if (!owner_) return;
    try {
      wait();
    } catch (...) {
      // Destructors must not throw; a wait that failed before it began leaves us registered.
      if (owner_) std::erase(owner_->live_, this);
    }
  }
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  void set_launch(std::shared_ptr<Launch> launch) { launch_ = std::move(launch); }

  // Orders the kernel stream after the operation. The host waits for the operation too, only
  // to read its time: the interface has no later point at which to collect it. The exposed time
  // is the GPU's: how long the kernel stream, having reached this wait, stalls for the
  // communication.
  void wait() override {
    if (!owner_) return;
    if (!launch_) owner_->flush_point_to_point();
    if (!launch_) throw std::logic_error("NCCL send/recv waited after its launch failed");
    NcclCommunicator& owner = *owner_;
    owner_ = nullptr;
    std::erase(owner.live_, this);
    const cudaStream_t kernels = cuda::detail::stream();
    cudaEvent_t reached = new_event();
    try {
      MLPS_CUDA_CHECK(cudaEventRecord(reached, kernels));
      MLPS_CUDA_CHECK(cudaStreamWaitEvent(kernels, launch_->done, 0));
      if (wire_) {  // back to float on the kernel stream, after the operation
        if (wire_->unpack_dst)
          cuda::unpack_16bit(wire_->unpack_dst, wire_->data + wire_->unpack_offset,
                             wire_->unpack_count, wire_->format);
        wire_.reset();  // freed in stream order, after the unpack
      }
      MLPS_CUDA_CHECK(cudaEventSynchronize(launch_->done));
      MLPS_CUDA_CHECK(cudaEventSynchronize(reached));
      const double seconds = elapsed_seconds(launch_->start, launch_->done);
      const double exposed = std::max(0.0, elapsed_seconds(reached, launch_->done));
      owner.log().record(kind_, owner.name(), owner.size(), bytes_, seconds);
      owner.log().add_blocked(exposed);
    } catch (...) {
      destroy_event(reached);
      throw;
    }
    destroy_event(reached);
  }

 private:
  NcclCommunicator* owner_;  // null once waited
  CommKind kind_;
  double bytes_;
  std::unique_ptr<Wire> wire_;  // the 16-bit staging of a 16-bit wire, else null
  std::shared_ptr<Launch> launch_;  // null while a send/receive is held back
};

NcclCommunicator::NcclCommunicator(MPI_Comm comm, std::string name,
                                   std::shared_ptr<CommLog> log)
    : Communicator(std::move(name), std::move(log)) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
  ncclUniqueId id{};
  if (rank_ == 0) MLPS_NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm);
  MLPS_NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
  try {
    MLPS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  } catch (...) {
    (void)ncclCommDestroy(comm_);
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() {
  while (!live_.empty()) {
    Request* request = live_.front();
    try {
      request->wait();
    } catch (...) {
      std::erase(live_, request);
    }
  }
  (void)ncclCommDestroy(comm_);  // a destructor has nowhere to report a failure
  if (stream_ && cudaStreamDestroy(stream_) != cudaSuccess) (void)cudaGetLastError();
}

std::shared_ptr<NcclCommunicator::Launch> NcclCommunicator::launch(
    const std::vector<std::function<ncclResult_t()>>& calls) {
  auto events = std::make_shared<Launch>();
  MLPS_CUDA_CHECK(cudaEventRecord(events->start, cuda::detail::stream()));
  MLPS_CUDA_CHECK(cudaStreamWaitEvent(stream_, events->start, 0));
  if (calls.size() == 1) {
    MLPS_NCCL_CHECK(calls.front()());
  } else {
    MLPS_NCCL_CHECK(ncclGroupStart());
    for (const auto& call : calls) {
      const ncclResult_t status = call();
      if (status != ncclSuccess) {
        (void)ncclGroupEnd();
        MLPS_NCCL_CHECK(status);
      }
    }
    MLPS_NCCL_CHECK(ncclGroupEnd());
  }
  MLPS_CUDA_CHECK(cudaEventRecord(events->done, stream_));
  return events;
}

void NcclCommunicator::flush_point_to_point() {
  if (held_calls_.empty()) return;
  const auto calls = std::exchange(held_calls_, {});
  const auto requests = std::exchange(held_requests_, {});
  const auto events = launch(calls);
  for (Request* request : requests) request->set_launch(events);
}

PendingComm NcclCommunicator::collective(CommKind kind, double bytes,
                                         std::function<ncclResult_t()> call,
                                         std::unique_ptr<Wire> wire) {
  flush_point_to_point();  // issue order is the posting order
  auto request = std::make_unique<Request>(*this, kind, bytes, std::move(wire));
  request->set_launch(launch({std::move(call)}));
  return request;
}

PendingComm NcclCommunicator::point_to_point(double bytes, std::function<ncclResult_t()> call,
                                             std::unique_ptr<Wire> wire) {
  auto request = std::make_unique<Request>(*this, CommKind::send_recv, bytes, std::move(wire));
  held_calls_.push_back(std::move(call));
  held_requests_.push_back(request.get());
  return request;
}

PendingComm NcclCommunicator::all_reduce_async(const void* send, void* recv, int64_t count,
                                               DataType type) {
  const size_t n = static_cast<size_t>(count);
  const double bytes = static_cast<double>(n * wire_size_of(type));
  if (on_16bit_wire(type)) {
    auto wire = stage_wire(count);
    uint16_t* w = wire->data;
    cuda::pack_16bit(w, static_cast<const float*>(send), count, wire->format);
    wire->unpack_to(static_cast<float*>(recv), 0, count);
    const ncclDataType_t t = nccl_type(wire->format);
    return collective(CommKind::all_reduce, bytes, [=, this] {
      return ncclAllReduce(w, w, n, t, ncclSum, comm_, stream_);
    }, std::move(wire));
  }
  return collective(CommKind::all_reduce, bytes, [=, this] {
    return ncclAllReduce(send, recv, n, nccl_type(type), ncclSum, comm_, stream_);
  });
}

PendingComm NcclCommunicator::all_gather_async(const void* send, void* recv, int64_t count,
                                               DataType type) {
  const size_t n = static_cast<size_t>(count);
  const double bytes = static_cast<double>(n * wire_size_of(type)) * size_;
  if (on_16bit_wire(type)) {
    // This rank's own part comes back rounded too, so every rank holds the same values.
    auto wire = stage_wire(count * size_);
    uint16_t* w = wire->data;
    uint16_t* slot = w + count * rank_;
    cuda::pack_16bit(slot, static_cast<const float*>(send), count, wire->format);
    wire->unpack_to(static_cast<float*>(recv), 0, count * size_);
    const ncclDataType_t t = nccl_type(wire->format);
    return collective(CommKind::all_gather, bytes, [=, this] {
      return ncclAllGather(slot, w, n, t, comm_, stream_);
    }, std::move(wire));
  }
  return collective(CommKind::all_gather, bytes, [=, this] {
    return ncclAllGather(send, recv, n, nccl_type(type), comm_, stream_);
  });
}

PendingComm NcclCommunicator::reduce_scatter_async(const void* send, void* recv, int64_t count,
                                                   DataType type) {
  const size_t n = static_cast<size_t>(count);
  const double bytes = static_cast<double>(n * wire_size_of(type)) * size_;
  if (on_16bit_wire(type)) {
    auto wire = stage_wire(count * size_);
    uint16_t* w = wire->data;
    uint16_t* slot = w + count * rank_;
    cuda::pack_16bit(w, static_cast<const float*>(send), count * size_, wire->format);
    wire->unpack_to(static_cast<float*>(recv), count * rank_, count);
    const ncclDataType_t t = nccl_type(wire->format);
    return collective(CommKind::reduce_scatter, bytes, [=, this] {
      return ncclReduceScatter(w, slot, n, t, ncclSum, comm_, stream_);
    }, std::move(wire));
  }
  return collective(CommKind::reduce_scatter, bytes, [=, this] {
    return ncclReduceScatter(send, recv, n, nccl_type(type), ncclSum, comm_, stream_);
  });
}

PendingComm NcclCommunicator::broadcast_async(void* buffer, int64_t count, DataType type,
                                              int root) {
  check_rank(root, size_, "broadcast root");
  const size_t n = static_cast<size_t>(count);
  const double bytes = static_cast<double>(n * wire_size_of(type));
  if (on_16bit_wire(type)) {
    // The root's buffer is rounded too, so every rank holds the same values.
    auto wire = stage_wire(count);
    uint16_t* w = wire->data;
    if (rank_ == root) cuda::pack_16bit(w, static_cast<const float*>(buffer), count, wire->format);
    wire->unpack_to(static_cast<float*>(buffer), 0, count);
    const ncclDataType_t t = nccl_type(wire->format);
    return collective(CommKind::broadcast, bytes, [=, this] {
      return ncclBroadcast(w, w, n, t, root, comm_, stream_);
    }, std::move(wire));
  }
  return collective(CommKind::broadcast, bytes, [=, this] {
    return ncclBroadcast(buffer, buffer, n, nccl_type(type), root, comm_, stream_);
  });
}

PendingComm NcclCommunicator::send_async(const void* buffer, int64_t count, DataType type,
                                         int peer) {
  check_rank(peer, size_, "send peer");
  const size_t n = static_cast<size_t>(count);
  const double bytes = static_cast<double>(n * wire_size_of(type));
  if (on_16bit_wire(type)) {
    auto wire = stage_wire(count);
    const uint16_t* w = wire->data;
    cuda::pack_16bit(wire->data, static_cast<const float*>(buffer), count, wire->format);
    const ncclDataType_t t = nccl_type(wire->format);
    return point_to_point(bytes, [=, this] { return ncclSend(w, n, t, peer, comm_, stream_); },
                          std::move(wire));
  }
  return point_to_point(bytes, [=, this] {
    return ncclSend(buffer, n, nccl_type(type), peer, comm_, stream_);
  });
}

PendingComm NcclCommunicator::recv_async(void* buffer, int64_t count, DataType type, int peer) {
  check_rank(peer, size_, "recv peer");
  const size_t n = static_cast<size_t>(count);
  const double bytes = static_cast<double>(n * wire_size_of(type));
  if (on_16bit_wire(type)) {
    auto wire = stage_wire(count);
    uint16_t* w = wire->data;
    wire->unpack_to(static_cast<float*>(buffer), 0, count);
    const ncclDataType_t t = nccl_type(wire->format);
    return point_to_point(bytes, [=, this] { return ncclRecv(w, n, t, peer, comm_, stream_); },
                          std::move(wire));
  }
  return point_to_point(bytes, [=, this] {
    return ncclRecv(buffer, n, nccl_type(type), peer, comm_, stream_);
  });
}

}  // namespace mlps

#endif  // MLPSCALE_WITH_NCCL
