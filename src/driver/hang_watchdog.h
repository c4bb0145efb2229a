#pragma once
// --timeout: ends a rank that stops making progress, so that a job whose peer died or was
// stopped ends with a report instead of hanging until its time limit.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "src/comm/comm_log.h"

namespace mlps {

// After `limit_seconds` (<= 0: never) without a completed step or evaluation batch, prints the
// rank's last communication calls on stderr and exits with 124 (docs/running.md).
class HangWatchdog {
 public:
  HangWatchdog(double limit_seconds, std::string who, const CommLog* log);

  // A step or evaluation batch has completed.
  void progress() { last_progress_ = CommLog::steady_seconds(); }

 private:
  void watch(std::stop_token stop);
  [[noreturn]] void report_and_exit(double silent_seconds) const;

  double limit_;
  std::string who_;
  const CommLog* log_;
  std::atomic<double> last_progress_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::jthread thread_;  // last: stopped and joined before the rest goes
};

}  // namespace mlps
