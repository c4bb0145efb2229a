// What a pipeline's later micro-batches pay to read their stage's weights again: one Linear's
// forward, input-gradient and weight-gradient GEMMs at the batch's rows, over one weight (it stays
// in cache where it fits) against the model's worth of distinct weights in turn (evicted between
// passes, as a stage's are between micro-batches). bin/plan --calibrate turns the difference into
// the description's weight_restream_bandwidth.
#pragma once

#include "bench/support/kernel_bench_options.h"
#include "bench/support/kernel_bench_registry.h"

namespace mlps::kernel_bench {

// How many distinct weights of the model's largest Linear make up the model's parameters (the
// node's working set of a two-stage pipeline: each rank holds half), at least 2.
int64_t restream_weight_sets(const ModelConfig& model);

template <typename T>
void register_weight_restream_benchmarks(Backend backend, const KernelBenchOptions& options);

}  // namespace mlps::kernel_bench
