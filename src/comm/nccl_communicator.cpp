#ifdef MLPSCALE_WITH_NCCL

#include "src/comm/nccl_communicator.h"

#include <algorithm>
#include <mutex>
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

ncclDataType_t nccl_type(StorageFormat wire) {
  return wire == StorageFormat::bf16 ? ncclBfloat16 : ncclFloat16;
}
ncclDataType_t nccl_type(DataType type) {
  if (format_of(type) != StorageFormat::full) return nccl_type(format_of(type));
  return type == DataType::f64 ? ncclDouble : ncclFloat;
}

// Events between uses: every operation records five, and creating and destroying them each
// time costs host time in every step. Kept for the process, as the CUDA context is (destroying
// CUDA objects from static destructors races the driver's own shutdown).
struct SpareEvents {
  std::mutex mutex;
  std::vector<cudaEvent_t> events;
};
SpareEvents& spare_events() {
  static SpareEvents* const spare = new SpareEvents();
  return *spare;
}

// One CUDA event, taken from the spare ones (or created) and given back with its owner (never
// throwing: that runs from destructors). A reused event's new record replaces the old one;
// whoever waited on the old one waited for it when it called.
class GpuEvent {
 public:
  GpuEvent() {
    {
      SpareEvents& spare = spare_events();
      const std::lock_guard<std::mutex> lock(spare.mutex);
      if (!spare.events.empty()) {
        event_ = spare.events.back();
        spare.events.pop_back();
        return;
      }
    }
    MLPS_CUDA_CHECK(cudaEventCreate(&event_));
  }
  ~GpuEvent() {
    if (!event_) return;
    try {
      SpareEvents& spare = spare_events();
      const std::lock_guard<std::mutex> lock(spare.mutex);
      spare.events.push_back(event_);
    } catch (...) {  // no memory for the list: destroy it instead
      if (cudaEventDestroy(event_) != cudaSuccess) (void)cudaGetLastError();
    }
  }
  GpuEvent(const GpuEvent&) = delete;
  GpuEvent& operator=(const GpuEvent&) = delete;
  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) const { MLPS_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void wait_on_host() const { MLPS_CUDA_CHECK(cudaEventSynchronize(event_)); }

 private:
  cudaEvent_t event_ = nullptr;
};

double elapsed_seconds(const GpuEvent& from, const GpuEvent& to) {
  float ms = 0.0f;
  MLPS_CUDA_CHECK(cudaEventElapsedTime(&ms, from.get(), to.get()));
  return static_cast<double>(ms) * 1e-3;
}

// The NCCL call of `c` on these buffers and element type (a 16-bit wire's, on one).
std::function<ncclResult_t()> nccl_call(const CommOperation& c, const void* send, void* recv,
                                        ncclDataType_t type, ncclComm_t comm, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(c.count);
  const int peer = c.peer;
  switch (c.op) {
    case CommOp::all_reduce:
      return [=] { return ncclAllReduce(send, recv, n, type, ncclSum, comm, stream); };
    case CommOp::all_gather:
      return [=] { return ncclAllGather(send, recv, n, type, comm, stream); };
    case CommOp::reduce_scatter:
      return [=] { return ncclReduceScatter(send, recv, n, type, ncclSum, comm, stream); };
    case CommOp::broadcast:
      return [=] { return ncclBroadcast(recv, recv, n, type, peer, comm, stream); };
    case CommOp::send:
      return [=] { return ncclSend(send, n, type, peer, comm, stream); };
    case CommOp::recv:
      return [=] { return ncclRecv(recv, n, type, peer, comm, stream); };
  }
  return {};
}

}  // namespace

// The events of one launch: `ready` on the kernel stream (the data exists), `start` and `done`
// on the communicator's stream around the NCCL calls, so start → done is the operation's own
// time, not the time it queued behind earlier operations. `bytes` is the launch's total (a
// group of sends and receives together).
struct NcclCommunicator::Launch {
  GpuEvent ready;
  GpuEvent start;
  GpuEvent done;
  double bytes = 0;
};

NcclCommunicator::Wire::~Wire() {
  if (!data) return;
  try {
    owner.spare_wires_[count].push_back(data);
  } catch (...) {  // no memory for the list: free it in stream order instead
    if (cudaFreeAsync(data, cuda::detail::stream()) != cudaSuccess) (void)cudaGetLastError();
  }
}

NcclCommunicator::Wire::Wire(NcclCommunicator& owner, int64_t count, StorageFormat format,
                             const Staging& staging)
    : owner(owner), count(count), format(format), staging(staging) {
  std::vector<uint16_t*>& spare = owner.spare_wires_[count];
  if (!spare.empty()) {
    data = spare.back();
    spare.pop_back();
    return;
  }
  // The first operation of this size: allocated in stream order on the kernel stream, so the
  // pack kernels that follow and the NCCL call (after the kernel stream's event) see it.
  MLPS_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&data),
                                  static_cast<size_t>(count) * sizeof(uint16_t),
                                  cuda::detail::stream()));
}

class NcclCommunicator::Request : public LoggedRequest<NcclCommunicator> {
 public:
  Request(NcclCommunicator& owner, const CommOperation& call, std::unique_ptr<Wire> wire)
      : LoggedRequest(owner, call), wire_(std::move(wire)) {}
  ~Request() override {
    try {
      wait();
    } catch (...) {
      // Destructors must not throw; a failed launch has already been reported.
    }
  }

  void set_launch(std::shared_ptr<Launch> launch) { launch_ = std::move(launch); }

  // Orders the kernel stream after the operation, without blocking the host: the operation's
  // time and the stall it causes are read from GPU events when the log's totals are next taken
  // (the end of the step). Exposed time is the GPU's: from the kernel stream reaching this wait
  // to the operation's end. A group's time is shared by its sends and receives in proportion
  // to their bytes, so the group is counted once. `resumed` marks the kernel stream past the
  // wait, so the launch's events outlive every use of them.
  void wait() override {
    if (!owner_) return;
    // Released first: a wait that fails leaves no request pointing at its communicator.
    NcclCommunicator& owner = release();
    if (!launch_) owner.flush_point_to_point();
    if (!launch_) throw std::logic_error("NCCL send/recv waited after its launch failed");
    const cudaStream_t kernels = cuda::detail::stream();
    auto reached = std::make_shared<GpuEvent>();
    auto resumed = std::make_shared<GpuEvent>();
    reached->record(kernels);
    MLPS_CUDA_CHECK(cudaStreamWaitEvent(kernels, launch_->done.get(), 0));
    resumed->record(kernels);
    owner.log().finished(call_);  // as far as the host knows: the GPU may still run it
    if (wire_) {  // back to float on the kernel stream, after the operation
      const Staging& s = wire_->staging;
      if (s.out)
        cuda::unpack_16bit(static_cast<float*>(s.out), wire_->data + s.out_at, s.out_count,
                           wire_->format);
      wire_.reset();  // given back to the communicator: reused after the unpack, in stream order
    }
    owner.log().defer([launch = launch_, reached, resumed, kind = kind_, bytes = bytes_,
                       group = owner.name(), size = owner.size(),
                       idle = owner.log().idle_waits(),
                       traced = std::move(traced_)](CommLog& log) mutable {
      launch->done.wait_on_host();
      resumed->wait_on_host();
      const double share = launch->bytes > 0 ? bytes / launch->bytes : 1.0;
      const double blocked = std::max(0.0, elapsed_seconds(*reached, launch->done));
      log.record(kind, group, size, bytes, elapsed_seconds(launch->start, launch->done) * share);
      if (!idle) log.add_blocked(blocked);
      if (CommEventSink* sink = log.event_sink(); sink && traced) {
        // GPU times onto the host clock: settled after the step's synchronisation, the GPU
        // passes an event recorded now at once.
        const GpuEvent now;
        now.record(cuda::detail::stream());
        now.wait_on_host();
        const double host_now = CommLog::steady_seconds();
        traced->start = host_now - elapsed_seconds(launch->start, now);
        traced->end = host_now - elapsed_seconds(launch->done, now);
        traced->blocked = blocked;
        sink->comm_event(*traced);
      }
    });
  }

 private:
  std::unique_ptr<Wire> wire_;      // the 16-bit staging of a 16-bit wire, else null
  std::shared_ptr<Launch> launch_;  // null while a send/receive is held back
};

NcclCommunicator::NcclCommunicator(MPI_Comm comm, std::string name,
                                   std::shared_ptr<CommLog> log)
    : Communicator(std::move(name), std::move(log)) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
  // Rank 0's id travels with its status, so that a failed ncclGetUniqueId stops every rank
  // instead of leaving the others waiting in the broadcast.
  struct {
    ncclUniqueId id;
    int status;
  } bootstrap{};
  if (rank_ == 0) bootstrap.status = ncclGetUniqueId(&bootstrap.id);
  MPI_Bcast(&bootstrap, sizeof(bootstrap), MPI_BYTE, 0, comm);
  if (bootstrap.status != ncclSuccess)
    throw_nccl_error(static_cast<ncclResult_t>(bootstrap.status), nullptr,
                     "ncclGetUniqueId (on rank 0 of this communicator)", __FILE__, __LINE__);
  MLPS_NCCL_CHECK(ncclCommInitRank(&comm_, size_, bootstrap.id, rank_));
  try {
    MLPS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  } catch (...) {
    (void)ncclCommDestroy(comm_);
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() {
  complete_live();
  // Every event recorded on the stream has happened before it goes: the log may still read
  // them. A destructor has nowhere to report a failure.
  if (stream_ && cudaStreamSynchronize(stream_) != cudaSuccess) (void)cudaGetLastError();
  for (auto& [count, spare] : spare_wires_)
    for (uint16_t* data : spare)
      if (cudaFreeAsync(data, cuda::detail::stream()) != cudaSuccess) (void)cudaGetLastError();
  (void)ncclCommDestroy(comm_);
  if (stream_ && cudaStreamDestroy(stream_) != cudaSuccess) (void)cudaGetLastError();
}

std::shared_ptr<NcclCommunicator::Launch> NcclCommunicator::launch(
    const std::vector<std::function<ncclResult_t()>>& calls, double bytes) {
  auto events = std::make_shared<Launch>();
  events->bytes = bytes;
  events->ready.record(cuda::detail::stream());
  MLPS_CUDA_CHECK(cudaStreamWaitEvent(stream_, events->ready.get(), 0));
  events->start.record(stream_);
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
  events->done.record(stream_);
  return events;
}

void NcclCommunicator::flush_point_to_point() {
  if (held_calls_.empty()) return;
  const auto calls = std::exchange(held_calls_, {});
  const auto requests = std::exchange(held_requests_, {});
  const auto events = launch(calls, std::exchange(held_bytes_, 0.0));
  for (Request* request : requests) request->set_launch(events);
}

PendingComm NcclCommunicator::post(const CommOperation& c) {
  const void* send = c.send;
  void* recv = c.recv;
  ncclDataType_t type = nccl_type(c.type);
  std::unique_ptr<Wire> wire;
  if (on_16bit_wire(c.type)) {
    // Through a 16-bit device buffer (staging()); NCCL's reduce-scatter puts its part at the slot.
    const int64_t slot = c.count * rank_;
    wire = std::make_unique<Wire>(*this, buffer_count(c), wire_format(), staging(c, slot));
    uint16_t* w = wire->data;
    const Staging& s = wire->staging;
    if (s.in)
      cuda::pack_16bit(w + s.in_at, static_cast<const float*>(s.in), s.in_count, wire->format);
    type = nccl_type(wire->format);
    send = c.op == CommOp::all_gather ? w + slot : w;
    recv = c.op == CommOp::reduce_scatter ? w + slot : w;
  }
  auto call = nccl_call(c, send, recv, type, comm_, stream_);
  const double bytes = logged_bytes(c);
  const bool point_to_point = c.op == CommOp::send || c.op == CommOp::recv;
  if (!point_to_point) flush_point_to_point();  // issue order is the posting order
  auto request = std::make_unique<Request>(*this, c, std::move(wire));
  if (!point_to_point) {
    request->set_launch(launch({std::move(call)}, bytes));
    return request;
  }
  held_calls_.push_back(std::move(call));  // launched by flush_point_to_point
  held_requests_.push_back(request.get());
  held_bytes_ += bytes;
  return request;
}

}  // namespace mlps

#endif  // MLPSCALE_WITH_NCCL
