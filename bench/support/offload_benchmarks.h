// What --offload optimizer can move. To disk (--offload-to disk:DIR): the scratch file's
// sequential write and read, one kOffloadChunkBytes piece at a time (offload_write,
// offload_read), and Adam's update streaming its moments through OffloadedState as a run's update
// does, the next chunk read and the last written while one is updated (offload_adam). Past the
// page cache (O_DIRECT) where the file system allows it, as a run's file: the row's label says
// "O_DIRECT" or "page cache". Between a GPU and its host (--offload-to host): copies each way from
// pinned and pageable memory, and the GPU's update with its state on the host (offload_adam/host).
#pragma once

#include <string>

#include "bench/support/kernel_bench_options.h"
#include "src/device/device.h"

namespace mlps::kernel_bench {

// offload_{write,read,adam}/disk/f32/mb:M in options.offload_dir (none without it), counter GB/s
// (bytes moved to and from the file over the time).
void register_offload_benchmarks(const KernelBenchOptions& options);
// copy_to_device and copy_to_host /cuda/{pinned,pageable}/mb:M and offload_adam/host/cuda/f32/mb:M
// on a CUDA `device` (nothing on another), counter GB/s (bytes crossing the link over the time).
void register_host_offload_benchmarks(Device& device);

}  // namespace mlps::kernel_bench
