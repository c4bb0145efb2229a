#include "src/comm/communicator.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace mlps {

size_t size_of(DataType type) {
  if (format_of(type) != StorageFormat::full) return sizeof(uint16_t);
  return type == DataType::f64 ? sizeof(double) : sizeof(float);
}

// CommOp is CommKind's order with send_recv split into send and recv: kind_of and to_string
// rely on it.
static_assert(int(CommOp::all_reduce) == int(CommKind::all_reduce) &&
              int(CommOp::all_gather) == int(CommKind::all_gather) &&
              int(CommOp::reduce_scatter) == int(CommKind::reduce_scatter) &&
              int(CommOp::broadcast) == int(CommKind::broadcast) &&
              int(CommOp::send) == int(CommKind::send_recv));

CommKind Communicator::kind_of(CommOp op) {
  return static_cast<CommKind>(std::min(op, CommOp::send));  // recv too is send_recv
}

const char* to_string(CommOp op) {
  if (op < CommOp::send) return to_string(Communicator::kind_of(op));
  return op == CommOp::send ? "send" : "recv";
}

CommEvent Communicator::event_of(const CommOperation& c) const {
  const bool has_peer = c.op == CommOp::send || c.op == CommOp::recv || c.op == CommOp::broadcast;
  return {to_string(c.op), name_, logged_bytes(c), has_peer ? c.peer : -1};
}

Communicator::Staging Communicator::staging(const CommOperation& c, int64_t result_at) const {
  const int64_t whole = buffer_count(c), slot = c.count * rank_;
  switch (c.op) {
    case CommOp::all_reduce: return {c.send, 0, c.count, c.recv, 0, c.count};
    case CommOp::all_gather: return {c.send, slot, c.count, c.recv, 0, whole};
    case CommOp::reduce_scatter: return {c.send, 0, whole, c.recv, result_at, c.count};
    case CommOp::broadcast: {
      const bool root = rank_ == c.peer;
      return {root ? c.recv : nullptr, 0, c.count,
              root && !on_16bit_wire(c.type) ? nullptr : c.recv, 0, c.count};
    }
    case CommOp::send: return {c.send, 0, c.count};
    case CommOp::recv: return {nullptr, 0, 0, c.recv, 0, c.count};
  }
  return {};
}

void Communicator::complete_live() {
  while (!live_.empty()) {
    CommRequest* request = live_.front();
    try {
      request->wait();  // removes it from live_
    } catch (...) {
      std::erase(live_, request);
    }
  }
}

int Communicator::checked_rank(int rank, const char* what) const {
  if (rank < 0 || rank >= size())
    throw std::invalid_argument(std::string(backend()) + " " + what + " " + std::to_string(rank) +
                                " is not a rank of a communicator of " +
                                std::to_string(size()));
  return rank;
}

}  // namespace mlps
