#include "src/mpi_session.h"

#include <cstdio>
#include <exception>

#include "src/errors.h"

namespace mlps {

MpiSession::MpiSession(int& argc, char**& argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

int MpiSession::run(const std::string& program, const std::function<int()>& body) const {
  const std::string who = size_ > 1 ? program + " (rank " + std::to_string(rank_) + ")" : program;
  try {
    return body();
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s: error: %s\n", who.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: fatal: %s\n", who.c_str(), e.what());
    std::fflush(stderr);
    if (size_ > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}

}  // namespace mlps
