// One small engine per collective, as nccl-tests keeps one file per collective over a shared
// driver: how a requested size becomes element counts, the call itself, and the exact result of
// each output element for the check inputs below.
#pragma once

#include <cstdint>
#include <span>

#include "src/comm/comm_log.h"
#include "src/comm/communicator.h"

namespace mlps::comm_bench {

constexpr int kBroadcastRoot = 0;

// Element counts of one call. Sizes follow nccl-tests: all-gather counts the gathered output,
// reduce-scatter the whole input, the others the one buffer.
struct CollectiveShape {
  int64_t bytes = 0;
  int64_t count = 0;       // elements in bytes
  int64_t send_count = 0;  // elements this rank sends (broadcast: unused, it runs in place)
  int64_t recv_count = 0;  // elements this rank receives
};

struct CollectiveEngine {
  const char* name;  // the --op name and the HDF5 group
  CommKind kind;     // picks nccl-tests' bus bandwidth factor
  const char* note;  // for the table's title
  // The requested size rounded down to whole elements (for all-gather and reduce-scatter, whole
  // elements per rank), and at least one of those.
  CollectiveShape (*shape)(int64_t requested_bytes, int64_t element_bytes, int ranks);
  // One call, waited for.
  void (*call)(Communicator& comm, const void* send, void* recv, const CollectiveShape& s,
               DataType type);
  // Output element i of `rank` when every rank's input is check_input(rank, ·, k).
  int64_t (*expected)(const CollectiveShape& s, int rank, int ranks, int64_t i, int64_t k);
  bool in_place_at_root;  // the root's output buffer holds its input before the call
};

// Check inputs: element i of rank r's input in check iteration k is (r + 1) + (i + k) % 7, small
// integers whose sums over ranks are exact in float and double (k shifts the pattern so a stale
// result from the previous iteration is caught).
inline int64_t check_input(int rank, int64_t i, int64_t k) { return rank + 1 + (i + k) % 7; }

// Every collective, in table order.
std::span<const CollectiveEngine> collective_engines();

}  // namespace mlps::comm_bench
