#include "src/schemes/serial/serial_memory.h"

#include "src/memory/model_memory.h"

namespace mlps {

MemoryNeed serial_memory(const Options& o, bool fuse_update) {
  return whole_model_need(o, fuse_update, true);
}

}  // namespace mlps
