#pragma once
// Refuses, before any large allocation, a run whose accounting (scheme_memory.h) does not fit
// in the memory its ranks have (available_memory.h). Collective over context.comm: every rank
// throws the same InputError, naming the rank that fits worst, both figures and the breakdown.
#include "src/comm/process_placement.h"
#include "src/device.h"
#include "src/driver/run_context.h"
#include "src/memory/available_memory.h"
#include "src/memory/memory_need.h"

namespace mlps {

// Records the need in context (estimated_bytes, and largest_estimated_bytes over the ranks),
// then refuses unless it fits or `skip` (--skip-memory-check).
void check_memory_fits(RunContext& context, const MemoryNeed& need, DeviceKind device,
                       const RankPlacement& placement, bool skip);

// The verdict alone, for executables without a RunContext (the benchmarks): refuses when
// `need` bytes (described by `what`) exceed this rank's share.
void check_memory_fits(MPI_Comm comm, double need, const std::string& what,
                       const AvailableMemory& available);

}  // namespace mlps
