#pragma once
// NVTX ranges, so that Nsight Systems shows a step's phases (as --trace does) and its units: in
// the CUDA build through NVTX 3 (header-only; a profiler's injection library records them, and
// without one each call returns at once); nothing in CPU and emulated GPU builds.
#include <cstdint>
#include <cstdio>

#if defined(MLPSCALE_WITH_CUDA) && !defined(MLPSCALE_CUDA_EMULATE)
#include <nvtx3/nvToolsExt.h>
#define MLPS_WITH_NVTX 1
#endif

namespace mlps::nvtx {

// A range that may end out of nesting order (phases of overlapping micro-batches).
inline uint64_t start(const char* name) {
#ifdef MLPS_WITH_NVTX
  return nvtxRangeStartA(name);
#else
  (void)name;
  return 0;
#endif
}
inline void end(uint64_t id) {
#ifdef MLPS_WITH_NVTX
  nvtxRangeEnd(id);
#else
  (void)id;
#endif
}

// A nested range for a scope: "<what> <index>", e.g. "forward unit 3".
class Scope {
 public:
  Scope(const char* what, int index) {
#ifdef MLPS_WITH_NVTX
    char name[64];
    std::snprintf(name, sizeof(name), "%s %d", what, index);
    nvtxRangePushA(name);
#else
    (void)what, (void)index;
#endif
  }
  ~Scope() {
#ifdef MLPS_WITH_NVTX
    nvtxRangePop();
#endif
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};

}  // namespace mlps::nvtx
