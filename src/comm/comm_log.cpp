#include "src/comm/comm_log.h"

#include <utility>

namespace mlps {

const char* to_string(CommKind kind) {
  switch (kind) {
    case CommKind::all_reduce: return "allreduce";
    case CommKind::all_gather: return "allgather";
    case CommKind::reduce_scatter: return "reduce_scatter";
    case CommKind::broadcast: return "broadcast";
    case CommKind::send_recv: return "sendrecv";
  }
  return "unknown";
}

double bus_bandwidth_factor(CommKind kind, int ranks) {
  const double n = ranks;
  switch (kind) {
    case CommKind::all_reduce: return 2.0 * (n - 1) / n;
    case CommKind::all_gather:
    case CommKind::reduce_scatter: return (n - 1) / n;
    case CommKind::broadcast:
    case CommKind::send_recv: return 1.0;
  }
  return 1.0;
}

std::string comm_key(CommKind kind, const std::string& group) {
  if (group.empty() || group == "world") return to_string(kind);
  return std::string(to_string(kind)) + ":" + group;
}

void CommLog::record(CommKind kind, const std::string& group, int group_size, double bytes,
                     double seconds) {
  CommTotals& totals = totals_[comm_key(kind, group)];
  totals.kind = kind;
  totals.group_size = group_size;
  totals.bytes += bytes;
  totals.seconds += seconds;
  ++totals.calls;
}

void CommLog::settle_deferred() {
  for (auto& settle : std::exchange(deferred_, {})) settle(*this);
}

std::map<std::string, CommTotals> CommLog::take_totals() {
  settle_deferred();
  return std::exchange(totals_, {});
}

double CommLog::take_blocked_seconds() {
  settle_deferred();
  return std::exchange(blocked_seconds_, 0.0);
}

}  // namespace mlps
