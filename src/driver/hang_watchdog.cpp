#include "src/driver/hang_watchdog.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <utility>

namespace mlps {

HangWatchdog::HangWatchdog(double limit_seconds, std::string who, const CommLog* log)
    : limit_(limit_seconds), who_(std::move(who)), log_(log),
      last_progress_(CommLog::steady_seconds()) {
  if (limit_ > 0) thread_ = std::jthread([this](std::stop_token stop) { watch(stop); });
}

void HangWatchdog::watch(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  // A few checks per limit, at most 4 a second.
  const auto period = std::chrono::duration<double>(limit_ / 4 < 0.25 ? limit_ / 4 : 0.25);
  while (!wake_.wait_for(lock, stop, period, [&stop] { return stop.stop_requested(); })) {
    const double silent = CommLog::steady_seconds() - last_progress_;
    if (silent > limit_) report_and_exit(silent);
  }
}

void HangWatchdog::report_and_exit(double silent_seconds) const {
  char line[256];
  std::snprintf(line, sizeof(line),
                "%s: no progress for %.1f s (--timeout %g); its last communication calls, "
                "oldest first:\n",
                who_.c_str(), silent_seconds, limit_);
  std::string report = line;
  const double now = CommLog::steady_seconds();
  const auto calls = log_ ? log_->recent_calls() : std::vector<CommCall>{};
  if (calls.empty()) report += "  (none)\n";
  for (const CommCall& call : calls) {
    const bool done = call.finished >= 0;
    std::snprintf(line, sizeof(line), "  %-14s on %-8s %14.0f B  %s %.3f s\n",
                  to_string(call.kind), call.group.c_str(), call.bytes,
                  done ? "done, took" : "IN FLIGHT for",
                  (done ? call.finished : now) - call.posted);
    report += line;
  }
  report += who_ + ": ending the job (exit status 124)\n";
  std::fputs(report.c_str(), stderr);
  std::fflush(stderr);
  // The other waiting ranks notice within a check or two: a moment's grace lets them report
  // too before the launcher, seeing this rank exit, ends them.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  // Not MPI_Abort: the main thread is inside MPI, and this one may not call it.
  _exit(124);
}

}  // namespace mlps
