#pragma once
// Who is running: the executable, its command line and the ranks taking part.
#include <mpi.h>

#include <string>

namespace mlps {

struct RunContext {
  std::string program;       // e.g. "serial"
  std::string command_line;  // as typed, for the result file
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0;
  int size = 1;
  bool is_root() const { return rank == 0; }
};

}  // namespace mlps
