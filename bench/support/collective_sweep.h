// The shared driver of bin/bench_comm's collective engines: per message size a warm-up, a timed
// loop and check iterations whose results must equal the engine's exact answers.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/support/collective_engines.h"
#include "bench/support/comm_bench_options.h"
#include "src/comm/communicator.h"
#include "src/device/device.h"
#include "src/results/comm_bench_writer.h"

namespace mlps::comm_bench {

// min, min·f, min·f², ... up to max, rounded by the engine's shape; sizes that round alike run
// once.
std::vector<CollectiveShape> sweep_shapes(const CollectiveEngine& engine, int64_t min_bytes,
                                          int64_t max_bytes, int64_t factor,
                                          int64_t element_bytes, int ranks);

// Bytes a sweep of one collective holds at its largest size: on the device the send and receive
// buffers, on the host the check's send, receive, expected and result vectors.
struct SweepMemory {
  double device = 0, host = 0;
};
SweepMemory sweep_memory(const CollectiveEngine& engine, int64_t min_bytes, int64_t max_bytes,
                         const CommBenchOptions& o, int ranks);

// Sweeps one collective in o.datatype, printing a row per size on rank 0 as it finishes.
// Collective over MPI_COMM_WORLD.
CommBenchSweep sweep_collective(Device& device, Communicator& comm, const CollectiveEngine& engine,
                                int64_t min_bytes, int64_t max_bytes, const CommBenchOptions& o);

}  // namespace mlps::comm_bench
