#pragma once
// The Comm seam: collectives and point-to-point transfers on a group of ranks, over MPI or NCCL,
// blocking or asynchronous, on the rank's Device memory; reductions are sums. Each call's bytes
// (nccl-tests' sizes, see CommLog) and time go to the communicator's CommLog.
//
// A 16-bit wire format (mixed precision) sends f32 payloads as bf16 or fp16: reductions add in
// float and round each partial sum back, every rank (a broadcast's root and an all-gather slot's
// owner included) ends with the same rounded values, and the log counts the 2 bytes per element
// actually sent. f64 payloads are never converted. bf16 and fp16 payloads (typed 16-bit storage)
// travel as they are: reductions add in float and round each partial sum back, as on the wire.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/half_types.h"
#include "kernels/kernels.h"
#include "src/comm/comm_log.h"

namespace mlps {

enum class DataType { f32, f64, bf16, fp16 };

template <typename T>
constexpr DataType data_type_of();
template <>
constexpr DataType data_type_of<float>() { return DataType::f32; }
template <>
constexpr DataType data_type_of<double>() { return DataType::f64; }
template <>
constexpr DataType data_type_of<bf16>() { return DataType::bf16; }
template <>
constexpr DataType data_type_of<fp16>() { return DataType::fp16; }
size_t size_of(DataType type);
// The format of a 16-bit payload; full for f32 and f64.
constexpr StorageFormat format_of(DataType type) {
  return type == DataType::bf16   ? StorageFormat::bf16
         : type == DataType::fp16 ? StorageFormat::fp16
                                  : StorageFormat::full;
}

// An operation in flight. wait() blocks until it is complete (on the GPU: until the compute
// stream is ordered after it); the time spent blocked is the exposed communication.
class CommRequest {
 public:
  virtual ~CommRequest() = default;
  virtual void wait() = 0;
  // False while the operation is known to be in flight (a caller may then yield its core);
  // true when wait() should be called (done, or a backend that cannot tell).
  virtual bool ready() { return true; }
};
using PendingComm = std::unique_ptr<CommRequest>;

// Waits for `pending` (if any) and drops it.
inline void complete(PendingComm& pending) {
  if (pending) pending->wait();
  pending.reset();
}

// One operation as a backend receives it (roots and peers already checked). `count` is the
// public call's: each rank's part for all-gather's send and reduce-scatter's recv, else the
// whole buffer.
enum class CommOp { all_reduce, all_gather, reduce_scatter, broadcast, send, recv };
const char* to_string(CommOp op);  // CommKind's names, with "send" and "recv" apart
struct CommOperation {
  CommOp op = CommOp::all_reduce;
  const void* send = nullptr;  // broadcast, recv: null
  void* recv = nullptr;        // broadcast: the buffer; send: null
  int64_t count = 0;
  DataType type = DataType::f32;
  int peer = 0;  // broadcast: the root; send, recv: the other rank
  // send, recv: which stream between the two ranks the message is on; messages of one tag
  // match in the order posted. MPI only: NCCL matches every send and receive in order.
  int tag = 0;
  // All-gather's recv and reduce-scatter's send hold one count-sized part per rank.
  bool per_rank_parts() const {
    return op == CommOp::all_gather || op == CommOp::reduce_scatter;
  }
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  virtual const char* backend() const = 0;  // "mpi" or "nccl"
  // A name for logs and results: the group it spans, e.g. "world", "data", "depth".
  const std::string& name() const { return name_; }

  // recv[count] = Σ_ranks send[count]; send may equal recv (in place).
  PendingComm all_reduce_async(const void* send, void* recv, int64_t count, DataType type) {
    return post({CommOp::all_reduce, send, recv, count, type});
  }
  // recv[size·count] = concatenation of every rank's send[count], in rank order.
  PendingComm all_gather_async(const void* send, void* recv, int64_t count, DataType type) {
    return post({CommOp::all_gather, send, recv, count, type});
  }
  // recv[count] = Σ_ranks send[rank·count .. (rank+1)·count).
  PendingComm reduce_scatter_async(const void* send, void* recv, int64_t count, DataType type) {
    return post({CommOp::reduce_scatter, send, recv, count, type});
  }
  PendingComm broadcast_async(void* buffer, int64_t count, DataType type, int root) {
    return post({CommOp::broadcast, nullptr, buffer, count, type, checked_rank(root, "broadcast root")});
  }
  PendingComm send_async(const void* buffer, int64_t count, DataType type, int peer,
                         int tag = 0) {
    return post({CommOp::send, buffer, nullptr, count, type, checked_rank(peer, "send peer"), tag});
  }
  PendingComm recv_async(void* buffer, int64_t count, DataType type, int peer, int tag = 0) {
    return post({CommOp::recv, nullptr, buffer, count, type, checked_rank(peer, "recv peer"), tag});
  }

  // Blocking forms: the asynchronous call, then wait().
  template <typename T>
  void all_reduce(T* data, int64_t count) {
    all_reduce_async(data, data, count, data_type_of<T>())->wait();
  }
  template <typename T>
  void all_gather(const T* send, T* recv, int64_t count) {
    all_gather_async(send, recv, count, data_type_of<T>())->wait();
  }
  template <typename T>
  void reduce_scatter(const T* send, T* recv, int64_t count) {
    reduce_scatter_async(send, recv, count, data_type_of<T>())->wait();
  }
  template <typename T>
  void broadcast(T* data, int64_t count, int root) {
    broadcast_async(data, count, data_type_of<T>(), root)->wait();
  }

  // Lets operations in flight advance (MPICH progresses non-blocking collectives only inside
  // MPI calls); schemes call it between pieces of computation. No-op where the network or a
  // GPU stream progresses by itself.
  virtual void progress() {}

  CommLog& log() { return *log_; }
  const CommLog& log() const { return *log_; }

  // Applies to operations posted afterwards; those in flight keep the format they began with.
  void set_wire_format(StorageFormat format) { wire_format_ = format; }
  StorageFormat wire_format() const { return wire_format_; }

 protected:
  Communicator(std::string name, std::shared_ptr<CommLog> log)
      : name_(std::move(name)), log_(std::move(log)) {}

  virtual PendingComm post(const CommOperation& call) = 0;
  int rank_ = 0, size_ = 1;  // set by the backend's constructor
  // Requests not yet waited, in posting order (each adds and removes itself). A backend's
  // destructor completes them first: MPI forbids abandoning a collective.
  std::vector<CommRequest*> live_;
  void complete_live();

  // What both backends' requests share: the call's kind and bytes, its entry in the log's recent
  // calls, its timeline event (with a timeline only), and its place in live_ until release().
  template <class Backend>
  class LoggedRequest : public CommRequest {
   public:
    LoggedRequest(const LoggedRequest&) = delete;
    LoggedRequest& operator=(const LoggedRequest&) = delete;
    ~LoggedRequest() override {  // normally released already, by the backend's wait()
      if (owner_) std::erase(owner_->live_, this);
    }

   protected:
    LoggedRequest(Backend& owner, const CommOperation& call)
        : owner_(&owner), kind_(kind_of(call.op)), bytes_(owner.logged_bytes(call)),
          call_(owner.log().posted(kind_, owner.name(), bytes_)) {
      if (owner.log().event_sink()) traced_ = owner.event_of(call);
      owner.live_.push_back(this);
    }
    // The start of the completion: out of live_, and owner_ null so that it happens once.
    Backend& release() {
      Backend& owner = *std::exchange(owner_, nullptr);
      std::erase(owner.live_, this);
      return owner;
    }

    Backend* owner_;
    CommKind kind_;
    double bytes_;
    int64_t call_;  // in the log's recent calls
    std::optional<CommEvent> traced_;
  };

  // Elements of a call's larger buffer: every rank's part for all-gather and reduce-scatter.
  int64_t buffer_count(const CommOperation& call) const {
    return call.count * (call.per_rank_parts() ? size_ : 1);
  }
  // The log's kind and bytes of a call (nccl-tests' sizes, in the bytes actually sent).
  friend const char* to_string(CommOp op);
  static CommKind kind_of(CommOp op);
  double logged_bytes(const CommOperation& call) const {
    return static_cast<double>(buffer_count(call)) * static_cast<double>(wire_size_of(call.type));
  }
  // The timeline's record of a call (for CommLog::event_sink()), its times left to fill.
  CommEvent event_of(const CommOperation& call) const;

  // A call through one staging buffer that holds every rank's parts: this rank's input goes in
  // at element in_at, the result comes back from out_at (in or out null: none). A reduce-scatter's
  // result is at result_at (0 or this rank's slot, by where the backend leaves it); a broadcast's
  // root gets its own values back only on a 16-bit wire, where every rank must end rounded alike.
  struct Staging {
    const void* in = nullptr;
    int64_t in_at = 0, in_count = 0;
    void* out = nullptr;
    int64_t out_at = 0, out_count = 0;
  };
  Staging staging(const CommOperation& call, int64_t result_at) const;

  // True when a payload of this type travels as 16-bit values.
  bool on_16bit_wire(DataType type) const {
    return type == DataType::f32 && wire_format_ != StorageFormat::full;
  }
  // Bytes per element as sent.
  size_t wire_size_of(DataType type) const { return on_16bit_wire(type) ? 2 : size_of(type); }

 private:
  // std::invalid_argument unless rank is one of this communicator's.
  int checked_rank(int rank, const char* what) const;

  std::string name_;
  std::shared_ptr<CommLog> log_;  // shared by the communicators of one rank
  StorageFormat wire_format_ = StorageFormat::full;
};

}  // namespace mlps
