#include "src/comm/communicator.h"

#include <stdexcept>
#include <string>

namespace mlps {

size_t size_of(DataType type) { return type == DataType::f64 ? sizeof(double) : sizeof(float); }

CommKind Communicator::kind_of(CommOp op) {
  switch (op) {
    case CommOp::all_reduce: return CommKind::all_reduce;
    case CommOp::all_gather: return CommKind::all_gather;
    case CommOp::reduce_scatter: return CommKind::reduce_scatter;
    case CommOp::broadcast: return CommKind::broadcast;
    default: return CommKind::send_recv;
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
