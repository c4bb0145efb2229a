#include "bench/support/collective_engines.h"

#include <algorithm>

namespace mlps::comm_bench {
namespace {

// `requested_bytes` rounded down to a multiple of `unit` bytes, and at least one unit.
CollectiveShape whole_units(int64_t requested_bytes, int64_t unit, int64_t element_bytes) {
  CollectiveShape s;
  s.bytes = std::max(unit, requested_bytes / unit * unit);
  s.count = s.bytes / element_bytes;
  s.send_count = s.count;
  s.recv_count = s.count;
  return s;
}

CollectiveShape one_buffer_shape(int64_t requested_bytes, int64_t element_bytes, int) {
  return whole_units(requested_bytes, element_bytes, element_bytes);
}

// Σ_q check_input(q, i, k) = n(n+1)/2 + n·((i + k) % 7)
int64_t sum_over_ranks(int ranks, int64_t i, int64_t k) {
  return int64_t{ranks} * (ranks + 1) / 2 + int64_t{ranks} * ((i + k) % 7);
}

namespace all_reduce {  // sum, out of place
void call(Communicator& comm, const void* send, void* recv, const CollectiveShape& s,
          DataType type) {
  comm.all_reduce_async(send, recv, s.count, type)->wait();
}
int64_t expected(const CollectiveShape&, int, int ranks, int64_t i, int64_t k) {
  return sum_over_ranks(ranks, i, k);
}
}  // namespace all_reduce

namespace all_gather {  // each rank sends 1/ranks of the gathered output
CollectiveShape shape(int64_t requested_bytes, int64_t element_bytes, int ranks) {
  CollectiveShape s = whole_units(requested_bytes, element_bytes * ranks, element_bytes);
  s.send_count = s.count / ranks;
  return s;
}
void call(Communicator& comm, const void* send, void* recv, const CollectiveShape& s,
          DataType type) {
  comm.all_gather_async(send, recv, s.send_count, type)->wait();
}
int64_t expected(const CollectiveShape& s, int, int, int64_t i, int64_t k) {
  return check_input(static_cast<int>(i / s.send_count), i % s.send_count, k);
}
}  // namespace all_gather

namespace reduce_scatter {  // each rank receives 1/ranks of the summed input
CollectiveShape shape(int64_t requested_bytes, int64_t element_bytes, int ranks) {
  CollectiveShape s = whole_units(requested_bytes, element_bytes * ranks, element_bytes);
  s.recv_count = s.count / ranks;
  return s;
}
void call(Communicator& comm, const void* send, void* recv, const CollectiveShape& s,
          DataType type) {
  comm.reduce_scatter_async(send, recv, s.recv_count, type)->wait();
}
int64_t expected(const CollectiveShape& s, int rank, int ranks, int64_t i, int64_t k) {
  return sum_over_ranks(ranks, rank * s.recv_count + i, k);
}
}  // namespace reduce_scatter

namespace broadcast {  // in place on the output buffer
void call(Communicator& comm, const void*, void* recv, const CollectiveShape& s, DataType type) {
  comm.broadcast_async(recv, s.count, type, kBroadcastRoot)->wait();
}
int64_t expected(const CollectiveShape&, int, int, int64_t i, int64_t k) {
  return check_input(kBroadcastRoot, i, k);
}
}  // namespace broadcast

namespace send_recv {  // a ring: to rank+1, from rank−1
void call(Communicator& comm, const void* send, void* recv, const CollectiveShape& s,
          DataType type) {
  const int next = (comm.rank() + 1) % comm.size();
  const int previous = (comm.rank() + comm.size() - 1) % comm.size();
  PendingComm received = comm.recv_async(recv, s.count, type, previous);
  PendingComm sent = comm.send_async(send, s.count, type, next);
  sent->wait();
  received->wait();
}
int64_t expected(const CollectiveShape&, int rank, int ranks, int64_t i, int64_t k) {
  return check_input((rank + ranks - 1) % ranks, i, k);
}
}  // namespace send_recv

constexpr CollectiveEngine kEngines[] = {
    {"allreduce", CommKind::all_reduce, "sum, out of place", one_buffer_shape, all_reduce::call,
     all_reduce::expected, false},
    {"allgather", CommKind::all_gather, "size: the gathered output", all_gather::shape,
     all_gather::call, all_gather::expected, false},
    {"reduce_scatter", CommKind::reduce_scatter, "sum, size: the whole input",
     reduce_scatter::shape, reduce_scatter::call, reduce_scatter::expected, false},
    {"broadcast", CommKind::broadcast, "root 0, in place", one_buffer_shape, broadcast::call,
     broadcast::expected, true},
    {"sendrecv", CommKind::send_recv, "ring: to rank+1, from rank-1", one_buffer_shape,
     send_recv::call, send_recv::expected, false}};

}  // namespace

std::span<const CollectiveEngine> collective_engines() { return kEngines; }

}  // namespace mlps::comm_bench
