// What --offload optimizer --offload-to disk:DIR can move: the scratch file's sequential write
// and read, one kOffloadChunkBytes piece at a time (offload_write, offload_read), and Adam's
// update streaming its moments through OffloadedState as a run's update does, the next chunk read
// and the last written while one is updated (offload_adam). Through the file system, page cache
// included: a file much smaller than the memory is mostly served by it, as a run's would be.
#pragma once

#include <string>

#include "bench/support/kernel_bench_options.h"

namespace mlps::kernel_bench {

// offload_{write,read,adam}/disk/f32/mb:M in options.offload_dir (none without it), counter GB/s
// (bytes moved to and from the file over the time).
void register_offload_benchmarks(const KernelBenchOptions& options);

}  // namespace mlps::kernel_bench
