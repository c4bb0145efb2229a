#include "src/mpi_session.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>

#include "kernels/cpu/blas_core.h"
#include "src/errors.h"

namespace mlps {
namespace {

// What a stop signal prints: "<program>: stopped by SIGTERM". A signal handler can only reach
// process-wide state, so the line's prefix is kept here, filled in once by run().
char stop_prefix[256] = "mlpscale";

const char* signal_name(int signal) {
  return signal == SIGINT    ? "SIGINT"
         : signal == SIGTERM ? "SIGTERM"
         : signal == SIGHUP  ? "SIGHUP"
                             : "a signal";
}

// Async-signal-safe: one line, then the conventional status 128 + signal. Results are
// published only when complete (publish_file), so there is nothing to clean up.
void on_stop_signal(int signal) {
  const char* parts[] = {stop_prefix, ": stopped by ", signal_name(signal), "\n"};
  for (const char* part : parts)
    if (::write(STDERR_FILENO, part, std::strlen(part)) < 0) break;  // strlen is signal-safe
  _exit(128 + signal);
}

}  // namespace

MpiSession::MpiSession(int& argc, char**& argv) {
  // Before MPI_Init: it may run the program again with the processor's BLAS kernels.
  cpu::choose_blas_core(argv);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // After MPI_Init, which may install handlers of its own (UCX prints a backtrace).
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal, &action, nullptr);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

int MpiSession::run(const std::string& program, const std::function<int()>& body) const {
  const std::string who = size_ > 1 ? program + " (rank " + std::to_string(rank_) + ")" : program;
  std::snprintf(stop_prefix, sizeof(stop_prefix), "%s", who.c_str());
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
