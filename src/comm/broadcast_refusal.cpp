#include "src/comm/broadcast_refusal.h"

#include <utility>

#include "src/base/errors.h"

namespace mlps {

std::string broadcast_string(MPI_Comm comm, std::string text, int root) {
  long long length = static_cast<long long>(text.size());
  MPI_Bcast(&length, 1, MPI_LONG_LONG, root, comm);
  text.resize(static_cast<size_t>(length));
  MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, root, comm);
  return text;
}

void refuse_together(MPI_Comm comm, std::string refusal, int root) {
  refusal = broadcast_string(comm, std::move(refusal), root);
  if (!refusal.empty()) throw AgreedError(refusal);
}

}  // namespace mlps
