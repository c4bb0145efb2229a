#pragma once
// Checks of every Communicator operation against exactly known answers, written once for any
// backend and device: inputs are integers (1000·rank + index), so every sum is exact in float
// and double and results compare with ==.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "src/device/buffer.h"
#include "src/comm/communicator.h"

namespace mlps::testing {

// The element counts each operation is checked at, in every backend's and wire format's tests.
inline constexpr int64_t kCounts[] = {1, 7, 1000, 40000};

template <typename T>
std::vector<T> ramp(int rank, int64_t count) {
  std::vector<T> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[static_cast<size_t>(i)] = T(1000 * rank + i);
  return values;
}

// "" when equal, else how many elements differ and the first of them.
template <typename T>
std::string differences(const std::vector<T>& got, const std::vector<T>& expected) {
  if (got.size() != expected.size())
    return "size " + std::to_string(got.size()) + ", expected " + std::to_string(expected.size());
  size_t wrong = 0;
  size_t first = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != expected[i] && wrong++ == 0) first = i;
  if (wrong == 0) return "";
  return std::to_string(wrong) + " of " + std::to_string(got.size()) + " wrong, first [" +
         std::to_string(first) + "] = " + std::to_string(got[first]) + ", expected " +
         std::to_string(expected[first]);
}

// Σ_r ramp(r)[offset + i] over n ranks.
template <typename T>
std::vector<T> summed_ramp(int ranks, int64_t offset, int64_t count) {
  std::vector<T> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    values[static_cast<size_t>(i)] = T(1000 * ranks * (ranks - 1) / 2 + ranks * (offset + i));
  return values;
}

template <typename T>
std::vector<T> gathered_ramps(int ranks, int64_t count) {
  std::vector<T> values;
  for (int r = 0; r < ranks; ++r) {
    const std::vector<T> part = ramp<T>(r, count);
    values.insert(values.end(), part.begin(), part.end());
  }
  return values;
}

template <typename T>
std::vector<T> slice(const std::vector<T>& values, int64_t offset, int64_t count) {
  return {values.begin() + offset, values.begin() + offset + count};
}

template <typename T>
void check_all_reduce(Device& device, Communicator& comm, int64_t count) {
  const int n = comm.size();
  const int r = comm.rank();
  const DataType type = data_type_of<T>();
  const std::vector<T> expected = summed_ramp<T>(n, 0, count);
  Buffer<T> send(device, count);
  Buffer<T> recv(device, count);
  send.upload(ramp<T>(r, count));
  comm.all_reduce_async(send.data(), recv.data(), count, type)->wait();
  EXPECT_EQ(differences(recv.download(), expected), "") << "out of place, count " << count;
  EXPECT_EQ(differences(send.download(), ramp<T>(r, count)), "") << "send changed, count " << count;
  comm.all_reduce_async(send.data(), send.data(), count, type)->wait();
  EXPECT_EQ(differences(send.download(), expected), "") << "in place, count " << count;
  recv.upload(ramp<T>(r, count));
  comm.all_reduce(recv.data(), count);
  EXPECT_EQ(differences(recv.download(), expected), "") << "blocking, count " << count;
}

template <typename T>
void check_all_gather(Device& device, Communicator& comm, int64_t count) {
  const int n = comm.size();
  const int r = comm.rank();
  const std::vector<T> expected = gathered_ramps<T>(n, count);
  Buffer<T> send(device, count);
  Buffer<T> recv(device, n * count);
  send.upload(ramp<T>(r, count));
  comm.all_gather_async(send.data(), recv.data(), count, data_type_of<T>())->wait();
  EXPECT_EQ(differences(recv.download(), expected), "") << "out of place, count " << count;
  recv.zero();
  comm.all_gather(send.data(), recv.data(), count);
  EXPECT_EQ(differences(recv.download(), expected), "") << "blocking, count " << count;
  // In place: this rank's part already sits at its slot; the rest is garbage.
  std::vector<T> host(static_cast<size_t>(n * count), T(-7));
  const std::vector<T> mine = ramp<T>(r, count);
  std::copy(mine.begin(), mine.end(), host.begin() + r * count);
  recv.upload(host);
  comm.all_gather_async(recv.data() + r * count, recv.data(), count, data_type_of<T>())->wait();
  EXPECT_EQ(differences(recv.download(), expected), "") << "in place, count " << count;
}

template <typename T>
void check_reduce_scatter(Device& device, Communicator& comm, int64_t count) {
  const int n = comm.size();
  const int r = comm.rank();
  const std::vector<T> expected = summed_ramp<T>(n, r * count, count);
  Buffer<T> send(device, n * count);
  Buffer<T> recv(device, count);
  send.upload(ramp<T>(r, n * count));
  comm.reduce_scatter_async(send.data(), recv.data(), count, data_type_of<T>())->wait();
  EXPECT_EQ(differences(recv.download(), expected), "") << "out of place, count " << count;
  recv.zero();
  comm.reduce_scatter(send.data(), recv.data(), count);
  EXPECT_EQ(differences(recv.download(), expected), "") << "blocking, count " << count;
  // In place as NCCL defines it: the result lands in this rank's slot of the input.
  comm.reduce_scatter_async(send.data(), send.data() + r * count, count, data_type_of<T>())
      ->wait();
  EXPECT_EQ(differences(slice(send.download(), r * count, count), expected), "")
      << "in place, count " << count;
}

template <typename T>
void check_broadcast(Device& device, Communicator& comm, int64_t count) {
  const int n = comm.size();
  const int r = comm.rank();
  Buffer<T> buffer(device, count);
  for (int root = 0; root < n; ++root) {
    buffer.zero();
    if (r == root) buffer.upload(ramp<T>(root + 1, count));
    comm.broadcast_async(buffer.data(), count, data_type_of<T>(), root)->wait();
    EXPECT_EQ(differences(buffer.download(), ramp<T>(root + 1, count)), "")
        << "root " << root << ", count " << count;
  }
  buffer.zero();
  if (r == n - 1) buffer.upload(ramp<T>(n, count));
  comm.broadcast(buffer.data(), count, n - 1);
  EXPECT_EQ(differences(buffer.download(), ramp<T>(n, count)), "") << "blocking, count " << count;
}

// Each rank sends two messages to the next rank and receives two from the previous one; the
// receives are waited before the sends, and in reverse order.
template <typename T>
void check_ring_exchange(Device& device, Communicator& comm, int64_t count) {
  const int n = comm.size();
  const int r = comm.rank();
  const int next = (r + 1) % n;
  const int prev = (r + n - 1) % n;
  const DataType type = data_type_of<T>();
  Buffer<T> out1(device, count);
  Buffer<T> out2(device, count);
  Buffer<T> in1(device, count);
  Buffer<T> in2(device, count);
  out1.upload(ramp<T>(r, count));
  out2.upload(ramp<T>(r + 10, count));
  PendingComm s1 = comm.send_async(out1.data(), count, type, next);
  PendingComm s2 = comm.send_async(out2.data(), count, type, next);
  PendingComm r1 = comm.recv_async(in1.data(), count, type, prev);
  PendingComm r2 = comm.recv_async(in2.data(), count, type, prev);
  r2->wait();
  r1->wait();
  s1->wait();
  s2->wait();
  EXPECT_EQ(differences(in1.download(), ramp<T>(prev, count)), "") << "first, count " << count;
  EXPECT_EQ(differences(in2.download(), ramp<T>(prev + 10, count)), "")
      << "second, count " << count;
}

// Several operations in flight at once, waited in an order unlike the posting order.
template <typename T>
void check_outstanding_out_of_order(Device& device, Communicator& comm, int64_t count) {
  const int n = comm.size();
  const int r = comm.rank();
  const DataType type = data_type_of<T>();
  Buffer<T> reduce_send(device, count);
  Buffer<T> reduce_recv(device, count);
  Buffer<T> gather_recv(device, n * count);
  Buffer<T> scatter_send(device, n * count);
  Buffer<T> scatter_recv(device, count);
  Buffer<T> broadcast_buffer(device, count);
  Buffer<T> in_place(device, count);
  reduce_send.upload(ramp<T>(r, count));
  scatter_send.upload(ramp<T>(r, n * count));
  broadcast_buffer.zero();
  if (r == 0) broadcast_buffer.upload(ramp<T>(5, count));
  in_place.upload(ramp<T>(r, count));

  PendingComm reduce = comm.all_reduce_async(reduce_send.data(), reduce_recv.data(), count, type);
  PendingComm gather = comm.all_gather_async(reduce_send.data(), gather_recv.data(), count, type);
  PendingComm scatter =
      comm.reduce_scatter_async(scatter_send.data(), scatter_recv.data(), count, type);
  PendingComm broadcast = comm.broadcast_async(broadcast_buffer.data(), count, type, 0);
  PendingComm reduce_in_place = comm.all_reduce_async(in_place.data(), in_place.data(), count,
                                                      type);
  broadcast->wait();
  gather->wait();
  reduce_in_place->wait();
  reduce->wait();
  scatter->wait();

  const std::vector<T> sum = summed_ramp<T>(n, 0, count);
  EXPECT_EQ(differences(reduce_recv.download(), sum), "") << "all-reduce, count " << count;
  EXPECT_EQ(differences(gather_recv.download(), gathered_ramps<T>(n, count)), "")
      << "all-gather, count " << count;
  EXPECT_EQ(differences(scatter_recv.download(), summed_ramp<T>(n, r * count, count)), "")
      << "reduce-scatter, count " << count;
  EXPECT_EQ(differences(broadcast_buffer.download(), ramp<T>(5, count)), "")
      << "broadcast, count " << count;
  EXPECT_EQ(differences(in_place.download(), sum), "") << "in-place all-reduce, count " << count;
}

// A request destroyed without wait() completes in its destructor.
template <typename T>
void check_dropped_request_completes(Device& device, Communicator& comm, int64_t count) {
  Buffer<T> buffer(device, count);
  buffer.upload(ramp<T>(comm.rank(), count));
  { PendingComm dropped = comm.all_reduce_async(buffer.data(), buffer.data(), count,
                                                data_type_of<T>()); }
  EXPECT_EQ(differences(buffer.download(), summed_ramp<T>(comm.size(), 0, count)), "")
      << "count " << count;
}

// One call of each kind: the log holds nccl-tests' byte counts and one call each (two for the
// send and the receive), plausible times, and is empty after being taken.
template <typename T>
void check_log_accounting(Device& device, Communicator& comm, CommLog& log, int64_t count) {
  const int n = comm.size();
  const double bytes = static_cast<double>(count * sizeof(T));
  (void)log.take_totals();
  (void)log.take_blocked_seconds();
  Buffer<T> small(device, count);
  Buffer<T> large(device, n * count);
  Buffer<T> other(device, count);
  small.upload(ramp<T>(comm.rank(), count));
  comm.all_reduce(small.data(), count);
  comm.all_gather(small.data(), large.data(), count);
  comm.reduce_scatter(large.data(), small.data(), count);
  comm.broadcast(small.data(), count, 0);
  PendingComm send = comm.send_async(small.data(), count, data_type_of<T>(), (comm.rank() + 1) % n);
  PendingComm recv =
      comm.recv_async(other.data(), count, data_type_of<T>(), (comm.rank() + n - 1) % n);
  recv->wait();
  send->wait();

  const std::map<std::string, CommTotals> totals = log.take_totals();
  const double blocked = log.take_blocked_seconds();
  const std::map<std::string, std::pair<double, int64_t>> expected = {
      {"allreduce", {bytes, 1}},      {"allgather", {bytes * n, 1}},
      {"reduce_scatter", {bytes * n, 1}}, {"broadcast", {bytes, 1}},
      {"sendrecv", {2 * bytes, 2}}};
  EXPECT_EQ(totals.size(), expected.size());
  double seconds = 0;
  for (const auto& [kind, want] : expected) {
    const auto found = totals.find(kind);
    if (found == totals.end()) {
      ADD_FAILURE() << "no totals for " << kind;
      continue;
    }
    EXPECT_EQ(found->second.bytes, want.first) << kind;
    EXPECT_EQ(found->second.calls, want.second) << kind;
    EXPECT_GE(found->second.seconds, 0.0) << kind;
    EXPECT_LT(found->second.seconds, 60.0) << kind;
    seconds += found->second.seconds;
  }
  EXPECT_GE(blocked, 0.0);
  EXPECT_LE(blocked, seconds + 1e-9) << "blocked time exceeds start-to-completion time";
  EXPECT_TRUE(log.take_totals().empty());
  EXPECT_EQ(log.take_blocked_seconds(), 0.0);
}

template <typename T>
void check_every_operation(Device& device, Communicator& comm, CommLog& log) {
  for (const int64_t count : kCounts) {
    check_all_reduce<T>(device, comm, count);
    check_all_gather<T>(device, comm, count);
    check_reduce_scatter<T>(device, comm, count);
    check_broadcast<T>(device, comm, count);
    check_ring_exchange<T>(device, comm, count);
    check_outstanding_out_of_order<T>(device, comm, count);
  }
  check_dropped_request_completes<T>(device, comm, 513);
  check_log_accounting<T>(device, comm, log, 333);
}

}  // namespace mlps::testing
