#pragma once
// --trace: one rank's timeline (every phase, step, evaluation and communication call, with its
// start and end), kept in memory until the end of the run and then written by rank 0, for every
// rank, as one Chrome trace-event JSON file (Perfetto, chrome://tracing): a process per rank
// ("rank r"), its phases on thread 0 and its communication on threads 1, 2, ... (a call
// overlapping an earlier one still in flight takes the next thread, so slices always nest).
// The clock (CommLog::steady_seconds()) and the origin: docs/timelines-and-plots.md.
#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "src/comm/comm_log.h"

namespace mlps {

// One slice of a timeline; times in seconds of the trace clock (not yet from the origin).
struct TraceEvent {
  const char* name = "";      // a static string: a phase, "step", "evaluation", or a call's kind
  const char* category = "";  // "phase" (thread 0) or "comm" (threads 1, 2, ...)
  double start = 0, end = 0;
  int64_t step = -1;  // "step": the iteration; else -1
  // "comm" only; span() leaves them out (group's {} keeps -Wmissing-field-initializers quiet).
  std::string group{};
  double bytes = 0, blocked = 0, started = 0;  // started: of blocked, in the starting call
  int peer = -1;
};

// Rank `rank`'s events as a JSON array of trace events (its "M" names included), timestamps in
// microseconds from `origin`; `warmup` leading steps are marked as such.
std::string rank_trace_json(int rank, std::span<const TraceEvent> events, double origin,
                            int64_t warmup);

class TraceRecorder final : public CommEventSink {
 public:
  // Collective over comm: the ranks agree on the origin.
  explicit TraceRecorder(MPI_Comm comm);
  static double now() { return CommLog::steady_seconds(); }

  // A phase ("forward", ...), or "evaluation", from start to end.
  void span(const char* name, double start, double end);
  // The whole of the next iteration (or --inference batch).
  void step(double start, double end);
  void comm_event(const CommEvent& event) override;
  size_t event_count() const { return events_.size(); }

  // Collective: rank 0 writes every rank's timeline to `path` (its folder must exist) in one
  // piece, `other` (a JSON object's text, e.g. the scheme and grid) as the file's "otherData";
  // returns the bytes written (0 on other ranks).
  size_t write(const std::string& path, const std::string& other, int64_t warmup) const;

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  double origin_ = 0;
  int64_t steps_ = 0;
  std::vector<TraceEvent> events_;
};

}  // namespace mlps
