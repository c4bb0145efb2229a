#pragma once
// What bin/serial holds at its peak, following its allocations exactly. fuse_update: as asked
// of SerialTrainer (its dW block where the fused update applies). bf16 and fp16 are typed
// storage: 2-byte values and activations, fp32 gradients, statistics and optimizer state, and
// on the CPU the GEMMs' widening scratch (as buffers).
#include "src/memory/memory_need.h"
#include "src/options/options.h"

namespace mlps {

MemoryNeed serial_memory(const Options& o, bool fuse_update);

}  // namespace mlps
