#pragma once
// MPI for the lifetime of main(), and the one place where errors become exit codes: an
// InputError (options, config, data files, grid shapes: found the same way on every rank)
// prints one line on every rank and every rank exits 2 together; any other failure prints its
// line and aborts the whole job, so no rank is left waiting in a collective. SIGINT, SIGTERM and
// SIGHUP print "<program>: stopped by SIGTERM" and exit with the conventional 128 + signal.
// Before MPI starts, the BLAS is given the processor's kernels (kernels/cpu/blas_core.h).
#include <mpi.h>

#include <functional>
#include <string>

namespace mlps {

class MpiSession {
 public:
  MpiSession(int& argc, char**& argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Runs body and returns its exit code, or handles its exception as described above.
  int run(const std::string& program, const std::function<int()>& body) const;

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace mlps
