#include "src/comm/comm_log.h"

#include <chrono>
#include <iterator>
#include <stdexcept>
#include <utility>

namespace mlps {
namespace {
constexpr const char* kKindNames[] = {"allreduce", "allgather", "reduce_scatter", "broadcast",
                                      "sendrecv"};  // in the enum's order
}  // namespace

const char* to_string(CommKind kind) { return kKindNames[static_cast<int>(kind)]; }

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

double latency_steps(CommKind kind, int ranks) {
  if (kind == CommKind::send_recv) return 1.0;
  return (kind == CommKind::all_reduce ? 2.0 : 1.0) * (ranks - 1);
}

std::string comm_key(CommKind kind, const std::string& group) {
  if (group.empty() || group == "world") return to_string(kind);
  return std::string(to_string(kind)) + ":" + group;
}

CommKind comm_kind_of(const std::string& key) {
  const std::string name = key.substr(0, key.find(':'));
  for (int kind = 0; kind < static_cast<int>(std::size(kKindNames)); ++kind)
    if (name == kKindNames[kind]) return static_cast<CommKind>(kind);
  throw std::invalid_argument("not a collective: " + key);
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

double CommLog::steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t CommLog::posted(CommKind kind, const std::string& group, double bytes) {
  const std::lock_guard lock(calls_mutex_);
  calls_.emplace_back(next_call_, CommCall{kind, group, bytes, steady_seconds(), -1});
  if (calls_.size() > kRecentCalls) calls_.pop_front();
  return next_call_++;
}

void CommLog::finished(int64_t call) {
  const std::lock_guard lock(calls_mutex_);
  for (auto& [id, record] : calls_)
    if (id == call) record.finished = steady_seconds();
}

std::vector<CommCall> CommLog::recent_calls() const {
  const std::lock_guard lock(calls_mutex_);
  std::vector<CommCall> out;
  for (const auto& entry : calls_) out.push_back(entry.second);
  return out;
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
