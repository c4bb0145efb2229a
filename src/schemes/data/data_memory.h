#pragma once
// What a data-parallel rank holds at its peak (bin/data), following its allocations up to bucket
// padding; ZeRO 2's live gradient buckets, when smaller than a unit, are estimated as the
// largest unit plus two buckets.
#include "src/memory/memory_need.h"
#include "src/options/options.h"
#include "src/schemes/data/data_grid.h"

namespace mlps {

MemoryNeed data_memory(const Options& o, int ranks, const DataGrid& config);

}  // namespace mlps
