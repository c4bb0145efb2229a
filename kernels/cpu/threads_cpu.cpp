// The CPU backend's thread count, for the start-up that shares a node's cores among its ranks.
#include <algorithm>

#include "kernels/cpu/parallel_loops.h"
#include "kernels/kernels.h"

namespace mlps::cpu {

int thread_count() { return detail::rank_threads(); }

void set_thread_count(int threads) { openblas_set_num_threads(std::max(1, threads)); }

}  // namespace mlps::cpu
