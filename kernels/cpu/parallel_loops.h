#pragma once
// How the CPU kernels use the rank's cores: one thread count for the whole rank (OpenBLAS's, so
// the element-wise kernels use the cores the GEMMs use), loops cut into contiguous chunks, and
// loop bodies compiled for several instruction sets with the best picked at load time, so one
// portable binary runs AVX-512 code where the node has it.
#include <omp.h>

#include <algorithm>
#include <cblas.h>
#include <cstdint>
#include <cstdlib>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// Results do not depend on the clone: the build turns floating-point contraction off, so every
// clone performs the same IEEE operations, only more of them per instruction.
#define MLPS_VECTOR_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define MLPS_VECTOR_CLONES
#endif

namespace mlps::cpu::detail {

// OpenBLAS's thread count (OPENBLAS_NUM_THREADS or OMP_NUM_THREADS, which the launch scripts
// set per rank; else every core), when OpenBLAS is its OpenMP build and so shares its pool with
// these loops. Beside its pthreads build the loops stay on the calling thread: two pools whose
// idle threads spin against each other made the tutorial step 1.6 times slower on 2 cores.
// The first call settles the count (the CPU backend makes it at its first allocation, before
// any GEMM): the OpenMP build reads OMP_NUM_THREADS but not OPENBLAS_NUM_THREADS, which users
// and scripts set per rank (OPENBLAS_NUM_THREADS=1 mpiexec -n 4 ...), so that one is applied.
inline int rank_threads() {
  static const bool shared_pool = [] {
    const bool openmp = openblas_get_parallel() == 2;  // 0 serial, 1 pthreads, 2 OpenMP
    const char* given = std::getenv("OPENBLAS_NUM_THREADS");
    if (openmp && given && std::atoi(given) > 0) openblas_set_num_threads(std::atoi(given));
    return openmp;
  }();
  return shared_pool ? std::max(1, openblas_get_num_threads()) : 1;
}

// Below this many elements per thread a kernel stays on the calling thread: waking the others
// costs more than the work.
inline constexpr int64_t kMinPerThread = int64_t{1} << 15;

// Calls body(begin, end) on disjoint chunks that cover [0, n) items of `item_size` elements
// each, one chunk per thread when there is enough work. An element's result depends only on its
// own operands (or on one row's, or one column's, walked in a fixed order), never on the chunk it
// falls in, so the thread count cannot change results. Chunk edges fall on multiples of `align`
// items. The body must not throw.
template <typename Body>
void parallel_chunks(int64_t n, int64_t item_size, int64_t align, Body&& body) {
  const int64_t most = std::max<int64_t>(1, n * item_size / kMinPerThread);
  const int threads = static_cast<int>(std::min<int64_t>(rank_threads(), most));
  if (threads <= 1) {
    if (n > 0) body(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    // The team may be smaller than asked for (OMP_THREAD_LIMIT); chunks follow its real size.
    const int64_t team = omp_get_num_threads(), me = omp_get_thread_num();
    const int64_t per = (n / team + align - 1) / align * align;
    const int64_t begin = std::min(n, per * me);
    const int64_t end = me == team - 1 ? n : std::min(n, begin + per);
    if (begin < end) body(begin, end);
  }
}

// n independent elements, chunks of whole 64-byte lines.
template <typename Body>
void parallel_elements(int64_t n, Body&& body) {
  parallel_chunks(n, 1, 16, body);
}

// Whole rows of a rows × cols matrix.
template <typename Body>
void parallel_rows(int64_t rows, int64_t cols, Body&& body) {
  parallel_chunks(rows, std::max<int64_t>(cols, 1), 1, body);
}

// Whole columns of a rows × cols matrix, chunks of whole lines of a row.
template <typename Body>
void parallel_columns(int64_t rows, int64_t cols, Body&& body) {
  parallel_chunks(cols, std::max<int64_t>(rows, 1), 16, body);
}

}  // namespace mlps::cpu::detail
