// What a rank's data loader costs: one rank's batch of synthetic training samples made on one
// thread (the prefetcher's), at the model's image size. bin/plan --calibrate turns it into the
// description's sample_load_seconds, which a step pays when every core already runs a rank.
#pragma once

#include "bench/support/kernel_bench_options.h"

namespace mlps::kernel_bench {

// sample_load/host/synthetic/image:S/rows:B, counter samples/s.
void register_sample_load_benchmark(const KernelBenchOptions& options);

}  // namespace mlps::kernel_bench
