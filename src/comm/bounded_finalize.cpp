#include "src/comm/bounded_finalize.h"

#include <mpi.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace mlps {

void finalize_within(const std::string& who, int code, std::chrono::seconds limit) {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mutex);
    if (finished.wait_for(lock, limit, [&] { return done; })) return;
    std::fprintf(stderr,
                 "%s: MPI_Finalize had not returned after %lld s (UCX's TCP teardown, "
                 "openucx/ucx#8738); exiting with status %d\n",
                 who.c_str(), static_cast<long long>(limit.count()), code);
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(code);
  });
  MPI_Finalize();
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  finished.notify_one();
  watchdog.join();
}

}  // namespace mlps
