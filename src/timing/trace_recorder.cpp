#include "src/timing/trace_recorder.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>
#include <stdexcept>

#include "src/base/publish_file.h"

namespace mlps {
namespace {

using nlohmann::json;

// Nanoseconds from the origin (the clock's resolution), so that ts and dur print exactly.
long long nanos(double seconds, double origin) { return std::llround((seconds - origin) * 1e9); }
// A duration in microseconds, to the nanosecond.
double micros(double seconds) { return static_cast<double>(nanos(seconds, 0)) / 1e3; }

json metadata(const char* name, int rank, int thread, const json& args) {
  return {{"name", name}, {"ph", "M"}, {"ts", 0}, {"pid", rank}, {"tid", thread}, {"args", args}};
}

// Thread of each event: 0 for phases; for communication the first thread from 1 whose last call
// has ended by the event's start (calls in flight together go side by side).
std::vector<int> threads_of(std::span<const TraceEvent> events) {
  std::vector<size_t> order(events.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return events[a].start < events[b].start; });
  std::vector<int> thread(events.size(), 0);
  std::vector<double> busy_until;  // per communication thread
  for (const size_t i : order) {
    if (std::strcmp(events[i].category, "comm") != 0) continue;
    size_t t = 0;
    while (t < busy_until.size() && busy_until[t] > events[i].start) ++t;
    if (t == busy_until.size()) busy_until.push_back(0);
    busy_until[t] = events[i].end;
    thread[i] = static_cast<int>(t) + 1;
  }
  return thread;
}

}  // namespace

std::string rank_trace_json(int rank, std::span<const TraceEvent> events, double origin,
                            int64_t warmup) {
  const std::vector<int> thread = threads_of(events);
  std::vector<size_t> order(events.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Per thread by start, an enclosing slice (a step, backward) before what it encloses.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (thread[a] != thread[b]) return thread[a] < thread[b];
    if (events[a].start != events[b].start) return events[a].start < events[b].start;
    return events[a].end > events[b].end;
  });
  json out = json::array();
  const std::string rank_name = "rank " + std::to_string(rank);
  out.push_back(metadata("process_name", rank, 0, {{"name", rank_name}}));
  out.push_back(metadata("process_sort_index", rank, 0, {{"sort_index", rank}}));
  out.push_back(metadata("thread_name", rank, 0, {{"name", "phases"}}));
  const int threads = thread.empty() ? 0 : *std::max_element(thread.begin(), thread.end());
  for (int t = 1; t <= threads; ++t)
    out.push_back(metadata("thread_name", rank, t,
                           {{"name", t == 1 ? std::string("comm") : "comm " + std::to_string(t)}}));
  for (const size_t i : order) {
    const TraceEvent& e = events[i];
    const long long start = nanos(e.start, origin), end = std::max(start, nanos(e.end, origin));
    json event = {{"name", e.name}, {"cat", e.category}, {"ph", "X"},
                  {"ts", static_cast<double>(start) / 1e3},
                  {"dur", static_cast<double>(end - start) / 1e3}, {"pid", rank},
                  {"tid", thread[i]}};
    if (e.step >= 0) event["args"] = {{"iteration", e.step}, {"warmup", e.step < warmup}};
    if (std::strcmp(e.category, "comm") == 0) {
      event["args"] = {{"kind", e.name}, {"group", e.group}, {"bytes", std::llround(e.bytes)},
                       {"blocked_us", micros(e.blocked)}, {"started_us", micros(e.started)}};
      if (e.peer >= 0) event["args"]["peer"] = e.peer;
    }
    out.push_back(std::move(event));
  }
  return out.dump();
}

TraceRecorder::TraceRecorder(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Barrier(comm);
  const double mine = now();
  // Ranks on rank 0's host read the same CLOCK_MONOTONIC, so rank 0's origin is exact for them.
  char host[MPI_MAX_PROCESSOR_NAME] = {}, root_host[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(host, &length);
  std::memcpy(root_host, host, sizeof host);
  double root_origin = mine;
  MPI_Bcast(root_host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, comm);
  MPI_Bcast(&root_origin, 1, MPI_DOUBLE, 0, comm);
  origin_ = std::strcmp(host, root_host) == 0 ? root_origin : mine;
}

void TraceRecorder::span(const char* name, double start, double end) {
  events_.push_back({name, "phase", start, end});
}

void TraceRecorder::step(double start, double end) {
  span("step", start, end);
  events_.back().step = steps_++;
}

void TraceRecorder::comm_event(const CommEvent& e) {
  events_.push_back(
      {e.name, "comm", e.start, e.end, -1, e.group, e.bytes, e.blocked, e.started, e.peer});
}

size_t TraceRecorder::write(const std::string& path, const std::string& other,
                            int64_t warmup) const {
  const std::string mine = rank_trace_json(rank_, events_, origin_, warmup);
  if (mine.size() > static_cast<size_t>(INT_MAX))
    throw std::runtime_error("--trace: rank " + std::to_string(rank_) + "'s timeline exceeds " +
                             "2 GiB of JSON: trace fewer --iters");
  int size = 0;
  MPI_Comm_size(comm_, &size);
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(size), offsets(size, 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm_);
  size_t total = 0;
  for (int r = 0; r < size && rank_ == 0; ++r) {
    offsets[r] = static_cast<int>(total);
    total += static_cast<size_t>(lengths[r]);
  }
  if (rank_ == 0 && total > static_cast<size_t>(INT_MAX))
    throw std::runtime_error("--trace: the ranks' timelines exceed 2 GiB of JSON: trace fewer "
                             "--iters");
  std::string all(rank_ == 0 ? total : 0, '\0');
  MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
              MPI_CHAR, 0, comm_);
  if (rank_ != 0) return 0;
  // Each rank's array is complete JSON: their elements are joined into one list, unparsed.
  std::string text = "{\"traceEvents\":[";
  bool first = true;
  for (int r = 0; r < size; ++r) {
    if (lengths[r] <= 2) continue;  // "[]"
    if (!first) text += ',';
    text.append(all, static_cast<size_t>(offsets[r]) + 1, static_cast<size_t>(lengths[r]) - 2);
    first = false;
  }
  text += "],\"displayTimeUnit\":\"ms\",\"otherData\":" + other + "}\n";
  publish_file(path, text);
  return text.size();
}

}  // namespace mlps
