#pragma once
// Per-iteration record of one rank's communication: for each collective kind, the bytes moved
// and the time from start to completion, and the time the rank spent blocked waiting (exposed
// communication). Sizes as nccl-tests counts them: all-reduce and broadcast the buffer, all-gather
// the gathered output, reduce-scatter the full input, send/recv the message.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace mlps {

enum class CommKind { all_reduce, all_gather, reduce_scatter, broadcast, send_recv };
const char* to_string(CommKind kind);  // "allreduce", "allgather", "reduce_scatter", ...

// nccl-tests' bus-bandwidth factor for a group of n ranks: 2(n−1)/n for all-reduce, (n−1)/n
// for all-gather and reduce-scatter, 1 for broadcast and send/recv.
double bus_bandwidth_factor(CommKind kind, int ranks);
// Latency-bound steps of a ring collective of n ranks: 2(n−1) for all-reduce, n−1 for all-gather,
// reduce-scatter and broadcast, 1 for send/recv.
double latency_steps(CommKind kind, int ranks);

struct CommTotals {
  double bytes = 0;
  double seconds = 0;  // start → completion, summed over calls (overlapped time included)
  int64_t calls = 0;
  CommKind kind = CommKind::all_reduce;
  int group_size = 1;  // ranks in the communicator (for busbw)
};

// The name a collective is logged and stored under: the kind ("allreduce") for the whole
// world's communicator (group "world" or ""), else "kind:group" ("allreduce:inner").
std::string comm_key(CommKind kind, const std::string& group);
// The kind a key or kind name names ("allreduce:data" → all_reduce); std::invalid_argument for
// another text.
CommKind comm_kind_of(const std::string& key);

// One communication call as a hang report lists it; times in seconds of a steady clock.
struct CommCall {
  CommKind kind = CommKind::all_reduce;
  std::string group;
  double bytes = 0;
  double posted = 0;
  double finished = -1;  // < 0: still in flight
};

// One completed call for a timeline (--trace), in seconds of CommLog::steady_seconds(): start
// when it was posted, end when its wait returned (on the GPU: the operation's own start and end),
// blocked the part of it this rank spent waiting.
struct CommEvent {
  const char* name = "";  // "allreduce", "allgather", "reduce_scatter", "broadcast", "send", "recv"
  std::string group;      // the communicator's name, e.g. "data", "pipe"
  double bytes = 0;       // as the totals count them
  int peer = -1;          // send/recv: the other rank, broadcast: the root (ranks of the group)
  double start = 0, end = 0, blocked = 0;
  double started = 0;  // of `blocked`, the part inside the call that started it (MPI)
};

// Where a log hands each completed call when a timeline is recorded.
class CommEventSink {
 public:
  virtual void comm_event(const CommEvent& event) = 0;

 protected:
  ~CommEventSink() = default;
};

class CommLog {
 public:
  // The rank's recent calls (the last kRecentCalls), for the report of a rank that stops making
  // progress (HangWatchdog). Thread-safe: the watchdog reads them from its own thread.
  static constexpr size_t kRecentCalls = 16;
  int64_t posted(CommKind kind, const std::string& group, double bytes);
  void finished(int64_t call);
  std::vector<CommCall> recent_calls() const;
  static double steady_seconds();

  void record(CommKind kind, const std::string& group, int group_size, double bytes,
              double seconds);
  // Blocked time of this rank, exposed communication unless waits are idle (below).
  void add_blocked(double seconds) {
    if (!idle_waits_) blocked_seconds_ += seconds;
  }
  // While set, a wait is a stage idling for its neighbour (a pipeline's bubble, which the caller
  // times itself): its blocked time is not exposed communication and is dropped. A wait whose
  // figures are deferred reads the setting when it is called.
  void set_idle_waits(bool idle) { idle_waits_ = idle; }
  bool idle_waits() const { return idle_waits_; }
  // A record whose figures are known only later (GPU events still pending): `settle` is called
  // with this log before the totals are next taken, so a wait() need not block the host.
  void defer(std::function<void(CommLog&)> settle) { deferred_.push_back(std::move(settle)); }
  // This iteration's totals per comm_key and blocked time; clears them for the next one.
  std::map<std::string, CommTotals> take_totals();
  double take_blocked_seconds();

  // Null (the default): no timeline, and communicators skip building events.
  void set_event_sink(CommEventSink* sink) { event_sink_ = sink; }
  CommEventSink* event_sink() const { return event_sink_; }

 private:
  void settle_deferred();
  std::map<std::string, CommTotals> totals_;
  double blocked_seconds_ = 0;
  bool idle_waits_ = false;
  std::vector<std::function<void(CommLog&)>> deferred_;
  mutable std::mutex calls_mutex_;
  std::deque<std::pair<int64_t, CommCall>> calls_;
  int64_t next_call_ = 0;
  CommEventSink* event_sink_ = nullptr;  // not owned
};

}  // namespace mlps
