#pragma once
// MPI for the lifetime of main(), and the one place where errors become exit codes. Every error
// is one line, `<program> (rank r): error: ...` (`fatal:` for what is not the user's input or
// an output's I/O). An AgreedError, thrown by every rank together after a collective, exits 2
// normally on every rank; any other error may be this rank's alone, so after a second's grace
// it ends the whole job (MPI_Abort, its own banner silenced) and no rank is left waiting in a
// collective: 2 for an InputError, 1 otherwise. SIGINT, SIGTERM and SIGHUP print
// "<program>: stopped by SIGTERM" and exit with the conventional 128 + signal. MPI_Finalize
// has a bounded wait (bounded_finalize.h).
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
  // What run() said, for a finalize that does not return.
  mutable std::string who_ = "mlpscale";
  mutable int exit_code_ = 0;
};

}  // namespace mlps
