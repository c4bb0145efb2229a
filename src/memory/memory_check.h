#pragma once
// Refuses, before any large allocation, a run whose accounting (scheme_memory.h, or a
// benchmark's buffers) does not fit in the memory its ranks have (available_memory.h).
#include <mpi.h>

#include <string>

#include "src/memory/available_memory.h"
#include "src/memory/memory_need.h"

namespace mlps {

// Collective over comm: when `need` bytes (described by `what`) exceed some rank's share,
// every rank throws the same InputError naming the rank that fits worst and both figures.
void check_memory_fits(MPI_Comm comm, double need, const std::string& what,
                       const AvailableMemory& available);

}  // namespace mlps
