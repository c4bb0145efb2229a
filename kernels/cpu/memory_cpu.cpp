// Memory of the CPU backend: 64-byte aligned host allocations (cache lines, AVX-512 loads),
// copies and fills split across the rank's threads, and nothing to synchronise.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "kernels/aliasing.h"
#include "kernels/cpu/parallel_loops.h"
#include "kernels/kernels.h"

namespace mlps::cpu {

namespace {
constexpr size_t kAlignment = 64;

// Buffers freed and made again every step (ZeRO-3's gathered units, a pipeline's micro-batch
// activations) must stay in the process: glibc hands large freed chunks back to the kernel by
// self-adjusting thresholds, and faulting their pages in again cost ZeRO-3 up to a quarter of
// its step, depending on how the heap happened to be laid out. Heap memory only, never trimmed,
// is reused as a caching allocator would; the bytes the Device counts are unchanged.
void keep_freed_memory() {
#if defined(__GLIBC__)
  static const bool kept = [] {
    return mallopt(M_MMAP_MAX, 0) == 1 &&
           mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max()) == 1;
  }();
  (void)kept;  // a failed mallopt leaves glibc's defaults: slower, never wrong
#endif
}

// memcpy over chunks of whole cache lines, one per thread for large copies.
void parallel_memcpy(void* dst, const void* src, size_t bytes) {
  detail::parallel_chunks(static_cast<int64_t>(bytes), 1, 64, [&](int64_t b0, int64_t b1) {
    std::memcpy(static_cast<char*>(dst) + b0, static_cast<const char*>(src) + b0,
                static_cast<size_t>(b1 - b0));
  });
}

}  // namespace

// Aligned by hand from plain malloc, the block's start kept just below the pointer: glibc's
// aligned_alloc asks its bins for the size plus the alignment and more, so a freed block never
// serves the next request of the same size, and a buffer freed and made again every step (a
// ZeRO-2 bucket) grew the heap by its size each step, every new page faulted in.
void* device_alloc(size_t bytes) {
  keep_freed_memory();
  detail::rank_threads();  // settles the thread count before the first GEMM
  static_assert(kAlignment >= sizeof(void*) && kAlignment % alignof(std::max_align_t) == 0);
  // The slack holds the start pointer and the shift to the boundary; zero bytes still gets a
  // unique pointer.
  if (bytes > std::numeric_limits<size_t>::max() - kAlignment) throw std::bad_alloc();
  void* block = std::malloc(bytes + kAlignment);
  if (!block) throw std::bad_alloc();
  const auto start = reinterpret_cast<uintptr_t>(block);
  const uintptr_t aligned = (start + sizeof(void*) + kAlignment - 1) / kAlignment * kAlignment;
  reinterpret_cast<void**>(aligned)[-1] = block;
  return reinterpret_cast<void*>(aligned);
}

void device_free(void* p) {
  if (p) std::free(static_cast<void**>(p)[-1]);
}

void copy_to_device(void* dst, const void* host_src, size_t bytes) {
  parallel_memcpy(dst, host_src, bytes);
}

void copy_to_host(void* host_dst, const void* src, size_t bytes) {
  parallel_memcpy(host_dst, src, bytes);
}

// The CPU "device" is host memory: staging is plain memory, and a queued copy is done at once.
void* host_staging_alloc(size_t bytes) { return device_alloc(bytes); }
void host_staging_free(void* p) { device_free(p); }
void copy_to_device_queued(void* dst, const void* host_src, size_t bytes) {
  parallel_memcpy(dst, host_src, bytes);
}
void copy_to_host_queued(void* host_dst, const void* src, size_t bytes) {
  parallel_memcpy(host_dst, src, bytes);
}

void copy_on_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  mlps::detail::require_disjoint(dst, src, bytes, "copy_on_device", "source and destination");
  parallel_memcpy(dst, src, bytes);
}

void fill_zero(void* p, size_t bytes) {
  detail::parallel_chunks(static_cast<int64_t>(bytes), 1, 64, [&](int64_t b0, int64_t b1) {
    std::memset(static_cast<char*>(p) + b0, 0, static_cast<size_t>(b1 - b0));
  });
}

void synchronize() {}

}  // namespace mlps::cpu
