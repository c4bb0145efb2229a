#include "src/memory/memory_check.h"

#include <string>

#include "src/errors.h"
#include "src/human_bytes.h"

namespace mlps {

void check_memory_fits(MPI_Comm comm, double need, const std::string& what,
                       const AvailableMemory& available) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // An unknown amount of memory (0: nothing could be read) is no reason to refuse.
  struct {
    double ratio;
    int rank;
  } local{available.bytes > 0 ? need / available.bytes : 0.0, rank}, worst{};
  MPI_Allreduce(&local, &worst, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
  if (worst.ratio <= 1) return;
  std::string message;
  if (rank == worst.rank)
    message = "rank " + std::to_string(rank) + " needs about " + human_bytes(need) + " (" + what +
              ") but has " + human_bytes(available.bytes) + " " + available.where;
  int length = static_cast<int>(message.size());
  MPI_Bcast(&length, 1, MPI_INT, worst.rank, comm);
  message.resize(static_cast<size_t>(length));
  MPI_Bcast(message.data(), length, MPI_CHAR, worst.rank, comm);
  throw InputError(message);
}

}  // namespace mlps
