#include "src/comm/mpi_session.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <thread>

#include "kernels/cpu/blas_core.h"
#include "src/base/scratch_file.h"
#include "src/comm/bounded_finalize.h"
#include "src/base/errors.h"

namespace mlps {
namespace {

// What a stop signal prints, one whole line per signal ("<program>: stopped by SIGTERM"),
// written with one write() so that ranks sharing a terminal do not interleave. A signal handler
// can only reach process-wide state, so the lines are built here once by run().
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr const char* kStopSignalNames[] = {"SIGINT", "SIGTERM", "SIGHUP"};
char stop_lines[3][320] = {"mlpscale: stopped by SIGINT\n", "mlpscale: stopped by SIGTERM\n",
                           "mlpscale: stopped by SIGHUP\n"};
// Launched through a PMI process manager (MPICH's Hydra sets PMI_FD), which may report the
// status of a rank it reaps late after a forwarded signal as 0 (hold_output_while_reaped).
bool under_pmi = false;

// Hydra 4.0's proxy, once it has passed a signal on, takes a rank's real exit status only if it
// reaps the rank while one of the rank's output pipes is still open; otherwise it reports 0, and
// mpiexec then returned 0 after SIGTERM in most single-rank tries. A helper process in its own
// process group (out of reach of the proxy's kill) holds the pipes a moment after this rank has
// exited: it closes everything but stderr once the rank is gone, the proxy wakes and reaps the
// rank's 128 + signal, then the helper ends. fork, setpgid, nanosleep and close_range are
// async-signal-safe system calls.
void hold_output_while_reaped() {
  const pid_t helper = static_cast<pid_t>(syscall(SYS_fork));
  if (helper == 0) {
    setpgid(0, 0);
    const timespec moment{0, 100'000'000};
    nanosleep(&moment, nullptr);
    close(STDIN_FILENO);
    close(STDOUT_FILENO);
    syscall(SYS_close_range, 3U, ~0U, 0U);
    nanosleep(&moment, nullptr);
    _exit(0);
  }
  if (helper > 0) setpgid(helper, helper);  // both sides, so the proxy's kill cannot race it
}

// Async-signal-safe: one line, then the conventional status 128 + signal. Results are
// published only when complete (publish_file); scratch files are removed.
void on_stop_signal(int signal) {
  remove_scratch_files();
  for (size_t i = 0; i < std::size(kStopSignals); ++i)
    if (kStopSignals[i] == signal && ::write(STDERR_FILENO, stop_lines[i],
                                             std::strlen(stop_lines[i])) < 0)
      break;
  if (under_pmi) hold_output_while_reaped();
  _exit(128 + signal);
}

// A failure this rank may have alone (the others may be inside a collective, waiting for it):
// after a moment's grace, so that ranks failing at the same point print their own lines too,
// the whole job ends with `code`. MPICH's MPI_Abort prints a line of its own; this rank's line
// has said everything, so stderr goes to /dev/null first.
[[noreturn]] void end_job(int code) {
  remove_scratch_files();  // MPI_Abort runs no destructor
  std::fflush(stdout);
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  if (const int null = ::open("/dev/null", O_WRONLY); null >= 0) ::dup2(null, STDERR_FILENO);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
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
  for (const int signal : kStopSignals) sigaction(signal, &action, nullptr);
  under_pmi = std::getenv("PMI_FD") != nullptr;
}

MpiSession::~MpiSession() { finalize_within(who_, exit_code_); }

int MpiSession::run(const std::string& program, const std::function<int()>& body) const {
  who_ = size_ > 1 ? program + " (rank " + std::to_string(rank_) + ")" : program;
  const std::string& who = who_;
  for (size_t i = 0; i < std::size(kStopSignals); ++i)
    std::snprintf(stop_lines[i], sizeof(stop_lines[i]), "%s: stopped by %s\n", who.c_str(),
                  kStopSignalNames[i]);
  // The line, then the exit: normal when this process is the whole job or every rank failed
  // together; otherwise the job ends here, since the others may be waiting for this rank.
  const auto fail = [&](const char* kind, const char* what, int code, bool agreed) {
    std::fprintf(stderr, "%s: %s: %s\n", who.c_str(), kind, what);
    std::fflush(stderr);
    if (size_ > 1 && !agreed) end_job(code);
    return code;
  };
  try {
    return exit_code_ = body();
  } catch (const AgreedError& e) {
    return exit_code_ = fail("error", e.what(), 2, true);
  } catch (const InputError& e) {
    return exit_code_ = fail("error", e.what(), 2, false);
  } catch (const OutputError& e) {
    return exit_code_ = fail("error", e.what(), 1, false);
  } catch (const std::exception& e) {
    return exit_code_ = fail("fatal", e.what(), 1, false);
  }
}

}  // namespace mlps
